"""A small MapReduce-style distributed sort whose shuffle is a coflow.

Each mapper makes ``--records`` random 100-byte records (10-byte key), partitions
them by key range into one sorted run per reducer, and serves the runs over TCP from
one port: a reducer connects, sends its index (4 bytes), receives an 8-byte length
and its run, and acknowledges with one byte once it has every byte.  Each reducer
fetches its run from every mapper at once, merges the runs and checks that the
result is sorted.  Each process prints one JSON line (times are ``time.time()``).

    python sort.py map --index 0 --reducers 3 --records 20000 --port 7000
    python sort.py reduce --index 1 --mappers 10.0.0.1:7000,10.0.0.2:7000

The coflow: with ``--rapier URL --coflow ID`` (a coflow a driver opened with
``Controller.coflow(id=ID)``), each mapper registers every accepted connection
before it sends (``register_socket``: the flow's real 5-tuple, its size with
``--sizes``) and reports it done on the reducer's acknowledgement.  The nine lines
whose comment says rapier are all the client adds (docs/client.md shows the diff).
"""

import argparse
import heapq
import json
import random
import socket
import struct
import sys
import threading
import time

from rapier_client import Controller  # rapier

RECORD, KEY = 100, 10


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError(f"peer closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def make_runs(n, reducers, seed):
    """``reducers`` sorted runs of ``n`` random records, partitioned by key range."""
    rnd = random.Random(seed)
    parts = [[] for _ in range(reducers)]
    for _ in range(n):
        rec = rnd.getrandbits(8 * RECORD).to_bytes(RECORD, "big")
        parts[rec[0] * reducers // 256].append(rec)
    return [b"".join(sorted(p)) for p in parts]


def mapper(a):
    runs = make_runs(a.records, a.reducers, a.seed)
    cf = Controller(a.rapier).attach(a.coflow) if a.rapier else None  # rapier
    listener = socket.create_server(("", a.port), backlog=64)
    print(json.dumps({"ready": a.index, "t": time.time()}), flush=True)

    def serve(conn):
        with conn:
            run = runs[struct.unpack("!I", recv_exact(conn, 4))[0]]
            if cf:  # rapier
                cf.register_socket(conn, size_bytes=8 + len(run) if a.sizes else None)  # rapier
            conn.sendall(struct.pack("!Q", len(run)) + run)
            recv_exact(conn, 1)  # the reducer has every byte
            if cf:  # rapier
                cf.done(conn)  # rapier

    threads = []
    for _ in range(a.reducers):
        conn, _ = listener.accept()
        threads.append(threading.Thread(target=serve, args=(conn,)))
        threads[-1].start()
    for t in threads:
        t.join()
    listener.close()
    print(json.dumps({"mapper": a.index, "bytes": sum(map(len, runs)), "t_end": time.time()}))


def reducer(a):
    t0 = time.time()
    mappers = [(h, int(p)) for h, p in (m.rsplit(":", 1) for m in a.mappers.split(","))]
    runs = [b""] * len(mappers)

    def fetch(k):
        with socket.create_connection(mappers[k]) as s:
            s.sendall(struct.pack("!I", a.index))
            runs[k] = recv_exact(s, struct.unpack("!Q", recv_exact(s, 8))[0])
            s.sendall(b"k")

    threads = [threading.Thread(target=fetch, args=(k,)) for k in range(len(mappers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t_fetched = time.time()
    merged = list(heapq.merge(*([r[i:i + RECORD] for i in range(0, len(r), RECORD)]
                                for r in runs)))
    ok = all(x[:KEY] <= y[:KEY] for x, y in zip(merged, merged[1:])) and all(
        len(r) % RECORD == 0 for r in runs)
    print(json.dumps({"reducer": a.index, "records": len(merged), "sorted": ok,
                      "bytes": sum(map(len, runs)), "t_start": t0, "t_fetched": t_fetched,
                      "t_end": time.time()}))
    return 0 if ok else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description="MapReduce-style distributed sort")
    sub = ap.add_subparsers(dest="role", required=True)
    m = sub.add_parser("map")
    m.add_argument("--index", type=int, required=True)
    m.add_argument("--reducers", type=int, required=True)
    m.add_argument("--records", type=int, default=10000)
    m.add_argument("--port", type=int, default=7000)
    m.add_argument("--seed", type=int, default=None)
    m.add_argument("--rapier", help="controller address (rapier_client.Controller)")  # rapier
    m.add_argument("--coflow", help="the shuffle's coflow id")  # rapier
    m.add_argument("--sizes", action="store_true", help="register each flow's size")  # rapier
    r = sub.add_parser("reduce")
    r.add_argument("--index", type=int, required=True)
    r.add_argument("--mappers", required=True, help="HOST:PORT,... of every mapper")
    a = ap.parse_args(argv)
    if a.role == "map":
        a.seed = a.index if a.seed is None else a.seed
        return mapper(a) or 0
    return reducer(a)


if __name__ == "__main__":
    sys.exit(main())
