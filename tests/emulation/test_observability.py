"""The controller watched as an operator would, during one emulation (leafspine:3,3,3
at 20 Mbit/s, 5 coflows of 2-3 flows, 3-8 MB each, about 10 s of transfers):

(a) ``GET /metrics`` parsed with ``prometheus_client``'s parser twice a second:
    the counters move as coflows arrive and finish, and at the end the CCT
    histogram's count is the number of coflows done and its sum the sum of the CCTs
    ``GET /coflows`` reports;
(b) a real Prometheus (Debian's binary, its own port, config and storage) scrapes
    the controller every second; a query over its HTTP API returns the coflows done;
(c) headless Chromium (Debian's, driven by Selenium through the system chromedriver)
    shows the dashboard: every switch of the topology, every live coflow, progress
    bars that advance between readings, the CCT CDF of the finished ones; the
    screenshot is kept (pytest's tmp dir, and ``$RAPIER_ARTEFACTS`` when set).
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from enforcement import client
from mininet_tests import observe
from mininet_tests.runner import Emulation
from rapier_app.core.model import CoflowSpec, FlowSpec

MB = 1_000_000
#: (id, arrival s, [(src, dst, MB)]); (dst, port) unique
WORKLOAD = [
    ("a", 0.0, [("h1", "h4", 3), ("h2", "h5", 3)]),
    ("b", 0.3, [("h3", "h6", 8), ("h4", "h7", 6)]),
    ("c", 0.6, [("h5", "h8", 6), ("h6", "h9", 8)]),
    ("d", 0.9, [("h7", "h1", 6), ("h8", "h2", 4), ("h9", "h3", 6)]),
    ("e", 1.2, [("h1", "h9", 5)]),
]
READ_EVERY_S = 0.5


def coflows():
    out, port = [], 5400
    for cid, t, flows in WORKLOAD:
        specs = []
        for n, (s, d, mb) in enumerate(flows):
            port += 1
            specs.append(FlowSpec(f"{cid}/{n}", cid, s, d, mb * MB, port))
        out.append(CoflowSpec(cid, t, tuple(specs)))
    return out


def scrape(base):
    """``GET /metrics`` parsed: {(sample name, sorted labels): value}."""
    with urllib.request.urlopen(base + "/metrics", timeout=5) as resp:
        assert resp.status == 200
        text = resp.read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def val(m, name, **labels):
    return m.get((name, tuple(sorted(labels.items()))), 0.0)


def link_sched(m):
    return sum(v for (n, _), v in m.items() if n == "rapier_link_scheduled_bps")


class Observer(threading.Thread):
    """Reads ``/metrics``, ``GET /coflows?state=active`` and the dashboard's DOM every
    :data:`READ_EVERY_S` while the coflows run; keeps a screenshot of the reading
    with the most coflows part-way through."""

    def __init__(self, base, driver, shot):
        super().__init__(daemon=True)
        self.base, self.driver, self.shot = base, driver, shot
        self.scrapes, self.readings, self.errors = [], [], []
        self.best = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.scrapes.append(scrape(self.base))
                r = observe.read_dashboard(self.driver)
                st, page = client.request(self.base, "GET",
                                          "/rapier/v1/coflows?state=active", timeout=5)
                r["rest_active"] = sorted(c["id"] for c in page["coflows"])
                self.readings.append(r)
                mid = sum(1 for row in r["rows"].values() if 0.05 < row["progress"] < 0.95)
                if mid > self.best and r["cdf_points"] > 0:
                    self.best = mid
                    self.driver.save_screenshot(self.shot)
            except Exception as exc:  # noqa: BLE001 -- reported by the test
                self.errors.append(repr(exc))
            self.stop.wait(READ_EVERY_S)


def test_metrics_prometheus_and_dashboard_during_an_emulation(ovs, tmp_path):
    specs = coflows()
    ids = [c.coflow_id for c in specs]
    shot = str(tmp_path / "dashboard.png")
    driver = None
    with Emulation("leafspine:3,3,3", scheduler="rapier", bw_mbps=20.0) as em:
        switches = sorted(em.definition.switches)
        with observe.Prometheus([f"127.0.0.1:{em.rest_port}"], str(tmp_path / "prom"),
                                interval_s=1.0) as prom:
            try:
                driver = observe.chromium()
                driver.get(em.rest + observe.DASHBOARD)
                deadline = time.time() + 20
                while time.time() < deadline:
                    first = observe.read_dashboard(driver)
                    if first["updated"] is not None and first["switches"]:
                        break
                    time.sleep(0.2)
                m0 = scrape(em.rest)
                obs = Observer(em.rest, driver, shot)
                obs.start()
                try:
                    res = em.run_coflows(specs, timeout_s=90)
                    time.sleep(2.5)  # the page's next polls, Prometheus's next scrapes
                finally:
                    obs.stop.set()
                    obs.join(10)
                last = observe.read_dashboard(driver)
                m1 = scrape(em.rest)
                st, done = client.request(em.rest, "GET", "/rapier/v1/coflows?state=done",
                                          timeout=5)
                assert st == 200
                # (b) Prometheus: up, and its query gives the coflows done
                got = None
                deadline = time.time() + 10
                while time.time() < deadline:
                    r = prom.query("rapier_coflow_completion_seconds_count")
                    got = [float(x["value"][1]) for x in r]
                    if got == [float(len(ids))]:
                        break
                    time.sleep(0.5)
                health = prom.targets_health()
                peak = prom.query('max_over_time(rapier_coflows{state="active"}[5m])')
                prom_done = prom.query('rapier_coflows{state="done"}')
            finally:
                if driver is not None:
                    driver.quit()
    observe.keep_artefact(shot) if os.path.exists(shot) else None
    print(json.dumps({"scrapes": len(obs.scrapes), "readings": len(obs.readings),
                      "ccts": res.ccts, "prometheus": got, "screenshot": shot}))
    assert obs.errors == [], obs.errors[:3]
    assert len(obs.scrapes) >= 8 and len(obs.readings) >= 8, (len(obs.scrapes),
                                                               len(obs.readings))

    # (a) the counters move as coflows arrive and finish ...
    known = [sum(val(m, "rapier_coflows", state=s) for s in ("active", "done", "cancelled"))
             for m in [m0] + obs.scrapes + [m1]]
    done_seq = [val(m, "rapier_coflows", state="done") for m in [m0] + obs.scrapes + [m1]]
    cct_seq = [val(m, "rapier_coflow_completion_seconds_count") for m in [m0] + obs.scrapes + [m1]]
    dec_seq = [val(m, "rapier_decision_seconds_count") for m in [m0] + obs.scrapes + [m1]]
    for seq in (known, done_seq, cct_seq, dec_seq):
        assert seq == sorted(seq), seq  # never backwards
    # none before; then run_coflows's warm-up coflow (cancelled at once) and ours
    assert known[0] == 0 and known[-1] == 1 + len(ids), known
    assert val(m1, "rapier_coflows", state="cancelled") == 1
    assert done_seq[0] == 0 and cct_seq[0] == 0, (done_seq, cct_seq)
    assert any(val(m, "rapier_coflows", state="active") >= 2 for m in obs.scrapes)
    assert any(0 < c < len(ids) for c in cct_seq), cct_seq  # some finished, some not yet
    assert dec_seq[-1] > dec_seq[0]
    assert any(link_sched(m) > 0 for m in obs.scrapes) and link_sched(m1) == 0
    assert val(m1, "rapier_agent_pushes_total") > val(m0, "rapier_agent_pushes_total")
    # ... and at the end the CCT histogram is the coflows done and their CCTs
    ccts = {c["id"]: c["cct_s"] for c in done["coflows"]}
    assert sorted(ccts) == sorted(ids), ccts
    assert val(m1, "rapier_coflows", state="done") == len(ids)
    assert val(m1, "rapier_coflows", state="active") == 0
    assert val(m1, "rapier_coflow_completion_seconds_count") == len(ids)
    assert abs(val(m1, "rapier_coflow_completion_seconds_sum") - sum(ccts.values())) < 1e-6
    assert val(m1, "rapier_coflow_completion_seconds_bucket", le="+Inf") == len(ids)

    # (b) Prometheus scraped the controller during the run and counts the coflows done
    assert health == ["up"], health
    assert got == [float(len(ids))], got
    assert [float(x["value"][1]) for x in prom_done] == [float(len(ids))], prom_done
    assert peak and float(peak[0]["value"][1]) >= 2, peak

    # (c) the dashboard: every switch, every live coflow, bars advancing, the CDF
    assert sorted(first["switches"]) == switches, first["switches"]
    assert sorted(first["hosts"]) == sorted(em.definition.hosts)
    shown = set()
    for r in obs.readings:
        assert sorted(r["switches"]) == switches
        shown |= set(r["rows"])
    assert shown - {"warmup"} == set(ids), shown
    # at some reading the table lists exactly the coflows REST calls active (>= 2)
    assert any(sorted(r["rows"]) == r["rest_active"] and len(r["rest_active"]) >= 2
               for r in obs.readings), [(sorted(r["rows"]), r["rest_active"])
                                        for r in obs.readings]
    advanced = set()
    for cid in ids:
        seq = [r["rows"][cid]["progress"] for r in obs.readings if cid in r["rows"]]
        assert seq == sorted(seq), (cid, seq)  # a bar never goes back
        if len(seq) >= 2 and seq[-1] > seq[0]:
            advanced.add(cid)
        for r in obs.readings:
            if cid in r["rows"]:
                row = r["rows"][cid]
                assert row["bar"].endswith("%"), row  # the bar is drawn at the progress
                assert abs(float(row["bar"][:-1]) - 100 * row["progress"]) <= 0.051, row
    assert len(advanced) >= 3, advanced
    assert any(v["util"] > 0 for r in obs.readings for v in r["links"].values())
    assert last["rows"] == {} and last["cdf_points"] == len(ids), last
    assert os.path.getsize(shot) > 10_000
    assert max(res.ccts) < 60
