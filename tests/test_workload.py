"""Workloads: the Facebook trace, bad trace lines, the synthetic generator, scenarios."""


import pytest

from trace_file import fb_trace  # noqa: E402

from rapier_app.core.model import WorkloadError
from rapier_app.core.workload import (port_mapping, read_trace, scenario, size_sampler,
                                      synthetic, trace_to_coflows)
from topologies import build_topology


def test_facebook_trace_loads_with_the_bytes_the_format_implies():
    tr = read_trace(fb_trace())
    assert tr.ports == 150 and len(tr.coflows) == 526
    topo = build_topology("bigswitch:150")
    cfs = trace_to_coflows(tr, port_mapping(tr.ports, topo))
    assert len(cfs) == 526
    assert sum(c.width for c in cfs) == 706397  # sum over coflows of mappers x reducers
    # Independent recount straight from the text: per reducer MB * 2^20 split over the
    # mappers, each flow at least 1 MiB.
    expected = 0.0
    with open(fb_trace()) as fh:
        next(fh)
        for line in fh:
            t = line.split()
            m = int(t[2])
            for item in t[4 + m:]:
                expected += max(float(item.split(":")[1]) * 2 ** 20 / m, 2 ** 20) * m
    assert sum(c.total_bytes for c in cfs) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(37259610947584.0)
    assert tr.total_bytes == pytest.approx(expected, rel=1e-12)
    # first coflow: 1 mapper on port 22, reducer 65 gets 1 MB; arrival 0 ms
    first = cfs[0]
    assert first.arrival_s == 0 and first.width == 1
    assert first.flows[0].src == "h23" and first.flows[0].dst == "h66"
    assert first.flows[0].size_bytes == 2 ** 20


def test_placement_on_fat_tree_is_seeded_and_injective():
    topo = build_topology("fattree:10")
    m1 = port_mapping(150, topo, seed=3)
    assert len(set(m1.values())) == 150
    assert m1 == port_mapping(150, topo, seed=3)
    assert m1 != port_mapping(150, topo, seed=4)
    with pytest.raises(WorkloadError, match="needs 150"):
        port_mapping(150, build_topology("fattree:8"))


@pytest.mark.parametrize("line,msg", [
    ("1 0 1 22 1 65", "expected 'port:MB'"),
    ("1 0 1 22 1 65:x", "reducer MB: not a number"),
    ("1 0 1 222 1 65:1", "mapper port: port 222 outside"),
    ("1 zero 1 22 1 65:1", "arrival ms"),
    ("1 0 2 22", "line ends early"),
    ("1 0 1 22 1 65:1 7", "extra fields"),
    ("1 0 1 22 1 65:-1", "must be positive"),
])
def test_bad_trace_line_names_line_and_field(tmp_path, line, msg):
    p = tmp_path / "t.txt"
    p.write_text("150 2\n2 5 1 3 1 4:1.0\n" + line + "\n")
    with pytest.raises(WorkloadError, match=msg) as ei:
        read_trace(str(p))
    assert f"{p}:3" in str(ei.value)


def test_trace_header_mismatch(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("150 3\n1 0 1 22 1 65:1.0\n")
    with pytest.raises(WorkloadError, match="announces 3 coflows"):
        read_trace(str(p))
    with pytest.raises(WorkloadError, match="cannot read"):
        read_trace(str(tmp_path / "missing.txt"))


def test_synthetic_is_seeded_many_to_many_with_poisson_arrivals():
    topo = build_topology("fattree:8,16")
    a = synthetic(topo, 200, 16, 0.5, "uniform:10,100", seed=7)
    assert a == synthetic(topo, 200, 16, 0.5, "uniform:10,100", seed=7)
    assert a != synthetic(topo, 200, 16, 0.5, "uniform:10,100", seed=8)
    assert all(c.width == 16 for c in a)
    gaps = [y.arrival_s - x.arrival_s for x, y in zip(a, a[1:])]
    assert 0.4 < sum(gaps) / len(gaps) < 0.6  # mean 0.5 s (199 exponential gaps)
    c = a[0]
    assert len({f.src for f in c.flows}) == 4 and len({f.dst for f in c.flows}) <= 5
    sizes = [f.size_bytes for c in a for f in c.flows]
    assert 10e6 <= min(sizes) and max(sizes) <= 100e6
    assert all(x.arrival_s == 0 for x in synthetic(topo, 5, 4, 0.0, seed=1))


def test_synthetic_bad_input():
    topo = build_topology("fattree:4")
    with pytest.raises(WorkloadError, match="width"):
        synthetic(topo, 2, 0, 0.1)
    with pytest.raises(WorkloadError, match="sizes"):
        size_sampler("normal:3")


def test_testbed_scenario_is_table_ii():
    topo, cfs = scenario("testbed")
    assert topo.name == "leafspine:3,3,3"
    assert [c.width for c in cfs] == [3, 2, 2]
    f = {x.flow_id: x for c in cfs for x in c.flows}
    assert (f["3/6"].src, f["3/6"].dst, f["3/6"].size_bytes) == ("h7", "h4", 17.9e9)
    assert [x.dst_port for c in cfs for x in c.flows] == list(range(5001, 5008))
    with pytest.raises(WorkloadError, match="scenario"):
        scenario("nope")
