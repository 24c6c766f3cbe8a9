"""``rapier-agent``: per-host daemon enforcing per-flow rates with HTB + u32.

HTTP/JSON API (all bodies JSON; errors are ``{"error": "<field>: <message>"}``)::

    GET    /v1/health            200 {"ok": true, "iface": ..., "flows": N, "enforce": bool}
    GET    /v1/flows             200 {"flows": [limit, ...]}            limits in force
    PUT    /v1/flows             body {"flows": [limit, ...]}: REPLACES the whole set
                                 (idempotent; [] clears) -> 200 {"flows": [...], "commands": K}
    DELETE /v1/flows             clear every limit -> 200
    PUT    /v1/flows/<flow_id>   body: one limit (flow_id optional, must match the URL):
                                 set or change that flow only -> 200
    DELETE /v1/flows/<flow_id>   remove that flow's limit -> 200, 404 if unknown

``HEAD`` works wherever ``GET`` does (same status and headers, no body).

A *limit* is ``{"flow_id": "1/0", "src_ip": "10.0.0.1", "dst_ip": "10.0.0.4",
"proto": "tcp", "dst_port": 5001, "src_port": null, "rate_bps": 250000000}`` (rate in
bit/s).  Bad JSON (also nested too deep, ``NaN``) or an invalid field gives 400 naming
the field (quoting at most 64 characters of it); a missing or wrong token 401; an
unknown path 404; another method 405; a body above ``--max-body-bytes`` or more than
``--max-flows`` flows 413; a ``tc`` failure 500 (the agent then rebuilds its tree from
the last good state); every worker busy 503.  Bad input runs no ``tc`` command.

The commands of one change (from :func:`enforcement.tc.plan`) go to one ``tc -batch -``
process (:func:`run_tc_batch`); ``--tc-each`` runs one ``tc`` process per command
instead.  Timings (1,000 flows) are in ``enforcement/README.md``.

The agent listens on a Unix socket by default (``unix:/run/rapier-agent/agent.sock``;
``--listen unix:/tmp/rapier-agents/h1.sock`` in Mininet, whose hosts the controller
reaches that way), created with mode 0600 (only its owner may connect).  On TCP
(``--listen HOST:PORT``) it needs a bearer token (``--token-file`` or the environment
variable ``RAPIER_AGENT_TOKEN``): every request but ``GET /v1/health`` must then send
``Authorization: Bearer <token>`` (compared with :func:`hmac.compare_digest`); a token
given on a Unix socket is required there too.  The token is checked before the body
is read: a request without it gets 401 and its connection is closed at once, and a
connection without it (``GET /v1/health``) is not kept alive.  A new connection
holds no worker until its request head has arrived (:class:`_HeadGate`; one that
sends no complete head within ``--timeout`` is closed).  Requests are served by a
bounded pool of ``--workers`` threads, each connection with a ``--timeout`` per read
and write (idle keep-alive connections are closed after it).  See
``docs/operations.md``.

It installs its root HTB qdisc on start, and deletes it on SIGTERM/SIGINT.  With
``--no-enforce`` it accepts and records limits but runs no tc command (the emulation's
``baseline`` run: no rate limits).

Source: RAPIER (INFOCOM 2015) Section IV, rates enforced at end hosts.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import selectors
import signal
import socket
import socketserver
import stat
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Callable, Dict, List, Optional, Sequence, Tuple
from urllib.parse import unquote

from rapier_app.httpjson import TOKEN_RE, RequestError, bearer_ok, require_bearer, short

from . import tc
from .listen import DEFAULT_LISTEN, parse_listen
from .tc import Command, TcError, TcState

LOG = logging.getLogger("rapier-agent")
#: Largest request body accepted, bytes (``--max-body-bytes``).
MAX_BODY_BYTES = 4 * 1024 * 1024
#: Most flows in one ``PUT /v1/flows`` (``--max-flows``); the hard limit is
#: :data:`enforcement.tc.MAX_FLOWS` (HTB class ids).
DEFAULT_MAX_FLOWS = 4096
#: Worker threads serving connections (``--workers``).
DEFAULT_WORKERS = 8
#: Per-connection socket timeout, seconds (``--timeout``).
DEFAULT_TIMEOUT_S = 10.0
#: How long a connection whose request head has arrived waits for a free worker
#: before a 503, seconds.
BUSY_WAIT_S = 1.0
#: Largest request head (request line and headers) looked for, bytes.
MAX_HEAD_BYTES = 65536
#: Most connections held waiting for their request head (the oldest is closed).
MAX_HELD = 1024
#: How often a connection whose head is incomplete is looked at again, seconds.
HEAD_POLL_S = 0.02
#: Environment variable holding the bearer token (alternative to ``--token-file``).
TOKEN_ENV = "RAPIER_AGENT_TOKEN"


def run_tc(cmd: Command) -> None:
    """Run one tc command (argv list) and raise :class:`TcError` if it fails."""
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        raise TcError(f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr.strip()}")


def run_tc_batch(cmds: Sequence[Command]) -> None:
    """Run tc commands (argv lists starting with ``tc``) in one ``tc -batch -`` process.

    tc stops at the first failing command; the commands before it stay applied (as
    with one process per command).  Measured on this machine: 1,000 flows (2,000
    commands) in 0.08 s, against 4.1 s with one process per command
    (``enforcement/README.md``).

    Raises:
        TcError: a command failed; the message names it (from tc's
            ``Command failed -:LINE``) and holds tc's stderr.
        ValueError: a command does not start with ``tc`` or has a token with white
            space or a newline (tc's batch syntax could not carry it).
    """
    cmds = list(cmds)
    if not cmds:
        return
    for c in cmds:
        if c[:1] != ["tc"] or any(not t or any(ch.isspace() for ch in t) for t in c):
            raise ValueError(f"cmds: not a tc argv list batch can carry: {c!r}")
    if len(cmds) == 1:
        run_tc(cmds[0])
        return
    text = "".join(" ".join(c[1:]) + "\n" for c in cmds)
    res = subprocess.run(["tc", "-batch", "-"], input=text, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        m = re.search(r"Command failed -:(\d+)", res.stderr)
        line = int(m.group(1)) if m else 0
        what = " ".join(cmds[line - 1]) if 1 <= line <= len(cmds) else "tc -batch"
        raise TcError(f"{what}: exit {res.returncode}: {res.stderr.strip()}")


class Enforcer:
    """Applies limit sets to one interface, keeping :class:`~enforcement.tc.TcState`.

    Args:
        iface: interface name (egress of the host's traffic).
        runner: callable executing one command (argv list); raises on failure.  Given
            (tests pass a recorder), every command goes through it one by one.
            Default: the commands of one change go to :func:`run_tc_batch` together
            (one ``tc`` process per change, not per command).
        enforce: False to record limits without running any command.
        batch: callable executing a list of commands at once; default
            :func:`run_tc_batch` when ``runner`` is not given, else none.

    Thread-safe: one (re-entrant) lock serialises all changes.
    """

    def __init__(self, iface: str, runner: Optional[Callable[[Command], None]] = None,
                 enforce: bool = True,
                 batch: Optional[Callable[[Sequence[Command]], None]] = None):
        self.iface = iface
        self.runner = runner if runner is not None else run_tc
        self.batch = batch if batch is not None else (run_tc_batch if runner is None else None)
        self.enforce = enforce
        self.state = TcState(iface)
        self.lock = threading.RLock()
        self.started = False

    def _run(self, cmds: Sequence[Command]) -> None:
        if not self.enforce or not cmds:
            return
        if self.batch is not None:
            self.batch(cmds)
        else:
            for c in cmds:
                self.runner(c)

    def start(self) -> None:
        """Install the root qdisc (replacing whatever root qdisc was there).

        Raises:
            TcError: tc failed (e.g. no such interface).
        """
        with self.lock:
            self._run(tc.setup_commands(self.iface))
            self.state = TcState(self.iface)
            self.started = True

    def stop(self) -> None:
        """Delete the root qdisc; errors are logged, not raised (used on exit)."""
        with self.lock:
            if not self.started:
                return
            try:
                self._run(tc.teardown_commands(self.iface))
            except Exception as exc:  # noqa: BLE001 - exit path: report and go on
                LOG.warning("teardown failed: %s", exc)
            self.state = TcState(self.iface)
            self.started = False

    def replace_all(self, wanted: Sequence[tc.FlowLimit]) -> int:
        """Make ``wanted`` the complete set of limits; returns the number of commands run.

        Raises:
            RequestError: too many flows.
            TcError: tc failed; the tree was rebuilt from the previous state (or, if
                that failed too, cleared).
        """
        with self.lock:
            cmds, new = tc.plan(self.state, wanted)
            try:
                self._run(cmds)
            except Exception as exc:
                self._recover()
                raise TcError(str(exc)) from None
            self.state = new
            if cmds:
                LOG.info("limits now: %s", ", ".join(
                    f"{l.flow_id}={l.rate_bps / 1e6:.3f}Mbit/s" for l in new.limits()) or "none")
            return len(cmds) if self.enforce else 0

    def _recover(self) -> None:
        try:
            self._run(tc.rebuild_commands(self.state))
        except Exception as exc:  # noqa: BLE001
            LOG.error("rebuild failed (%s); clearing all limits", exc)
            self.state = TcState(self.iface)
            try:
                self._run(tc.setup_commands(self.iface))
            except Exception as exc2:  # noqa: BLE001
                LOG.error("reset failed: %s", exc2)

    def set_one(self, lim: tc.FlowLimit) -> int:
        """Set or change one flow's limit, keeping the others.

        Raises:
            RequestError: its match equals another flow's.
            TcError: as :meth:`replace_all`.
        """
        with self.lock:
            others = [l for l in self.state.limits() if l.flow_id != lim.flow_id]
            for o in others:
                if o.match == lim.match:
                    raise RequestError(400, "flow", f"same packet match as flow {o.flow_id!r}")
            cur = {l.flow_id: l for l in others}
            cur[lim.flow_id] = lim
            return self.replace_all(list(cur.values()))

    def remove_one(self, flow_id: str) -> bool:
        """Remove one flow's limit; False if it had none."""
        with self.lock:
            limits = self.state.limits()
            if all(l.flow_id != flow_id for l in limits):
                return False
            self.replace_all([l for l in limits if l.flow_id != flow_id])
            return True

    def snapshot(self) -> List[dict]:
        """Limits in force as JSON-ready dicts, with their HTB class ids."""
        with self.lock:
            return [{**i.limit.to_dict(), "classid": tc.classid(i.slot),
                     "enforced_rate_bps": i.limit.enforced_rate_bps if self.enforce else None}
                    for i in sorted(self.state.flows.values(), key=lambda i: i.slot)]


# ---------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------
def handle(enforcer: Enforcer, method: str, path: str, body: Optional[bytes],
           max_flows: int = DEFAULT_MAX_FLOWS) -> Tuple[int, dict]:
    """Route one request; pure apart from the enforcer (tested without sockets).

    Args:
        method: HTTP method.  path: URL path (query ignored).  body: raw body or None.
        max_flows: most flows accepted in one ``PUT /v1/flows`` (more: 413).

    Returns:
        ``(status, json_object)``: 2xx; 4xx as ``{"error": "field: message",
        "field": field}`` (:class:`~rapier_app.httpjson.RequestError`); 500 when tc
        fails (or, never expected, an internal error: logged with its traceback, not
        echoed).
    """
    try:
        return _route(enforcer, method, path.split("?", 1)[0], body, max_flows)
    except RequestError as exc:
        return exc.status, exc.to_json()
    except TcError as exc:
        return 500, {"error": f"tc: {exc}"}
    except Exception:  # noqa: BLE001 -- answer, never drop the connection
        LOG.exception("%s %s failed", short(method, 16), short(path))
        return 500, {"error": "internal error (see the agent log)"}


def _no_constant(name: str):
    raise RequestError(400, "body", f"invalid JSON: {name} is not JSON")


def _json(body: Optional[bytes]):
    if not body:
        raise RequestError(400, "body", "missing JSON body")
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        raise RequestError(400, "body", "invalid JSON: nested too deeply") from None
    except RequestError:
        raise
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, too many digits
        raise RequestError(400, "body", f"invalid JSON: {short(str(exc), 120)}") from None


def _route(enf: Enforcer, method: str, path: str, body: Optional[bytes],
           max_flows: int = DEFAULT_MAX_FLOWS) -> Tuple[int, dict]:
    parts = [unquote(p) for p in path.strip("/").split("/")] if path.strip("/") else []
    if parts[:1] != ["v1"] or len(parts) < 2:
        raise RequestError(404, "path", f"unknown path {short(path)}")
    if parts[1] == "health" and len(parts) == 2:
        if method != "GET":
            raise RequestError(405, "method", f"{short(method, 16)} not allowed on /v1/health")
        return 200, {"ok": True, "iface": enf.iface, "flows": len(enf.state.flows),
                     "enforce": enf.enforce}
    if parts[1] != "flows":
        raise RequestError(404, "path", f"unknown path {short(path)}")
    if len(parts) == 2:
        if method == "GET":
            return 200, {"flows": enf.snapshot()}
        if method == "PUT":
            obj = _json(body)
            flows = obj.get("flows") if isinstance(obj, dict) else None
            if isinstance(flows, list) and len(flows) > max_flows:
                raise RequestError(413, "flows", f"at most {max_flows} flows, got {len(flows)}")
            wanted = tc.parse_flow_set(obj)
            n = enf.replace_all(wanted)
            return 200, {"flows": enf.snapshot(), "commands": n}
        if method == "DELETE":
            n = enf.replace_all([])
            return 200, {"flows": [], "commands": n}
        raise RequestError(405, "method", f"{short(method, 16)} not allowed on /v1/flows")
    # the flow id may itself contain '/', e.g. "1/0" (sent as 1%2F0 or plainly)
    fid = "/".join(parts[2:])
    if method == "GET":
        for f in enf.snapshot():
            if f["flow_id"] == fid:
                return 200, f
        raise RequestError(404, "flow_id", f"no limit for flow {short(fid)}")
    if method == "PUT":
        obj = _json(body)
        if isinstance(obj, dict):
            if obj.get("flow_id", fid) != fid:
                raise RequestError(400, "flow_id", f"{short(obj['flow_id'])} differs from the "
                                              f"URL's {short(fid)}")
            obj = {**obj, "flow_id": fid}
        n = enf.set_one(tc.parse_limit(obj, "flow"))
        return 200, {"flows": enf.snapshot(), "commands": n}
    if method == "DELETE":
        if not enf.remove_one(fid):
            raise RequestError(404, "flow_id", f"no limit for flow {short(fid)}")
        return 200, {"flows": enf.snapshot()}
    raise RequestError(405, "method", f"{short(method, 16)} not allowed on /v1/flows/<id>")


class _Handler(BaseHTTPRequestHandler):
    """One connection: reads requests (HTTP/1.1 keep-alive), answers JSON.

    The socket timeout is the server's ``timeout_s`` (a stalled or idle connection
    is closed after it); the token, body cap and flow cap come from the server.
    """

    server_version = "rapier-agent/0.1"
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        self.timeout = self.server.timeout_s
        super().setup()

    def address_string(self) -> str:  # Unix sockets have no peer address
        ca = self.client_address
        return ca[0] if isinstance(ca, tuple) and ca else "unix"

    def log_message(self, fmt, *args) -> None:
        LOG.info("%s %s", self.address_string(), short(fmt % args, 200))

    def _check_token(self, method: str) -> None:
        """:func:`~rapier_app.httpjson.require_bearer` unless no token is configured or
        the request is ``GET`` (or ``HEAD``) ``/v1/health``."""
        token = self.server.token
        if token and not (method == "GET" and self.path.split("?", 1)[0] == "/v1/health"):
            require_bearer(self.headers.get("Authorization") or "", token)

    def _read_body(self) -> Optional[bytes]:
        """The body (None without ``Content-Length``); RequestError 400 for
        ``Transfer-Encoding`` or a bad ``Content-Length``, 413 above the cap."""
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding"):
            raise RequestError(400, "Transfer-Encoding", "not supported; send Content-Length")
        if not length:
            return None
        try:
            n = int(length)
        except ValueError:
            raise RequestError(400, "Content-Length", "not an integer") from None
        cap = self.server.max_body_bytes
        if n > cap or n < 0:
            raise RequestError(413, "body", f"larger than {cap} bytes")
        return self.rfile.read(n)

    def _serve(self) -> None:
        # HEAD is GET without the body (same status and headers)
        method = "GET" if self.command == "HEAD" else self.command
        try:
            # the token is checked before the body is read: an unauthenticated request
            # is answered 401 and closed at once, whatever Content-Length it declares,
            # so stalled unauthenticated connections cannot hold the workers
            self._check_token(method)
            body = self._read_body()
        except RequestError as exc:
            status, obj = exc.status, exc.to_json()
        else:
            status, obj = handle(self.server.enforcer, method, self.path, body,
                                 self.server.max_flows)
        data = (json.dumps(obj) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", "Bearer")
        # a connection without the token (GET /v1/health is open) is not kept alive:
        # only an authenticated client may keep a worker between requests
        if (status >= 400 and status != 404) or (self.server.token and not bearer_ok(
                self.headers.get("Authorization") or "", self.server.token)):
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        if self.close_connection:
            self._discard_arrived()

    def _discard_arrived(self) -> None:
        """Read, without waiting, what the client already sent (an unread body), so that
        closing the socket sends FIN rather than a reset that could lose the reply."""
        self.wfile.flush()
        sock = self.connection
        try:
            sock.setblocking(False)
            for _ in range(self.server.max_body_bytes // 65536 + 1):
                if not sock.recv(65536):
                    break
        except OSError:  # BlockingIOError: nothing more has arrived
            pass

    do_GET = do_PUT = do_DELETE = do_POST = do_PATCH = do_HEAD = do_OPTIONS = _serve


_BUSY = json.dumps({"error": "busy: every worker is serving a connection; retry"}).encode()
_BUSY_REPLY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
               b"Retry-After: 1\r\nConnection: close\r\nContent-Length: "
               + str(len(_BUSY)).encode() + b"\r\n\r\n" + _BUSY)


class _HeadGate:
    """Holds new connections, without a worker, until their request head (request
    line and headers, up to the blank line) has arrived.

    One thread waits on every held socket (:mod:`selectors`) and looks at what has
    arrived without consuming it (``MSG_PEEK``), so that the handler reads the
    request as usual.  A socket whose head is complete (or larger than
    :data:`MAX_HEAD_BYTES`: the handler refuses it) is handed to the pool
    (``server.dispatch``); one that closes, or sends no complete head within the
    server's ``timeout_s``, is closed; beyond :data:`MAX_HELD` held sockets the
    oldest is closed.  Connections that stall before their head is complete (idle,
    or a head cut short) therefore never hold a worker.
    """

    def __init__(self, server) -> None:
        self.server = server
        self._lock = threading.Lock()
        self._new: List[tuple] = []
        self._held: "Dict[socket.socket, tuple]" = {}
        self._rwake, self._wwake = socket.socketpair()
        self._rwake.setblocking(False)
        self._wwake.setblocking(False)
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="agent-head-gate",
                                        daemon=True)
        self._thread.start()

    def add(self, request, client_address) -> None:
        """Hold a newly accepted connection."""
        with self._lock:
            self._new.append((request, client_address, time.monotonic()))
        self._wake()

    def _wake(self) -> None:
        try:
            self._wwake.send(b"x")
        except OSError:  # buffer full (already woken) or closed
            pass

    def close(self) -> None:
        """Stop the thread and close every held socket."""
        self._stopped = True
        self._wake()
        self._thread.join(5)
        with self._lock:
            held = [r for r, _, _ in self._new] + list(self._held)
            self._new, self._held = [], {}
        for r in held:
            self.server.shutdown_request(r)
        self._rwake.close()
        self._wwake.close()

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._rwake, selectors.EVENT_READ)
        parked: Dict[socket.socket, float] = {}  # incomplete head: look again later
        try:
            while not self._stopped:
                try:
                    self._round(sel, parked)
                except Exception:  # noqa: BLE001 -- the gate must outlive any socket
                    LOG.exception("agent head gate: round failed")
        finally:
            sel.close()

    def _round(self, sel, parked: Dict[socket.socket, float]) -> None:
        """One pass: take new sockets, un-park, wait up to HEAD_POLL_S, hand on the
        complete heads, close the expired."""
        with self._lock:
            new, self._new = self._new, []
        for r, addr, t in new:
            self._held[r] = (addr, t)
            sel.register(r, selectors.EVENT_READ)
        while len(self._held) > MAX_HELD:
            oldest = min(self._held, key=lambda r: self._held[r][1])
            self._drop(sel, parked, oldest, "too many connections waiting")
        now = time.monotonic()
        for r, t in list(parked.items()):
            if t <= now:
                del parked[r]
                sel.register(r, selectors.EVENT_READ)
        for key, _ in sel.select(HEAD_POLL_S):
            r = key.fileobj
            if r is self._rwake:
                try:
                    self._rwake.recv(4096)
                except OSError:
                    pass
                continue
            try:
                seen = r.recv(MAX_HEAD_BYTES, socket.MSG_PEEK)
            except OSError:
                seen = b""
            if not seen:  # closed by the client (or broken)
                self._drop(sel, parked, r, None)
            elif b"\r\n\r\n" in seen or len(seen) >= MAX_HEAD_BYTES:
                sel.unregister(r)
                addr, _ = self._held.pop(r)
                self.server.dispatch(r, addr)
            else:
                sel.unregister(r)
                parked[r] = time.monotonic() + HEAD_POLL_S
        limit = time.monotonic() - self.server.timeout_s
        for r in [r for r, (_, t) in self._held.items() if t < limit]:
            self._drop(sel, parked, r, "no complete request head in time")

    def _drop(self, sel, parked, r, why: Optional[str]) -> None:
        if why:
            LOG.info("connection closed before its request: %s", why)
        if parked.pop(r, None) is None:
            sel.unregister(r)
        self._held.pop(r, None)
        self.server.shutdown_request(r)


class _PooledServer:
    """Mixin for :mod:`socketserver` servers: connections go to a bounded pool.

    A new connection waits in a :class:`_HeadGate`, holding no worker, until its
    request head has arrived; then at most ``workers`` connections are served at
    once by a :class:`~concurrent.futures.ThreadPoolExecutor`: a connection waits up
    to :data:`BUSY_WAIT_S` for a free worker, then gets 503 and is closed (no
    unbounded thread per connection, no unbounded queue).  Attributes read by the
    handler: ``enforcer``, ``token``, ``timeout_s``, ``max_body_bytes``, ``max_flows``.
    """

    #: listen backlog (socketserver's default is 5: a burst of connections then
    #: drops SYNs, which the client resends only after 1 s)
    request_queue_size = 128

    def setup_pool(self, workers: int) -> None:
        """Create the pool of ``workers`` threads and the head gate (call once, after
        binding)."""
        self.workers = workers
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agent-http")
        self._slots = threading.BoundedSemaphore(workers)
        self._active: set = set()
        self._active_lock = threading.Lock()
        self._waiters = ThreadPoolExecutor(max_workers=workers,
                                           thread_name_prefix="agent-wait")
        self._gate = _HeadGate(self)

    def process_request(self, request, client_address) -> None:
        self._gate.add(request, client_address)

    def dispatch(self, request, client_address) -> None:
        """A connection's request head has arrived: serve it on a worker (waiting up
        to :data:`BUSY_WAIT_S` for one, without holding up the gate), else 503."""
        if self._slots.acquire(blocking=False):
            self._submit(request, client_address)
            return
        try:
            self._waiters.submit(self._wait_for_worker, request, client_address)
        except RuntimeError:  # shut down
            self.shutdown_request(request)

    def _wait_for_worker(self, request, client_address) -> None:
        if not self._slots.acquire(timeout=BUSY_WAIT_S):
            LOG.warning("all %d workers busy: connection refused with 503", self.workers)
            try:
                request.settimeout(0.5)
                request.sendall(_BUSY_REPLY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        self._submit(request, client_address)

    def _submit(self, request, client_address) -> None:
        try:
            self._pool.submit(self._serve_connection, request, client_address)
        except RuntimeError:  # pool shut down
            self._slots.release()
            self.shutdown_request(request)

    def _serve_connection(self, request, client_address) -> None:
        with self._active_lock:
            self._active.add(request)
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 -- a broken connection must not kill a worker
            self.handle_error(request, client_address)
        finally:
            with self._active_lock:
                self._active.discard(request)
            self.shutdown_request(request)
            self._slots.release()

    def handle_error(self, request, client_address) -> None:
        LOG.debug("connection from %s failed", client_address, exc_info=True)

    def server_close(self) -> None:
        """Close the listening socket, the connections waiting for their request head,
        then every open connection (workers blocked in a read return at once), then
        the pool."""
        super().server_close()
        self._gate.close()
        self._waiters.shutdown(wait=True, cancel_futures=True)
        with self._active_lock:
            active = list(self._active)
        for request in active:
            try:
                request.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._pool.shutdown(wait=True, cancel_futures=True)


class _TcpServer(_PooledServer, HTTPServer):
    allow_reuse_address = True


class _UnixServer(_PooledServer, socketserver.UnixStreamServer):
    def server_bind(self) -> None:
        old = os.umask(0o177)  # the socket is born 0600: no window with wider access
        try:
            socketserver.UnixStreamServer.server_bind(self)
        finally:
            os.umask(old)
        os.chmod(self.server_address, 0o600)
        self.server_name, self.server_port = "unix", 0




def make_server(listen: str, enforcer: Enforcer, token: str = "",
                workers: int = DEFAULT_WORKERS, timeout_s: float = DEFAULT_TIMEOUT_S,
                max_body_bytes: int = MAX_BODY_BYTES, max_flows: int = DEFAULT_MAX_FLOWS):
    """Bind an HTTP server for ``enforcer`` on ``listen`` (see :func:`parse_listen`).

    Args:
        token: bearer token required on every request but ``GET /v1/health``
            (empty: none; refused on TCP).
        workers: size of the connection pool.  timeout_s: per-connection socket
            timeout (s).  max_body_bytes, max_flows: request caps (413 past them).

    A stale Unix socket is removed first (only a socket: any other file there is an
    error); its directory is created; the socket gets mode 0600.

    Raises:
        ValueError: bad ``listen``, TCP without a token, a malformed token, or a
            non-positive ``workers``/``timeout_s``/cap.
        OSError: cannot bind, or ``listen`` names an existing file that is no socket.
    """
    kind, addr = parse_listen(listen)
    check_token(token, required=(kind == "tcp"))
    if workers < 1 or not timeout_s > 0 or max_body_bytes < 1 or max_flows < 1:
        raise ValueError("workers, timeout, max-body-bytes and max-flows must be positive")
    if kind == "unix":
        os.makedirs(os.path.dirname(os.path.abspath(addr)), exist_ok=True)
        if os.path.lexists(addr):
            if not stat.S_ISSOCK(os.lstat(addr).st_mode):
                raise OSError(f"listen: {addr} exists and is not a socket; not removed")
            os.unlink(addr)
        srv = _UnixServer(addr, _Handler)
    else:
        srv = _TcpServer(addr, _Handler)
    srv.setup_pool(workers)
    srv.enforcer = enforcer
    srv.token = token
    srv.timeout_s = float(timeout_s)
    srv.max_body_bytes = int(max_body_bytes)
    srv.max_flows = int(max_flows)
    return srv


def check_token(token: str, required: bool) -> None:
    """Check a bearer token: at least 16 characters of ``A-Z a-z 0-9 - . _ ~ + /``.

    Raises:
        ValueError: missing while ``required`` (TCP), or malformed (names ``token``).
    """
    if not token:
        if required:
            raise ValueError(f"token: required on TCP (--token-file FILE or ${TOKEN_ENV}); "
                             f"or listen on a Unix socket")
        return
    if not TOKEN_RE.fullmatch(token):
        raise ValueError("token: must be at least 16 characters of A-Z a-z 0-9 - . _ ~ + /")


def read_token(path: Optional[str], environ=os.environ) -> str:
    """The bearer token: the first line of ``path`` when given, else ``$RAPIER_AGENT_TOKEN``,
    else ``""``.

    Raises:
        ValueError: the file cannot be read (names ``token-file``).
    """
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                return fh.readline().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"token-file: cannot read {path}: {exc}") from None
    return environ.get(TOKEN_ENV, "").strip()


def default_iface(proc_net_dev: str = "/proc/net/dev") -> str:
    """The only non-loopback interface of this process's network namespace.

    Reads ``/proc/net/dev`` (per network namespace, unlike ``/sys/class/net``, which
    inside a Mininet host still shows the root namespace).

    Raises:
        RuntimeError: zero or several candidates (then ``--iface`` is needed), or the
            file cannot be read.
    """
    try:
        with open(proc_net_dev) as fh:
            lines = fh.read().splitlines()[2:]
    except OSError as exc:
        raise RuntimeError(f"iface: cannot read {proc_net_dev}: {exc}; pass --iface") from None
    names = sorted(ln.split(":", 1)[0].strip() for ln in lines if ":" in ln)
    names = [n for n in names if n != "lo"]
    if len(names) != 1:
        raise RuntimeError(f"iface: cannot choose among {names or 'no interfaces'}; "
                           f"pass --iface")
    return names[0]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``rapier-agent``; returns the exit status (0 after a clean stop)."""
    ap = argparse.ArgumentParser(prog="rapier-agent", description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", default=DEFAULT_LISTEN,
                    help="unix:PATH (mode 0600) or HOST:PORT (needs a token) "
                         "(default %(default)s)")
    ap.add_argument("--token-file", default=None,
                    help=f"file whose first line is the bearer token (default: "
                         f"${TOKEN_ENV}); required on TCP")
    ap.add_argument("--workers", type=int, default=DEFAULT_WORKERS,
                    help="connections served at once (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                    help="per-connection socket timeout in s (default %(default)s)")
    ap.add_argument("--max-body-bytes", type=int, default=MAX_BODY_BYTES,
                    help="largest request body (default %(default)s)")
    ap.add_argument("--max-flows", type=int, default=DEFAULT_MAX_FLOWS,
                    help="most flows in one PUT /v1/flows (default %(default)s)")
    ap.add_argument("--iface", default=None,
                    help="interface to shape (default: the only non-lo interface)")
    ap.add_argument("--no-enforce", action="store_true",
                    help="accept and record limits, run no tc command")
    ap.add_argument("--tc-each", action="store_true",
                    help="one tc process per command instead of one 'tc -batch' per "
                         "change (slower; shows each command's own error)")
    from rapier_app.cli_common import add_common_arguments, setup_logging

    # -v: DEBUG, -q: WARNING only, -qq: errors only (default INFO); --log-level LEVEL is
    # the old spelling, still accepted with a deprecation warning
    add_common_arguments(ap, log_level_alias=True,
                         quiet_help="fewer log lines: WARNING and above (-qq: ERROR)",
                         verbose_help="more log lines: DEBUG")
    args = ap.parse_args(argv)
    setup_logging(args, logging.INFO, fmt="%(asctime)s rapier-agent %(levelname)s %(message)s")
    try:
        iface = args.iface or default_iface()
        kind, _ = parse_listen(args.listen)
        token = read_token(args.token_file)
        check_token(token, required=(kind == "tcp"))
    except (RuntimeError, ValueError) as exc:
        print(f"rapier-agent: {exc}", file=sys.stderr)
        return 2
    enforcer = Enforcer(iface, runner=run_tc if args.tc_each else None,
                        enforce=not args.no_enforce)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        enforcer.start()
        server = make_server(args.listen, enforcer, token=token, workers=args.workers,
                             timeout_s=args.timeout, max_body_bytes=args.max_body_bytes,
                             max_flows=args.max_flows)
    except (TcError, OSError, ValueError) as exc:
        print(f"rapier-agent: {exc}", file=sys.stderr)
        enforcer.stop()
        return 1
    thread = threading.Thread(target=server.serve_forever, name="http", daemon=True)
    thread.start()
    LOG.info("listening on %s (token %s, %d workers), shaping %s (enforce=%s)", args.listen,
             "required" if token else "off", args.workers, iface, enforcer.enforce)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.shutdown()
        server.server_close()
        kind, addr = parse_listen(args.listen)
        if kind == "unix" and os.path.lexists(addr) and stat.S_ISSOCK(os.lstat(addr).st_mode):
            os.unlink(addr)
        enforcer.stop()
        LOG.info("stopped; qdisc removed from %s", iface)
    return 0


if __name__ == "__main__":
    sys.exit(main())
