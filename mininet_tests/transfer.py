"""Exactly-N-bytes TCP transfers for the emulation: a receiver and a sender.

Run inside Mininet hosts (one process each, so each has its own PID to stop)::

    python -m mininet_tests.transfer recv --port 5001 --bytes 3962500 --out r.json
    python -m mininet_tests.transfer send --dst 10.0.0.4 --port 5001 --bytes 3962500 --out s.json

The receiver accepts one connection, counts bytes until it has ``--bytes`` (or the
peer closes), writes ``{"bytes": n, "first_s": t, "done_s": t, "ok": bool,
"samples": [[t, bytes], ...]}`` (times are ``time.time()`` seconds: all Mininet hosts
share the machine's clock; ``samples`` holds the bytes received so far at most every
``--sample-s`` seconds, default 0.1, and the last byte), then prints one line
``done <bytes> <done_s>`` on stdout (the runner waits on that pipe and reports the
finished flow to the controller at once, instead of the controller noticing it in
its next flow-statistics poll) and exits 0 if it got every byte, 1 otherwise.  The sender retries ``connect`` until the
receiver listens (``--connect-timeout`` seconds), sends exactly ``--bytes`` bytes of
zeros with ``sendall`` and records ``{"start_s", "sent_s", "bytes"}``.

A flow's completion time is the receiver's ``done_s``: the moment its last byte
arrived, which is what the controller's schedule is about.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import socket
import stat
import sys
import time
from typing import List, Optional, Sequence

#: Bytes per send()/recv() call.
CHUNK_BYTES = 64 * 1024


def _write(path: Optional[str], obj: dict) -> None:
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(obj, fh)
        os.replace(tmp, path)


def receive(port: int, nbytes: int, out: Optional[str] = None, bind: str = "0.0.0.0",
            accept_timeout_s: float = 600.0, sample_s: float = 0.1,
            announce=None) -> dict:
    """Accept one TCP connection on ``port`` and read ``nbytes`` bytes.

    Args:
        sample_s: period (s) of the progress samples (bytes received so far).
        announce: optional writable text stream; ``done <bytes> <done_s>`` is written
            and flushed to it once the result file is written.

    Returns:
        ``{"bytes": received, "first_s": time of first byte, "done_s": time of the
        last byte, "ok": received == nbytes, "samples": [[time, bytes so far], ...]}``
        (seconds since the epoch; one sample at the first byte, then at most one per
        ``sample_s``, and one at the last byte), also written to ``out``.

    Raises:
        OSError: cannot bind, or no connection within ``accept_timeout_s`` seconds.
    """
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((bind, port))
    srv.listen(1)
    srv.settimeout(accept_timeout_s)
    _write(out + ".ready" if out else None, {"port": port})
    conn, _ = srv.accept()
    srv.close()
    got, first = 0, None
    samples = []
    next_sample = 0.0
    buf = bytearray(CHUNK_BYTES)
    with conn:
        while got < nbytes:
            n = conn.recv_into(buf, min(CHUNK_BYTES, nbytes - got))
            if n == 0:
                break
            now = time.time()
            if first is None:
                first = now
                samples.append([now, 0])
                next_sample = now + sample_s
            got += n
            if now >= next_sample:
                samples.append([now, got])
                next_sample = now + sample_s
        done = time.time()
    if not samples or samples[-1][1] != got:
        samples.append([done, got])
    res = {"bytes": got, "first_s": first, "done_s": done, "ok": got == nbytes,
           "samples": samples}
    _write(out, res)
    if announce is not None:
        announce.write(f"done {got} {done:.6f}\n")
        announce.flush()
    return res


def wait_go(go: str, timeout_s: float = 600.0, poll_s: float = 0.002) -> None:
    """Block until the runner's start signal ``go``.

    ``go`` a named pipe (FIFO, what the runner creates): opening it for reading blocks
    in the kernel until the runner opens it for writing, so a waiting sender costs no
    CPU (hundreds of senders polling every 2 ms loaded these 2-core machines).
    Otherwise: poll every ``poll_s`` until the file ``go`` exists.

    Raises:
        TimeoutError: (polling only) it did not appear within ``timeout_s`` seconds.
    """
    if os.path.exists(go) and stat.S_ISFIFO(os.stat(go).st_mode):
        with open(go, "rb") as fh:  # blocks until a writer opens the FIFO
            fh.read(1)
        return
    deadline = time.time() + timeout_s
    while not os.path.exists(go):
        if time.time() > deadline:
            raise TimeoutError(f"go: {go} did not appear within {timeout_s} s")
        time.sleep(poll_s)


def available_congestion_controls() -> List[str]:
    """The kernel's TCP congestion controls (``tcp_available_congestion_control``;
    empty if it cannot be read)."""
    try:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            return f.read().split()
    except OSError:
        return []


def _connect(dst: str, port: int, connect_timeout_s: float,
             cc: Optional[str] = None) -> socket.socket:
    deadline = time.time() + connect_timeout_s
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if cc:  # before connect: the handshake already runs under it
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
            sock.settimeout(5)
            sock.connect((dst, port))
            break
        except OSError as exc:
            sock.close()
            if cc and exc.errno in (errno.ENOENT, errno.EPERM):
                raise OSError(exc.errno, f"cc: congestion control {cc!r} not available "
                                         f"here ({exc.strerror})") from exc
            if time.time() > deadline:
                raise
            time.sleep(0.05)
    sock.settimeout(None)
    return sock


def send(dst: str, port: int, nbytes: int, out: Optional[str] = None,
         connect_timeout_s: float = 30.0, go: Optional[str] = None,
         preconnect: bool = False, cc: Optional[str] = None) -> dict:
    """Connect to ``dst:port`` (retrying) and send exactly ``nbytes`` bytes.

    ``cc`` names the socket's TCP congestion control (``TCP_CONGESTION``; None: the
    namespace's default).  As root any algorithm the kernel has may be named, not
    only those in ``net.ipv4.tcp_allowed_congestion_control``.

    With ``go``, the process is started ahead of time: it writes ``<out>.armed`` and
    waits (:func:`wait_go`: a FIFO, or a file to appear) for ``go``, so that Python's
    start-up time is not part of the flow's completion time.  With ``preconnect``
    it connects first (before ``<out>.armed``), so that the TCP handshake (and a lost
    SYN's 1 s retransmission timeout behind a full queue) is not part of it either:
    the flow-level model has no handshake.

    Returns:
        ``{"bytes": nbytes, "start_s": time the first byte was handed to the kernel
        (the connect time without ``preconnect``), "sent_s": time the last byte was
        handed to the kernel}`` (seconds since the epoch), also written to ``out``.

    Raises:
        OSError: no connection within ``connect_timeout_s`` seconds, a send error,
            or ``cc`` not available (message names ``cc``).
    """
    sock = _connect(dst, port, connect_timeout_s, cc) if preconnect else None
    if go:
        _write(out + ".armed" if out else None, {"port": port})
        wait_go(go)
    if sock is None:
        sock = _connect(dst, port, connect_timeout_s, cc)
    start = time.time()
    zeros = bytes(CHUNK_BYTES)
    left = nbytes
    with sock:
        while left > 0:
            n = min(left, CHUNK_BYTES)
            sock.sendall(zeros[:n] if n < CHUNK_BYTES else zeros)
            left -= n
        sent = time.time()
        sock.shutdown(socket.SHUT_WR)
        try:
            sock.settimeout(30)
            while sock.recv(4096):
                pass
        except OSError:
            pass
    res = {"bytes": nbytes, "start_s": start, "sent_s": sent}
    _write(out, res)
    return res


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m mininet_tests.transfer {recv,send} ...``; exit 0 on a full transfer."""
    ap = argparse.ArgumentParser(prog="transfer")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--bytes", type=int, required=True)
    r.add_argument("--out")
    r.add_argument("--sample-s", type=float, default=0.1,
                   help="progress sample period in seconds (default %(default)g)")
    s = sub.add_parser("send")
    s.add_argument("--dst", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--bytes", type=int, required=True)
    s.add_argument("--out")
    s.add_argument("--connect-timeout", type=float, default=30.0)
    s.add_argument("--go", help="wait for this FIFO (or file) before sending")
    s.add_argument("--preconnect", action="store_true",
                   help="connect before waiting for --go (handshake outside the timing)")
    s.add_argument("--cc", help="TCP congestion control of the socket (e.g. cubic, reno, "
                   "bbr; default: the namespace's)")
    a = ap.parse_args(argv)
    if a.bytes <= 0:
        print("transfer: --bytes must be positive", file=sys.stderr)
        return 2
    if not 1 <= a.port <= 65535:
        print("transfer: --port must be in 1..65535", file=sys.stderr)
        return 2
    if a.cmd == "recv":
        if not a.sample_s > 0:
            print("transfer: --sample-s must be positive", file=sys.stderr)
            return 2
        return 0 if receive(a.port, a.bytes, a.out, sample_s=a.sample_s,
                            announce=sys.stdout)["ok"] else 1
    send(a.dst, a.port, a.bytes, a.out, a.connect_timeout, a.go, a.preconnect, a.cc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
