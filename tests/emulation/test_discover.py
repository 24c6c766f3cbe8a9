"""The controller on networks it discovers: Mininet's own ``TreeTopo`` and
``LinearTopo`` (built by Mininet's classes, not ours), ``topology = discover``.

For each: the fabric becomes stable, ``pingall`` loses nothing (default forwarding
and proxy ARP from the discovered graph, ARP never flooded into the fabric), and a
small synthetic coflow workload completes every coflow under ``rapier`` and
``baseline``; rapier's emulated average CCT is within 15 % of the simulator run on
the topology the controller discovered (what ``GET /rapier/v1/topology/file`` saves).
And a controller given a declared topology that does not match the network says
``degraded`` on ``/health`` with the differences and schedules nothing on the
declared links that are not there.

Userspace Open vSwitch, 10 Mbit/s links shaped on the switch side, the network set up
as ``rapier-emulate`` sets it up (switch-port queues, fair queueing, TCP's minimum RTO).
"""

import pytest
from mininet.topo import LinearTopo
from mininet.topolib import TorusTopo, TreeTopo

from enforcement import client
from mininet_tests.emulate import DEFAULT_FAIR_QUEUE, DEFAULT_QUEUE_PACKETS, DEFAULT_RTO_MIN_MS
from mininet_tests.runner import REST_PREFIX, Emulation
from mininet_tests.workloads import DEFAULT_HEADROOM, HEADER_GOODPUT, assign_ports, scale_sizes
from rapier_app.workload_options import apply_goodput
from rapier_app.core import workload as wl
from rapier_app.scheduling import load_all, make_scheduler
from rapier_app.sim import Simulator
from topologies.topofile import loads_topology

LINK_MBPS = 10.0
#: controller options of every run: completions reported by the receivers, the
#: fabric stable after 2 s without change, no site broker: the simulator here runs
#: without background traffic (with the broker on, its default, rapier was +7.7 %
#: (tree) and +5.2 % (linear) off the simulator, one run each)
OPTS = {"stats_interval_s": 0.1, "stats_completion": "false", "discover_settle_s": 2.0,
        "broker": "false"}
#: the network as rapier-emulate sets it up (switch-port queues, fair queueing, RTO)
NETWORK = {"queue_packets": DEFAULT_QUEUE_PACKETS, "fair_queue": DEFAULT_FAIR_QUEUE,
           "rto_min_ms": DEFAULT_RTO_MIN_MS}


def _workload(topo):
    """6 coflows of width 3, 0.5 s apart, sizes 0.1-1 MB (uniform:10,100 MB x 0.01)."""
    coflows = wl.synthetic(topo, 6, 3, 0.5, "uniform:10,100", 1)
    return assign_ports(scale_sizes(coflows, 0.01))


def _simulate(saved_file, coflows, scheduler, goodput):
    """Simulated CCTs (s) on the topology file the controller saved."""
    load_all()
    topo = apply_goodput(loads_topology(saved_file, "saved"), goodput)
    return [float(x) for x in Simulator(topo, coflows, make_scheduler(scheduler, topo)).run().ccts]


def _run(mn_topo, scheduler, coflows=None):
    """One emulation of ``mn_topo`` under ``scheduler``; returns (pingall loss %,
    saved topology file view, coflows, emulated CCTs)."""
    enforce = scheduler != "baseline"
    opts = dict(OPTS, link_bps=LINK_MBPS * 1e6 * (DEFAULT_HEADROOM if enforce else 1.0))
    with Emulation("discover", scheduler=scheduler, bw_mbps=LINK_MBPS, enforce=enforce,
                   controller_opts=opts, mn_topo=mn_topo, **NETWORK) as em:
        st, health = client.request(em.rest, "GET", REST_PREFIX + "/health")
        assert st == 200 and health["fabric"] == "stable" and health["status"] == "ok", health
        loss = em.net.pingAll()  # as Mininet's CLI runs it (no -W)
        em.learn_definition()
        st, saved = client.request(em.rest, "GET", REST_PREFIX + "/topology/file")
        assert st == 200, saved
        view = saved["topology"]
        assert len(view["nodes"]) == len(em.net.hosts) + len(em.net.switches)
        assert loads_topology(saved["file"], "saved").to_dict() == view
        if coflows is None:
            coflows = _workload(em.definition)
        res = em.run_coflows(coflows, timeout_s=120)
        return loss, saved, coflows, res.ccts


