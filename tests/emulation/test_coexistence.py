"""Coexistence on the emulated testbed (mininet_tests/coexist.py): an unregistered
iperf3 TCP flow h1 -> h6 paced at 30 % of a link runs through the coflows' links.
With the site broker on (broker = true) the flow keeps its rate while
the coflows run, the coflows finish as the simulator told the same background
says, and a coflow below the size threshold goes at once on ECMP.  About 35 s."""

from mininet_tests.coexist import run_coexistence


def test_broker_keeps_the_unregistered_flow_and_the_plan(ovs):
    r = run_coexistence(broker=True, paced_mbps=3.0)
    print({k: v for k, v in r.items() if k != "workdir"})
    # the broker saw the iperf3 flow on the four links of its path (3 Mbit/s of
    # payload, about 3.14 on the wire)
    assert len(r["predictions_bps"]) == 4, r["predictions_bps"]
    assert all(2.7e6 < p < 3.6e6 for p in r["predictions_bps"].values())
    # the unregistered flow keeps at least 90 % of its paced rate during the coflows
    assert r["iperf_during_bps"] >= 0.9 * r["paced_bps"], r
    # the scheduled coflows: within 15 % of the simulator told the same background,
    # on average, and each with the simulator's model of the emulated controller's
    # hand-off (0.15 s; docs/emulation.md)
    ids = r["coflow_ids"]
    assert ids[-1] == "small" and r["decisions"] == ["scheduled"] * 3 + ["background"]
    emu, sim = sum(r["ccts_s"][:3]) / 3, sum(r["sim_bg_ccts_s"]) / 3
    assert abs(emu - sim) <= 0.15 * sim, (r["ccts_s"], r["sim_bg_ccts_s"])
    for e, s in zip(r["ccts_s"][:3], r["sim_bg_handoff_ccts_s"]):
        assert abs(e - s) <= 0.15 * s, (r["ccts_s"], r["sim_bg_handoff_ccts_s"])
    # the background made them slower than alone: the simulator's plan changed
    assert r["sim_bg_ccts_s"][2] > 1.2 * r["sim_ccts_s"][2]
    # the small coflow: admitted at once (no decision to wait for), finished on ECMP
    assert r["small_decided_s"] < 0.1 and r["small_cct_s"] < 0.5
