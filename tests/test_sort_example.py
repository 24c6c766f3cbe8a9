"""``examples/sort/sort.py``: the client adds nine lines, the sort works without them,
and with them every mapper connection is registered with its 5-tuple and size and
reported done (the controller in-process over real HTTP on loopback: mappers on
127.0.0.2 and 127.0.0.3, reducers on 127.0.0.1, hosts of tests/data/loopback.yaml)."""

import json
import os
import subprocess
import sys

from rapier_app.controller.inprocess import InProcessServer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SORT = os.path.join(REPO, "examples", "sort", "sort.py")
TOPO = "file:" + os.path.join(REPO, "tests", "data", "loopback.yaml")
MARK = "# rapier"


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run_sort(script, mapper_args=()):
    """2 mappers x 2 reducers on loopback; returns (mapper outputs, reducer outputs)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "client"))
    ports = [free_port(), free_port()]
    maps = [subprocess.Popen([sys.executable, script, "map", "--index", str(i), "--reducers",
                              "2", "--records", "3000", "--port", str(ports[i]), *mapper_args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            for i in range(2)]
    for m in maps:
        assert json.loads(m.stdout.readline())["ready"] in (0, 1)
    peers = f"127.0.0.2:{ports[0]},127.0.0.3:{ports[1]}"
    reds = [subprocess.run([sys.executable, script, "reduce", "--index", str(j), "--mappers",
                            peers], capture_output=True, text=True, env=env, timeout=60)
            for j in range(2)]
    outs = [m.communicate(timeout=60) for m in maps]
    for m, (_, err) in zip(maps, outs):
        assert m.returncode == 0, err.decode()[-800:]
    for r in reds:
        assert r.returncode == 0, r.stderr[-800:]
    return ([json.loads(o) for o, _ in outs], [json.loads(r.stdout) for r in reds])


def test_the_client_adds_nine_lines_and_the_sort_runs_without_them(tmp_path):
    text = open(SORT).read()
    marked = [ln for ln in text.splitlines() if MARK in ln]
    assert len(marked) == 9
    plain = tmp_path / "sort_plain.py"
    plain.write_text("\n".join(ln for ln in text.splitlines() if MARK not in ln) + "\n")
    assert "rapier_client" not in plain.read_text()
    maps, reds = run_sort(str(plain))
    assert all(r["sorted"] for r in reds) and sum(r["records"] for r in reds) == 6000
    assert sum(r["bytes"] for r in reds) == sum(m["bytes"] for m in maps) == 600_000


def test_the_sort_registers_its_shuffle():
    from rapier_client import Controller
    from test_rest_security import make_app

    sys.path.insert(0, os.path.join(REPO, "client"))
    with InProcessServer(make_app(topology=TOPO, scheduler="rapier").wsgi) as srv:
        ctl = Controller(srv.url)
        with ctl.coflow(id="sort-1", name="sort") as cf:
            maps, reds = run_sort(SORT, ["--rapier", srv.url, "--coflow", "sort-1", "--sizes"])
        view = cf.view()
    assert all(r["sorted"] for r in reds) and sum(r["records"] for r in reds) == 6000
    assert view["state"] == "done" and len(view["flows"]) == 4
    for f in view["flows"]:
        assert f["src"] in ("h1", "h2", "127.0.0.2", "127.0.0.3")
        assert f["dst"] in ("h0", "127.0.0.1") and f["src_port"] and f["dst_port"]
    sizes = sorted(f["size_bytes"] for f in view["flows"])
    assert sum(sizes) == 600_000 + 4 * 8  # each run plus its 8-byte length
