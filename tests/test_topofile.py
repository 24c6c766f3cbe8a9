"""Topology files (topologies/topofile.py): read, write, validate, rapier-topology.

Every malformed file gets a TopologyError naming the file, the line, the element and
the field; generated fabrics survive the file round trip exactly."""

import os
import textwrap

import pytest

from rapier_app.errors import RapierError
from rapier_app.topology_cli import main as topology_main
from topologies import (TopologyError, build_topology, dump_topology, load_topology,
                        loads_topology)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GOOD = textwrap.dedent("""\
    name: tri
    switches:
      s1: {dpid: 1}
      s2: {dpid: 0x2, role: leaf}
      s3: {dpid: 3}
    hosts:
      h1: {ip: 10.1.0.1, mac: 00:00:00:00:01:01, switch: s1, port: 1, capacity_bps: 10e6}
      h2: {ip: 192.168.7.2, mac: "02:00:00:00:00:02", switch: s2, port: 5, capacity_bps: 10M}
      h3:
        ip: 10.1.0.3
        mac: 02-00-00-00-00-03
        interfaces:
          - {switch: s3, port: 1, capacity_bps: 10000000}
          - {switch: s1, port: 4, capacity_bps: "10 Mbit/s"}
    links:
      - {a: s1, a_port: 2, b: s2, b_port: 1, capacity_bps: 20e6}
      - {a: s2, a_port: 2, b: s3, b_port: 7, capacity_bps: 20e6}
      - {a: s3, a_port: 3, b: s1, b_port: 3, capacity_bps: 10e6}
    """)


def _sig(t):
    g = t.graph
    return (sorted(g.nodes(data=True)),
            sorted((u, v, tuple(sorted(d.items()))) for u, v, d in g.edges(data=True)),
            t.hosts, t.switches, t.links, list(t.capacity), t.path_slack)


def test_good_file_gives_the_declared_graph():
    t = loads_topology(GOOD, "tri.yaml")
    g = t.graph
    assert t.name == "tri" and t.switches == ["s1", "s2", "s3"] and t.hosts == ["h1", "h2", "h3"]
    assert g.nodes["s2"] == {"role": "leaf", "dpid": 2}
    assert g.nodes["h2"]["ip"] == "192.168.7.2" and g.nodes["h2"]["mac"] == "02:00:00:00:00:02"
    assert g.nodes["h3"]["mac"] == "02:00:00:00:00:03"  # normalised
    assert g.nodes["h1"]["mac"] == "00:00:00:00:01:01"  # unquoted: a string, not base 60
    # explicit ports on both ends, hosts' interfaces numbered in their order
    assert (g.edges["s2", "h2"]["port"], g.edges["h2", "s2"]["port"]) == (5, 1)
    assert (g.edges["s3", "s2"]["port"], g.edges["s2", "s3"]["port"]) == (7, 2)
    assert g.edges["h3", "s3"]["port"] == 1 and g.edges["h3", "s1"]["port"] == 2
    assert g.edges["s1", "h3"]["port"] == 4
    # capacities in bit/s, two speeds
    assert g.edges["s1", "s2"]["capacity_bps"] == 20e6 == g.edges["s2", "s1"]["capacity_bps"]
    assert g.edges["h3", "s1"]["capacity_bps"] == 10e6
    assert t.attachment("h2") == ("s2", 5)
    assert t.host_by_ip("192.168.7.2") == "h2"


@pytest.mark.parametrize("spec", ["fattree:4", "vl2:4,4,2", "leafspine:3,3,3", "fig1",
                                  "bigswitch:5"])
def test_generated_fabric_round_trip(spec, tmp_path):
    a = build_topology(spec)
    path = tmp_path / "t.yaml"
    assert topology_main(["export", spec, "-o", str(path)]) == 0
    b = build_topology(f"file:{path}")
    assert _sig(a) == _sig(b) and b.name == spec
    # and the candidate paths are the same
    for s, d in [(a.hosts[0], a.hosts[-1]), (a.hosts[-1], a.hosts[1])]:
        assert a.candidate_paths(s, d) == b.candidate_paths(s, d)
    assert dump_topology(b) == dump_topology(a)


def test_fattree4_file_reads_back_field_by_field(tmp_path):
    path = tmp_path / "ft.yaml"
    assert topology_main(["export", "fattree:4", "-o", str(path)]) == 0
    a, b = build_topology("fattree:4"), load_topology(str(path))
    assert len(b.hosts) == 16 and len(b.switches) == 20 and b.graph.number_of_edges() == 96
    for n in a.graph.nodes:
        assert b.graph.nodes[n] == a.graph.nodes[n]  # roles, dpids, IPs, MACs, indices
    for u, v, d in a.graph.edges(data=True):
        assert b.graph.edges[u, v] == d  # ports both ends, capacity


