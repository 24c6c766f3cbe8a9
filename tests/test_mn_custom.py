"""``mn --custom mininet_tests/topos.py``: the ``--topo`` strings Mininet passes
(issue 15: ``spec,leafspine:2,2,2`` raised a TypeError; ``bw`` from the command line;
no shadowing of Mininet's own controller names).  Parsed by Mininet's own
``buildTopo``, as ``mn`` does; no root needed."""

import pytest
from mininet.link import TCLink
from mininet.util import buildTopo

from mininet_tests.topos import controllers, switches, topos
from topologies import TopologyError


@pytest.mark.parametrize("arg, hosts, switch_count, links", [
    # leafspine:2,2,2: 2 leaves x 2 hosts = 4 hosts; 2 leaves + 2 spines; 4 host links
    # + 2 x 2 leaf-spine links = 8
    ("spec,leafspine:2,2,2", 4, 4, 8),
    ("spec,fattree:4", 16, 20, 48),
    ("spec,vl2:4,4,2", 8, 10, 24),
    ("leafspine,2,2,2", 4, 4, 8),
    ("leafspine", 9, 6, 18),           # default 3,3,3: 9 hosts, 9 + 9 links
    ("fattree", 16, 20, 48),
    ("vl2,4,4,2", 8, 10, 24),
])
def test_topo_strings(arg, hosts, switch_count, links):
    t = buildTopo(topos, arg)
    assert (len(t.hosts()), len(t.switches()), len(t.links())) == (hosts, switch_count, links)
    assert all("cls" not in t.linkInfo(u, v) for u, v in t.links())  # no bw: no TCLink


def test_topology_file_is_built_at_its_own_speeds():
    # a topology file (docs/topology.md): 6 hosts, 4 switches, 6 host links + 5 links;
    # shaped by default at the file's speeds (10 and 20 Mbit/s)
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "configs", "topologies", "ring-two-speeds.yaml")
    t = buildTopo(topos, f"file,{path}")
    assert (len(t.hosts()), len(t.switches()), len(t.links())) == (6, 4, 11)
    speeds = sorted({i["params" + e].get("bw") for _, _, i in t.links(withInfo=True)
                     for e in ("1", "2") if not i["node" + e].startswith("h")})
    assert all(i["cls"] is TCLink for _, _, i in t.links(withInfo=True))
    assert speeds == [10.0, 20.0]


def test_bw_from_the_command_line_shapes_switch_sides_with_tclink():
    t = buildTopo(topos, "spec,leafspine:2,2,2,bw=1")
    assert len(t.links()) == 8
    for u, v, info in t.links(withInfo=True):
        assert info["cls"] is TCLink
        for end in ("1", "2"):
            want = {} if info["node" + end].startswith("h") else {"bw": 1.0}
            assert info["params" + end] == want
    t = buildTopo(topos, "fattree,4,bw=2.5")
    ends = [(i["node" + e], i["params" + e].get("bw")) for _, _, i in t.links(withInfo=True)
            for e in ("1", "2")]
    assert {bw for n, bw in ends if not n.startswith("h")} == {2.5}
    assert {bw for n, bw in ends if n.startswith("h")} == {None}


@pytest.mark.parametrize("arg, message", [
    ("spec,leafspine:2,2,2,bw=0", "bw: must be a positive number"),
    ("spec,leafspine:2,2,2,bw=fast", "bw: must be a positive number"),
    ("leafspine,2,2,2,speed=1", "speed: unknown --topo option"),
    ("spec,ring:4", "unknown kind 'ring'"),
    ("leafspine,2,2", "leafspine takes 3..3"),
    ("file", "file: missing its path"),
    ("file,/nonexistent/topo.yaml", "/nonexistent/topo.yaml: file: cannot read"),
])
def test_bad_topo_strings_name_the_field(arg, message):
    with pytest.raises(TopologyError, match=message):
        buildTopo(topos, arg)


def test_controller_names_do_not_shadow_mininets():
    from mininet.node import Ryu
    from mininet.util import customClass  # noqa: F401 -- mn's loader of these dicts
    assert set(controllers) == {"rapier"} and "ryu" not in controllers
    assert controllers["rapier"] is not Ryu and set(switches) == {"ovsuser"}