@pytest.mark.parametrize("name, make", [
    ("tree-2-4", lambda: TreeTopo(depth=2, fanout=4)),
    ("linear-4-2", lambda: LinearTopo(4, 2)),
])
def test_discovered_fabric_pings_and_schedules(ovs, name, make):
    loss, saved, coflows, rapier = _run(make(), "rapier")
    assert loss == 0.0, f"{name}: pingall lost {loss} %"
    caps = {l["capacity_bps"] for l in saved["topology"]["links"]}
    assert caps == {LINK_MBPS * 1e6 * DEFAULT_HEADROOM}  # link_bps, not OVS's 10 Gbit/s
    sim = _simulate(saved["file"], coflows, "rapier", HEADER_GOODPUT)
    emu_avg, sim_avg = sum(rapier) / len(rapier), sum(sim) / len(sim)
    print(f"{name}: rapier emulated {emu_avg:.3f} s, simulated {sim_avg:.3f} s "
          f"({emu_avg / sim_avg - 1:+.1%}); CCTs {rapier} sim {sim}")
    assert len(rapier) == len(coflows)
    assert abs(emu_avg / sim_avg - 1) <= 0.15
    loss_b, _, _, baseline = _run(make(), "baseline", coflows)
    assert loss_b == 0.0 and len(baseline) == len(coflows)
    print(f"{name}: baseline emulated {sum(baseline) / len(baseline):.3f} s")


def test_torus_with_loops_pings_without_a_storm(ovs):
    """Mininet's ``TorusTopo(3, 3)``: 9 switches, 18 cables, loops everywhere (Mininet
    says it "WILL NOT WORK" without STP): every host reaches every other, and the
    controller saw every packet-in it had to (no flooding into the fabric)."""
    with Emulation("discover", scheduler="rapier", bw_mbps=LINK_MBPS,
                   controller_opts=dict(OPTS, link_bps=LINK_MBPS * 1e6),
                   mn_topo=TorusTopo(3, 3), **NETWORK) as em:
        assert em.net.pingAll() == 0.0
        em.learn_definition()
        g = em.definition.graph
        cables = {frozenset((u, v)) for u, v in g.edges
                  if not em.definition.is_host(u) and not em.definition.is_host(v)}
        assert len(em.definition.switches) == 9 and len(cables) == 18
        assert len(em.definition.hosts) == 9
        # a second round: every pair at once on the learnt fabric
        assert em.net.pingAll() == 0.0


def test_every_registered_scheduler_completes_on_a_discovered_fabric(ovs):
    """Every scheduler of the registry runs the workload to completion on
    ``LinearTopo(4, 2)`` discovered by the controller (CCTs not compared)."""
    load_all()
    from rapier_app.scheduling import REGISTRY

    coflows = None
    done = {}
    for name in sorted(REGISTRY):
        loss, _, coflows, ccts = _run(LinearTopo(4, 2), name, coflows)
        assert loss == 0.0 and len(ccts) == len(coflows), name
        done[name] = round(sum(ccts) / len(ccts), 3)
    print("average CCT (s) per scheduler on linear-4-2:", done)
    assert len(done) == len(REGISTRY) >= 10


class _ShortOfOneCable:
    """A Mininet ``Topo`` of ``spec`` (names, dpids, addresses and ports as declared)
    without the cable between the two nodes of ``skip``."""

    def __new__(cls, spec, skip):
        from mininet.topo import Topo

        from mininet_tests.topos import HOST_PREFIX_LEN, dpid_hex, link_order
        from topologies import build_topology

        class Topo_(Topo):
            def build(self):
                d = build_topology(spec)
                g = d.graph
                for h in d.hosts:
                    self.addHost(h, ip=f"{g.nodes[h]['ip']}/{HOST_PREFIX_LEN}",
                                 mac=g.nodes[h]["mac"])
                for s in d.switches:
                    self.addSwitch(s, dpid=dpid_hex(g.nodes[s]["dpid"]),
                                   protocols="OpenFlow13")
                for u, v, pu, pv in link_order(d):
                    if {u, v} != set(skip):
                        self.addLink(u, v, port1=pu, port2=pv)

        return Topo_()


def test_declared_topology_that_does_not_match_is_degraded_and_avoided(ovs):
    spec = "leafspine:2,2,2"  # spines s1 s2, leaves l1 l2 with h1 h2 / h3 h4
    from topologies import build_topology

    opts = dict(OPTS, link_bps=LINK_MBPS * 1e6 * DEFAULT_HEADROOM)
    with Emulation(spec, scheduler="rapier", bw_mbps=LINK_MBPS, controller_opts=opts,
                   mn_topo=_ShortOfOneCable(spec, ("l1", "s2")), **NETWORK) as em:
        st, health = client.request(em.rest, "GET", REST_PREFIX + "/health")
        assert st == 200 and health["status"] == "degraded", health
        assert any("l1" in m and "s2" in m and "not seen" in m
                   for m in health["differences"]), health
        assert health["links_missing"] == ["l1-s2"]
        assert em.net.pingAll() == 0.0
        em.definition = build_topology(spec, LINK_MBPS * 1e6)
        # two coflows across the leaves: every path avoids l1 - s2 (only s1 is left)
        coflows = assign_ports(scale_sizes(wl.synthetic(em.definition, 2, 2, 0.3,
                                                        "uniform:10,100", 3), 0.01))
        res = em.run_coflows(coflows, timeout_s=60)
        assert len(res.ccts) == 2
        used = set()
        for snap in res.schedule_timeline:
            for a in snap["allocations"].values():
                if a["path"]:
                    used |= set(zip(a["path"], a["path"][1:]))
        assert used and not used & {("l1", "s2"), ("s2", "l1")}, used
