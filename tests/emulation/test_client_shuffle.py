"""The Python client against a real ``ryu-manager`` on Mininet, and the distributed
sort of ``examples/sort/`` once (tiny data, ``rapier``).

One emulation (leaf-spine, 3 leaves of 2 hosts, one spine, 20 Mbit/s, agents on):

* a process in h5 opens a connection to a listener in h1 with ``Coflow.connect``
  (through the Unix relay to the controller's loopback REST); the controller's view
  has the flow with the socket's 5-tuple, the bytes arrive, ``done`` marks it done;
  the same 5-tuple added again from the root namespace is a 409 naming both flows, a
  bad port a 400 naming the field; closed, the coflow is done;
* one round of :func:`mininet_tests.shuffle.run_round`: two sort jobs at once, every
  reducer's output sorted and complete, every mapper's connection registered (the
  controller holds 4 flows per job, all done).
"""

import json
import os
import sys

import pytest

from mininet_tests.runner import REPO, Emulation
from mininet_tests.shuffle import CLIENT_DIR, UnixRelay, run_round

sys.path.insert(0, CLIENT_DIR)
from rapier_client import BadRequest, Conflict, Controller  # noqa: E402

CONNECT = r"""
import json, sys
from rapier_client import Controller
cf = Controller(sys.argv[1]).attach(sys.argv[2])
s = cf.connect((sys.argv[3], 7100), size_bytes=200000)
s.sendall(b"z" * 200000)
s.shutdown(1)
assert s.recv(1) == b"k"
f = cf.flow_of(s)
print(json.dumps({"index": f.index, "sport": s.getsockname()[1], "done": cf.done(s)}))
"""
LISTEN = r"""
import socket
ls = socket.create_server(("", 7100))
print("ready", flush=True)
c, _ = ls.accept()
n = 0
while True:
    b = c.recv(65536)
    if not b:
        break
    n += len(b)
c.sendall(b"k" if n == 200000 else b"x")
print(n, flush=True)
"""


@pytest.fixture(scope="module")
def fabric(ovs):
    opts = {"link_bps": 18e6, "stats_interval_s": 0.1, "stats_completion": "false"}
    with Emulation("leafspine:3,1,2", scheduler="rapier", bw_mbps=20.0,
                   controller_opts=opts) as emu:
        relay = os.path.join(emu.workdir, "rest.sock")
        with UnixRelay(relay, ("127.0.0.1", emu.rest_port)):
            yield emu, relay


def test_client_connect_done_close_conflict_on_mininet(fabric):
    emu, relay = fabric
    ctl = Controller(emu.rest, timeout=10, total_timeout=20)
    env = dict(os.environ, PYTHONPATH=CLIENT_DIR)
    ip = {h: emu.definition.graph.nodes[h]["ip"] for h in emu.definition.hosts}
    with ctl.coflow(id="mn-client", name="client on mininet") as cf:
        srv = emu.node("h1").popen([sys.executable, "-c", LISTEN], env=env, cwd=REPO)
        assert srv.stdout.readline().strip() == b"ready"
        cli = emu.node("h5").popen([sys.executable, "-c", CONNECT, f"unix:{relay}", cf.id,
                                    ip["h1"]], env=env, cwd=REPO)
        out, err = cli.communicate(timeout=60)
        assert cli.returncode == 0, err.decode()[-800:]
        got = json.loads(out)
        assert int(srv.stdout.readline()) == 200000 and srv.wait(10) == 0
        assert got["index"] == 0 and got["done"] is True
        row = cf.view()["flows"][0]
        assert row["src"] in ("h5", ip["h5"]) and row["dst"] in ("h1", ip["h1"])
        assert (row["src_port"], row["dst_port"], row["size_bytes"]) == (
            got["sport"], 7100, 200000)
        with pytest.raises(BadRequest) as bad:
            cf.add_flow("h5", "h1", dst_port=0)
        assert bad.value.field == "flows[0].dst_port"
        live = cf.add_flow("h2", "h6", src_port=7200, dst_port=7201)
        with ctl.coflow() as other, pytest.raises(Conflict) as dup:
            other.add_flow(ip["h2"], "h6", src_port=7200)
        assert set(dup.value.flows) == {str(live), f"{other.id}/0"}
        cf.done(live)
    assert cf.view()["state"] == "done" and ctl.policy.warned is False


def test_sort_once_on_mininet(fabric):
    emu, relay = fabric
    ctl = Controller(emu.rest, timeout=10, total_timeout=20)
    jobs = run_round(emu, ctl, relay, "ci", [1000, 3000], sizes=True, timeout_s=60)
    assert [j["job"] for j in jobs] == [0, 1]
    for j in jobs:
        assert j["sorted"] and j["flows"] == 4 and j["state"] == "done", j
        assert 0 < j["cct_s"] <= j["jct_s"] < 30
    assert [j["bytes"] for j in jobs] == [2 * 1000 * 100, 2 * 3000 * 100]
    assert ctl.policy.warned is False
