"""Host agent under stalled unauthenticated connections: are authenticated pushes
still served, and how fast?  (docs/operations.md, "The host agent".)

An in-process agent on TCP with a bearer token and a recording fake in place of
``tc`` (no root).  ``--stalled`` raw sockets (default 8, the agent's worker pool)
each connect and then, by ``--stall`` mode:

* ``headers``: send a ``PUT /v1/flows`` request head without a token, declaring a
  1 MB body, and then nothing (never send the body, never read the answer);
* ``partial``: send the request line and one header, never the blank line that
  ends the head;
* ``idle``: send nothing;
* ``health``: ask ``GET /v1/health`` (open without the token) and keep the
  connection.

Then ``--pushes`` authenticated ``PUT /v1/flows`` (one new connection each, as the
controller's pusher) are timed.  Prints JSON: the statuses and the latency p50,
p99 and max (s), beside the same pushes without stalled sockets.

Usage::

    .venv/bin/python benchmarks/agent_stalled_clients.py
    .venv/bin/python benchmarks/agent_stalled_clients.py --stall idle
"""

import argparse
import json
import os
import socket
import sys
import threading
import time
from collections import Counter
from typing import Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from enforcement import agent, client  # noqa: E402

TOKEN = "bench-token-0123456789abcdef"
HEADS = {"headers": (b"PUT /v1/flows HTTP/1.1\r\nHost: agent\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"),
         "partial": b"PUT /v1/flows HTTP/1.1\r\nHost: agent\r\n",
         "idle": b"",
         "health": b"GET /v1/health HTTP/1.1\r\nHost: agent\r\n\r\n"}


class _NoTc:
    """Stands in for ``tc``: records nothing, fails never."""

    def __call__(self, cmds) -> None:
        pass


def _limit(i: int) -> dict:
    return {"flow_id": f"1/{i}", "src_ip": "10.0.0.1", "dst_ip": "10.0.0.4",
            "proto": "tcp", "dst_port": 5001 + i, "rate_bps": 1e6}


def _pushes(base: str, n: int) -> Dict[str, object]:
    took: List[float] = []
    statuses: Counter = Counter()
    for i in range(n):
        t0 = time.monotonic()
        try:
            st, _ = client.request(base, "PUT", "/v1/flows", {"flows": [_limit(i)]},
                                   token=TOKEN, timeout=15)
        except OSError as exc:
            st = type(exc).__name__
        took.append(time.monotonic() - t0)
        statuses[str(st)] += 1
    took.sort()
    return {"statuses": dict(statuses), "p50_s": round(took[len(took) // 2], 4),
            "p99_s": round(took[min(len(took) - 1, int(len(took) * 0.99))], 4),
            "max_s": round(took[-1], 4)}


def measure(stall: str = "headers", stalled: int = agent.DEFAULT_WORKERS,
            pushes: int = 50) -> Dict[str, object]:
    """Time ``pushes`` authenticated pushes to an in-process agent (default pool and
    timeout), without and then with ``stalled`` sockets stalled in mode ``stall``.

    Returns:
        ``{"stall", "stalled", "workers", "without": {...}, "with": {...}}``, each
        ``{"statuses": {status: count}, "p50_s", "p99_s", "max_s"}`` (seconds).

    Raises:
        ValueError: an unknown ``stall`` mode.
    """
    if stall not in HEADS:
        raise ValueError(f"stall: must be one of {sorted(HEADS)}, got {stall!r}")
    enf = agent.Enforcer("h1-eth0", runner=_NoTc())
    enf.start()
    srv = agent.make_server("127.0.0.1:0", enf, token=TOKEN)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    base = f"http://127.0.0.1:{port}"
    out: Dict[str, object] = {"stall": stall, "stalled": stalled, "workers": srv.workers}
    socks = []
    try:
        out["without"] = _pushes(base, pushes)
        for _ in range(stalled):
            s = socket.create_connection(("127.0.0.1", port))
            if HEADS[stall]:
                s.sendall(HEADS[stall])
            socks.append(s)  # never read, never closed until the end
        out["with"] = _pushes(base, pushes)
    finally:
        for s in socks:
            s.close()
        srv.shutdown()
        srv.server_close()
    return out


def main(argv=None) -> int:
    """Run :func:`measure` once and print JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stall", choices=sorted(HEADS), default="headers")
    ap.add_argument("--stalled", type=int, default=agent.DEFAULT_WORKERS)
    ap.add_argument("--pushes", type=int, default=50)
    args = ap.parse_args(argv)
    print(json.dumps(measure(args.stall, args.stalled, args.pushes), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