def test_link_bps_scales_a_file_in_proportion(tmp_path):
    p = tmp_path / "tri.yaml"
    p.write_text(GOOD)
    t = build_topology(f"file:{p}", 1e9)  # host links 10 Mbit/s -> 1 Gbit/s: x100
    assert t.graph.edges["h1", "s1"]["capacity_bps"] == 1e9
    assert t.graph.edges["s1", "s2"]["capacity_bps"] == pytest.approx(2e9)


def test_check_command(tmp_path, capsys):
    p = tmp_path / "tri.yaml"
    p.write_text(GOOD)
    assert topology_main(["check", str(p)]) == 0
    out = capsys.readouterr().out
    assert "3 switches, 3 hosts, 7 links (5 x 10 Mbit/s, 2 x 20 Mbit/s)" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("dpid: 3", "dpid: 1"))
    assert topology_main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:5: switch s3: dpid: duplicate dpid 1" in err
    assert topology_main(["check", str(tmp_path / "none.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_export_to_stdout_and_bad_spec(capsys):
    assert topology_main(["export", "leafspine:2,2,1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# RAPIER topology file") and "l1: {dpid: 3, role: leaf}" in out
    assert _sig(loads_topology(out)) == _sig(build_topology("leafspine:2,2,1"))
    assert topology_main(["export", "ring:4"]) == 2
    assert "unknown kind 'ring'" in capsys.readouterr().err


def test_example_files_validate():
    d = os.path.join(ROOT, "configs", "topologies")
    names = sorted(f for f in os.listdir(d) if f.endswith(".yaml"))
    assert names
    for f in names:
        t = load_topology(os.path.join(d, f))
        assert t.hosts and t.switches


# (description, edit of GOOD (old, new) or whole text, line, element, field, problem)
BAD = [
    ("yaml does not parse", ("  s3: {dpid: 3}", "  s3: {dpid: 3"), 6, "yaml", None,
     "does not parse"),
    ("duplicate dpid", ("s3: {dpid: 3}", "s3: {dpid: 2}"), 5, "switch s3", "dpid",
     "duplicate dpid 2 (also switch s2)"),
    ("duplicate switch name", ("  s3: {dpid: 3}", "  s3: {dpid: 3}\n  s2: {dpid: 4}"), 6,
     "s2", "name", "duplicate key 's2' (also on line 4)"),
    ("host named like a switch", ("  h2: {ip", "  s1: {ip"), 8, "host s1", "name",
     "duplicate name: s1 is also a switch"),
    ("link to an unknown node", ("b: s3, b_port: 7", "b: s9, b_port: 7"), 17,
     "link 2 (s2-s9)", "b", "unknown switch 's9'"),
    ("link to a host", ("{a: s1, a_port: 2, b: s2", "{a: s1, a_port: 2, b: h2"), 16,
     "link 1 (s1-h2)", "b", "a host, not a switch 'h2'"),
    ("port used twice", ("a: s3, a_port: 3", "a: s3, a_port: 1"), 18, "link 3 (s3-s1)",
     "a_port", "port 1 of switch s3 is used twice (also by host h3"),
    ("port not a number", ("b_port: 7", "b_port: seven"), 17, "link 2 (s2-s3)", "b_port",
     "must be an integer port number"),
    ("capacity not positive", ("b_port: 7, capacity_bps: 20e6", "b_port: 7, capacity_bps: -5"),
     17, "link 2 (s2-s3)", "capacity_bps", "must be a positive number of bit/s, got -5"),
    ("capacity not a number", ("capacity_bps: 10M}", "capacity_bps: fast}"), 8, "host h2",
     "capacity_bps", "must be a positive number of bit/s (e.g. 10e6, 10M), got 'fast'"),
    ("host with no switch", ("switch: s2, port: 5, ", ""), 8, "host h2", "switch",
     "missing: a host hangs on a switch"),
    ("interface with no switch", ("- {switch: s3, port: 1,", "- {port: 1,"), 13,
     "host h3 interface 1", "switch", "missing (required)"),
    ("hosts cannot reach each other",
     ("  - {a: s1, a_port: 2, b: s2, b_port: 1, capacity_bps: 20e6}\n"
      "  - {a: s2, a_port: 2, b: s3, b_port: 7, capacity_bps: 20e6}\n", ""), 15, "fabric",
     "links", "hosts h1 and h2 cannot reach each other"),
    ("missing required field", ("s1: {dpid: 1}", "s1: {role: leaf}"), 3, "switch s1", "dpid",
     "missing (required)"),
    ("missing section", ("links:\n", "linkz:\n"), 15, "file", "linkz", "unknown key"),
    ("unknown key", ("s2: {dpid: 0x2, role: leaf}", "s2: {dpid: 0x2, rol: leaf}"), 4,
     "switch s2", "rol", "unknown key (known: dpid, role)"),
    ("bad ip", ("ip: 10.1.0.1,", "ip: 10.1.0.256,"), 7, "host h1", "ip",
     "must be an IPv4 address (dotted quad), got '10.1.0.256'"),
    ("duplicate ip", ("ip: 192.168.7.2", "ip: 10.1.0.1"), 8, "host h2", "ip",
     "duplicate IP 10.1.0.1 (also host h1)"),
    ("bad mac", ("mac: 00:00:00:00:01:01", "mac: 00:00:00:00:01"), 7, "host h1", "mac",
     "must be a MAC address like 00:00:00:00:00:01, got '00:00:00:00:01'"),
    ("duplicate mac", ('"02:00:00:00:00:02"', "00:00:00:00:01:01"), 8, "host h2", "mac",
     "duplicate MAC 00:00:00:00:01:01 (also host h1)"),
    ("dpid zero", ("s1: {dpid: 1}", "s1: {dpid: 0}"), 3, "switch s1", "dpid",
     "must be an integer in 1..2^64-1, got 0"),
    ("unknown role", ("role: leaf", "role: router"), 4, "switch s2", "role",
     "unknown role 'router'"),
    ("parallel link", ("a: s3, a_port: 3, b: s1, b_port: 3", "a: s2, a_port: 3, b: s1, b_port: 3"),
     18, "link 3 (s2-s1)", "b", "parallel link between s2 and s1 (also on line 16"),
    ("self loop", ("a: s3, a_port: 3, b: s1", "a: s3, a_port: 3, b: s3"), 18,
     "link 3 (s3-s3)", "b", "a link from s3 to itself"),
    ("link capacity missing", ("b_port: 3, capacity_bps: 10e6}", "b_port: 3}"), 18, "link 3 (s3-s1)",
     "capacity_bps", "missing (required, or give default_capacity_bps)"),
    ("both switch and interfaces", ("    ip: 10.1.0.3\n", "    ip: 10.1.0.3\n    switch: s3\n"),
     11, "host h3", "switch", "give either switch/port/capacity_bps or interfaces"),
    ("switch name a number", ("  s3: {dpid: 3}", "  3: {dpid: 3}"), 5, "switch 3", "name",
     "must be a non-empty string"),
    ("not a mapping", None, 1, "file", "-", "must be a mapping with switches, hosts and links"),
    ("path slack negative", ("name: tri", "name: tri\npath_slack: -1"), 2, "file",
     "path_slack", "must be an integer number of hops >= 0, got -1"),
]


@pytest.mark.parametrize("what, edit, line, element, field, problem", BAD,
                         ids=[b[0] for b in BAD])
def test_malformed_files_name_file_line_element_and_field(tmp_path, what, edit, line,
                                                          element, field, problem):
    if edit is None:
        text = "- just\n- a list\n"
    else:
        assert GOOD.count(edit[0]) == 1, edit[0]
        text = GOOD.replace(*edit)
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TopologyError) as exc:
        build_topology(f"file:{path}")
    msg = str(exc.value)
    want = f"{path}:{line}: {element}: " + (f"{field}: " if field else "")
    assert msg.startswith(want), msg
    assert problem in msg, msg
    assert isinstance(exc.value, RapierError) and isinstance(exc.value, ValueError)
    if field and element != "yaml" and what != "duplicate switch name":
        assert (exc.value.file, exc.value.line, exc.value.element, exc.value.field) == \
            (str(path), line, element, field)


def test_good_text_itself_loads_so_each_bad_case_breaks_one_thing():
    # the base of every malformed case is valid: each failure above is its edit's
    t = loads_topology(GOOD, "tri.yaml")
    assert len(t.links) == 14


def test_default_capacity_and_path_slack_keys():
    text = GOOD.replace("name: tri", "name: tri\ndefault_capacity_bps: 1G\npath_slack: 1")
    text = text.replace(", capacity_bps: 10e6}\n", "}\n")
    t = loads_topology(text)
    assert t.path_slack == 1
    assert t.graph.edges["s3", "s1"]["capacity_bps"] == 1e9
    assert t.graph.edges["h1", "s1"]["capacity_bps"] == 1e9
    # written back with its slack
    assert "path_slack: 1" in dump_topology(t)
    assert loads_topology(dump_topology(t)).path_slack == 1
