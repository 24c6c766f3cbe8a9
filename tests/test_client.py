"""The Python client (``client/``, package ``rapier_client``) against the controller
served over real HTTP on loopback (:class:`rapier_app.controller.inprocess.InProcessServer`).

* it imports with the standard library only (no ``rapier_app`` on the path);
* a coflow registered open on ``with`` entry and closed on exit; ``connect`` and
  ``register_socket`` register the real 5-tuples of loopback sockets (hosts of
  ``tests/data/loopback.yaml`` live on 127.0.0.2-5); ``done``;
* an overlapping match is a :class:`Conflict` naming both flows; bad input a
  :class:`BadRequest` naming the field, and nothing is added; a wrong token 401;
* controller down (refused, black hole, 5xx): every transfer completes, unshaped,
  with exactly one warning per ``Controller``, within the bounded timeout;
* the asyncio twin does the same.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "client"))

from rapier_app.controller.inprocess import InProcessServer  # noqa: E402
from rapier_client import (AsyncController, BadRequest, Conflict, Controller,  # noqa: E402
                           ControllerUnavailable, NotFound, Unauthorized)

TOKEN = "client-test-token-0123456789"
TOPO = "file:" + os.path.join(REPO, "tests", "data", "loopback.yaml")
IP = {"h1": "127.0.0.2", "h2": "127.0.0.3", "h3": "127.0.0.4", "h4": "127.0.0.5"}
HOST = {ip: h for h, ip in IP.items()}


def make_backend(token=None):
    """The controller's WSGI application, built in-process on the loopback fabric."""
    from test_rest_security import make_app
    return make_app(topology=TOPO, scheduler="rapier", rest_token=token).wsgi


@pytest.fixture
def server():
    with InProcessServer(make_backend(TOKEN)) as srv:
        yield srv


@pytest.fixture
def ctl(server):
    c = Controller(server.url, token=TOKEN, timeout=5.0, total_timeout=10.0)
    yield c
    c.close()


def listener(ip="127.0.0.3"):
    ls = socket.socket()
    ls.bind((ip, 0))
    ls.listen(8)
    return ls


def host(addr):
    return HOST.get(addr, addr)


def same_host(a, b):
    return host(a) == host(b)


def flows_by_index(cf):
    return {f["index"]: f for f in cf.view()["flows"]}


# -----------------------------------------------------------------------------------
def test_client_imports_with_the_standard_library_only():
    """``python -I -S`` (no site-packages: no rapier_app, no Ryu) with only client/ on
    the path: the package imports, and every module it loaded is the standard
    library's or its own."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import rapier_client, "
            "rapier_client.aio, rapier_client.sync\n"
            "try:\n    import rapier_app\nexcept ImportError:\n    pass\n"
            "else:\n    raise SystemExit('rapier_app importable')\n"
            "bad = [m for m, mod in sys.modules.items() if getattr(mod, '__file__', None)"
            " and not m.startswith('rapier_client') and 'site-packages' in mod.__file__]\n"
            "print(rapier_client.__version__, bad)")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code, os.path.join(REPO, "client")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0.1.0", "[]"]


def test_coflow_connect_accept_done_close(ctl):
    """The reducer connects (its flow registered from its ephemeral port), the mapper
    registers the accepted socket before sending; both 5-tuples as the kernel has
    them; done on each; the coflow closes on exit and then finishes."""
    ls = listener("127.0.0.3")
    port = ls.getsockname()[1]
    got = {}

    def mapper():
        conn, _ = ls.accept()
        got["flow"] = cf.register_socket(conn, size_bytes=300_000)
        got["tuple"] = (conn.getsockname(), conn.getpeername())
        conn.sendall(b"m" * 300_000)
        got["req"] = conn.recv(10)
        conn.close()

    with ctl.coflow(name="shuffle 0", weight=2.0) as cf:
        assert cf.registered and cf.view()["open"] is True
        th = threading.Thread(target=mapper)
        th.start()
        sock = cf.connect(("127.0.0.3", port), size_bytes=10, source_address=("127.0.0.2", 0))
        sock.sendall(b"r" * 10)
        data = b""
        while len(data) < 300_000:
            chunk = sock.recv(65536)
            assert chunk
            data += chunk
        th.join(10)
        mine = cf.flow_of(sock)
        rows = flows_by_index(cf)
        assert set(rows) == {mine.index, got["flow"].index} and mine.index != got["flow"].index
        r = rows[mine.index]
        assert same_host(r["src"], "127.0.0.2") and same_host(r["dst"], "127.0.0.3")
        assert (r["src_port"], r["dst_port"], r["protocol"], r["size_bytes"]) == (
            sock.getsockname()[1], port, "tcp", 10)
        m = rows[got["flow"].index]
        (ml, mp) = got["tuple"]
        assert same_host(m["src"], ml[0]) and same_host(m["dst"], mp[0])
        assert (m["src_port"], m["dst_port"], m["size_bytes"]) == (port, mp[1], 300_000)
        assert cf.done(sock) is True and cf.done(sock) is False  # the second: done already
        assert cf.view()["state"] == "active"  # open: more flows may come
        assert cf.done(got["flow"]) is True
        sock.close()
    ls.close()
    view = cf.view()
    assert view["open"] is False
    assert view["state"] == "done"
    cf.close()  # idempotent


def test_add_flow_by_name_and_ip_and_unknown_size(ctl):
    with ctl.coflow() as cf:
        a = cf.add_flow("h1", "h3", dst_port=7000, size_bytes=5_000)
        b = cf.add_flow("127.0.0.2", "127.0.0.4", src_port=7000, protocol="udp")
        assert (a.index, b.index) == (0, 1) and a.registered and str(a) == f"{cf.id}/0"
        rows = flows_by_index(cf)
        assert rows[1]["protocol"] == "udp" and rows[1].get("size_bytes") is None
        assert same_host(rows[1]["src"], "127.0.0.2") and rows[1]["src_port"] == 7000
        assert rows[1].get("dst_port") is None


def test_overlap_is_a_conflict_naming_both(ctl):
    """The accepted socket's flow and the same connection registered again from the
    other end (``receive=True``) are the same 5-tuple: 409, both flows named."""
    ls = listener("127.0.0.3")
    with ctl.coflow() as a, ctl.coflow() as b:
        s = a.connect(ls.getsockname(), source_address=("127.0.0.2", 0))
        conn, _ = ls.accept()
        with pytest.raises(Conflict) as err:
            b.register_socket(conn, receive=True)
        assert err.value.status == 409
        assert f"{a.id}/0" in err.value.flows and f"{b.id}/0" in err.value.flows
        # a wider match (the destination port only) overlaps too; nothing was added
        with pytest.raises(Conflict):
            b.add_flow("127.0.0.2", "127.0.0.3", dst_port=ls.getsockname()[1])
        assert b.view()["flows"] == []
        s.close(), conn.close()
    ls.close()


def test_bad_input_names_the_field_and_adds_nothing(ctl):
    with ctl.coflow() as cf:
        cf.add_flow("h1", "h2", dst_port=5001)
        for kwargs, field in ((dict(src_port=70_000), "flows[0].src_port"),
                              (dict(dst_port=5002, size_bytes=0), "flows[0].size_bytes"),
                              (dict(dst_port=5002, protocol="sctp"), "flows[0].protocol"),
                              (dict(), "flows[0]")):
            with pytest.raises(BadRequest) as err:
                cf.add_flow("h1", "h2", **kwargs)
            assert err.value.status == 400 and err.value.field.startswith(field), kwargs
        with pytest.raises(BadRequest) as err:
            cf.add_flows([dict(src="h1", dst="h3", dst_port=1), dict(src="h1", dst="h3")])
        assert err.value.field.startswith("flows[1]")
        assert len(cf.view()["flows"]) == 1  # nothing of the refused bodies
    with pytest.raises(BadRequest) as err:
        ctl.coflow(weight=-1).open()
    assert err.value.field == "weight"
    with pytest.raises(NotFound):
        ctl.attach("no-such-coflow").add_flow("h1", "h2", dst_port=1)


def test_closed_coflow_refuses_flows_and_attach_does_not_close(ctl):
    with ctl.coflow(id="job-7") as owner:
        with ctl.attach("job-7") as other:  # another process of the job
            other.add_flow("h2", "h4", dst_port=9000)
        assert owner.view()["open"] is True
        owner.add_flow("h1", "h4", dst_port=9000)
    with pytest.raises(Conflict):
        owner.add_flow("h3", "h4", dst_port=9000)


def test_token_is_sent_and_a_wrong_one_is_unauthorized(server):
    with pytest.raises(Unauthorized) as err:
        Controller(server.url).coflow().open()
    assert err.value.status == 401 and err.value.field == "authorization"
    with pytest.raises(Unauthorized):
        Controller(server.url, token="wrong-token-000000000000").coflow().open()


# -----------------------------------------------------------------------------------
# controller down
# -----------------------------------------------------------------------------------
def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def echo_server():
    """A loopback TCP server that answers every connection with 64 KiB."""
    ls = listener("127.0.0.1")

    def loop():
        while True:
            try:
                conn, _ = ls.accept()
            except OSError:
                return
            conn.sendall(b"x" * 65536)
            conn.close()

    threading.Thread(target=loop, daemon=True).start()
    return ls


def fetch(sock):
    n = 0
    while chunk := sock.recv(65536):
        n += len(chunk)
    sock.close()
    return n


def warnings_of(caplog):
    return [r for r in caplog.records if r.name == "rapier_client" and r.levelno == logging.WARNING]


@pytest.mark.parametrize("kind", ["refused", "black-hole", "5xx"])
def test_controller_down_transfers_complete_with_one_warning(kind, caplog):
    """Two Controllers, each two coflows of three connections: every transfer moves
    all its bytes, unregistered; one warning per Controller; each call bounded by
    total_timeout (black hole: a listener that never answers)."""
    caplog.set_level(logging.WARNING, logger="rapier_client")
    hits = []
    if kind == "refused":
        url, stop = f"http://127.0.0.1:{free_port()}", (lambda: None)
    elif kind == "black-hole":
        hole = listener("127.0.0.1")  # accepts (backlog) but never answers
        url, stop = f"http://127.0.0.1:{hole.getsockname()[1]}", hole.close
    else:
        def app(environ, start_response):
            environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            hits.append(environ["PATH_INFO"])
            start_response("503 Service Unavailable", [("Content-Length", "2")])
            return [b"{}"]
        srv = InProcessServer(app).start()
        url, stop = srv.url, srv.stop
    data = echo_server()
    t0 = time.monotonic()
    try:
        for _ in range(2):
            ctl = Controller(url, timeout=0.3, retries=2, backoff=0.01, total_timeout=0.8)
            for _ in range(2):
                with ctl.coflow(name="down") as cf:
                    assert not cf.registered
                    for _ in range(3):
                        s = cf.connect(data.getsockname(), size_bytes=65536, receive=True)
                        assert cf.flow_of(s).registered is False
                        assert fetch(s) == 65536
                        assert cf.done(cf.flow_of(s)) is False
            assert ctl.policy.warned and ctl.policy.unshaped == 6
    finally:
        stop()
        data.close()
    elapsed = time.monotonic() - t0
    assert len(warnings_of(caplog)) == 2, [r.getMessage() for r in caplog.records]
    assert "unshaped" in warnings_of(caplog)[0].getMessage()
    assert elapsed < 2 * 0.8 + 1.5  # one bounded attempt per Controller, then skipped
    if kind == "5xx":
        assert len(hits) == 2 * 3  # first + 2 retries, per Controller, then no more


def test_5xx_then_success_is_retried():
    calls = []

    def app(environ, start_response):
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        calls.append(environ["PATH_INFO"])
        if len(calls) < 3:
            start_response("500 Internal Server Error", [("Content-Length", "2")])
            return [b"{}"]
        start_response("201 Created", [("Content-Length", "11")])
        return [b'{"id":"c1"}']

    with InProcessServer(app) as srv:
        ctl = Controller(srv.url, retries=2, backoff=0.01)
        t0 = time.monotonic()
        assert ctl.request("POST", "/coflows", {}) == {"id": "c1"}
        assert len(calls) == 3 and time.monotonic() - t0 >= 0.03  # slept 0.01 + 0.02
    with pytest.raises(ControllerUnavailable):
        Controller(f"http://127.0.0.1:{free_port()}", retries=0).request("GET", "/health")


def test_a_create_retried_after_a_lost_reply_finds_its_coflow():
    """The first POST is stored but its reply lost (500); the retry is refused "id
    already exists" (400 on id): open() succeeds, one coflow.  Without a retry the
    same refusal is raised (the id belongs to someone else)."""
    import json
    made = []

    def app(environ, start_response):
        n = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(n) if n else b""
        if environ["REQUEST_METHOD"] == "GET":
            status, body = ("200 OK", {"id": made[0]}) if made else ("404 Not Found", {})
        elif not made:
            made.append(json.loads(raw)["id"])
            status, body = "500 Internal Server Error", {}
        else:
            status, body = "400 Bad Request", {"error": "id: coflow exists", "field": "id"}
        data = json.dumps(body).encode()
        start_response(status, [("Content-Length", str(len(data)))])
        return [data]

    with InProcessServer(app) as srv:
        ctl = Controller(srv.url, retries=2, backoff=0.01)
        cf = ctl.coflow()
        assert cf.open() == [] and cf.registered and made == [cf.id]
        with pytest.raises(BadRequest) as err:
            ctl.coflow(id=cf.id).open()  # first attempt refused: not ours
        assert err.value.field == "id"


def test_after_the_controller_comes_back_new_coflows_register(caplog):
    caplog.set_level(logging.WARNING, logger="rapier_client")
    port = free_port()
    ctl = Controller(f"http://127.0.0.1:{port}", token=TOKEN, timeout=5.0, retries=0,
                     retry_after=0.2)
    assert ctl.coflow().open() == [] and ctl.policy.warned
    with InProcessServer(make_backend(TOKEN), port=port):
        time.sleep(0.25)
        with ctl.coflow() as cf:
            assert cf.registered and cf.add_flow("h1", "h2", dst_port=1).registered
    assert len(warnings_of(caplog)) == 1


# -----------------------------------------------------------------------------------
# asyncio
# -----------------------------------------------------------------------------------
def test_async_coflow_open_connection_done_close(server):
    async def main():
        ctl = AsyncController(server.url, token=TOKEN)
        ls = listener("127.0.0.3")
        ls.setblocking(False)

        async def on_conn(reader, writer):
            writer.write(b"y" * 1000)
            await writer.drain()
            writer.close()

        srv = await asyncio.start_server(on_conn, sock=ls)
        async with ctl.coflow(name="async") as cf:
            reader, writer = await cf.open_connection(
                "127.0.0.3", ls.getsockname()[1], size_bytes=1000, receive=True,
                local_addr=("127.0.0.2", 0))
            assert len(await reader.read()) == 1000
            flow = cf._sockets[writer]
            assert await cf.done(writer) is True
            view = await cf.view()
            row = view["flows"][0]
            assert same_host(row["src"], "127.0.0.3") and same_host(row["dst"], "127.0.0.2")
            assert row["dst_port"] == writer.get_extra_info("sockname")[1]
            writer.close()
            with pytest.raises(BadRequest) as err:
                await cf.add_flow("h1", "h2")
        srv.close()
        view = await cf.view()
        await ctl.aclose()
        return flow, view, err.value

    flow, view, err = asyncio.run(main())
    assert flow.index == 0 and view["open"] is False and view["state"] == "done"
    assert err.field.startswith("flows[0]")


def test_async_controller_down_one_warning(caplog):
    caplog.set_level(logging.WARNING, logger="rapier_client")
    data = echo_server()

    async def main():
        ctl = AsyncController(f"http://127.0.0.1:{free_port()}", timeout=0.3, retries=1,
                              backoff=0.01, total_timeout=0.8)
        n = 0
        for _ in range(2):
            async with ctl.coflow() as cf:
                for _ in range(3):
                    reader, writer = await cf.open_connection(*data.getsockname())
                    n += len(await reader.read())
                    writer.close()
        return n

    t0 = time.monotonic()
    try:
        assert asyncio.run(main()) == 6 * 65536
    finally:
        data.close()
    assert time.monotonic() - t0 < 2.0
    assert len(warnings_of(caplog)) == 1
