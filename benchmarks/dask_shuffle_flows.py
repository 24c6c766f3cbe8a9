"""Which TCP connections carry a Dask shuffle's bytes: can a coflow name one shuffle?

Dask distributed's P2P shuffle (here the P2P rechunk of two arrays, an all-to-all
exchange on the same machinery as the data-frame shuffle) sends shards between workers with
``rpc(address).shuffle_receive(...)`` over the worker's connection *pool*
(``distributed.core.ConnectionPool``): a connection opened to a peer worker's
listening port, from an ephemeral port, is kept and reused by whatever the worker
sends that peer next -- another shuffle's shards included.  A coflow names its flows
by 5-tuple (docs/client.md), so this measures, for shuffles run one after the other
and at the same time, which connections (local address and port -> peer address and
port) carried each shuffle's shards.

A worker plugin (``FlowTap``) wraps ``distributed.comm.tcp.TCP.write`` in every worker
process and records, for each ``shuffle_receive`` message, the shuffle id, the
connection's two endpoints and the bytes written.  No Dask code is changed.

Usage::

    .venv/bin/python benchmarks/dask_shuffle_flows.py --workers 3 --n 3000

Prints, for each of ``--repeat`` rounds of each phase (``sequential``: shuffle A,
then B; ``concurrent``: A and B at once), the connections each shuffle used, how
many carried shards of both, and each shuffle's bytes on those.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time

from distributed.diagnostics.plugin import WorkerPlugin



def _tap():
    """The records of this process: a list kept on ``distributed.comm.tcp`` (this
    script's functions reach the workers pickled by value, so a global of theirs
    would be a copy per function)."""
    from distributed.comm import tcp

    if not hasattr(tcp, "_rapier_tap"):
        tcp._rapier_tap = []
    return tcp._rapier_tap


def _record(comm, msg, nbytes):
    """Append ``(shuffle_id, local, peer, nbytes)`` for a ``shuffle_receive`` message."""
    try:
        msgs = msg if isinstance(msg, list) else [msg]
        for m in msgs:
            if isinstance(m, dict) and m.get("op") == "shuffle_receive":
                _tap().append((str(m.get("shuffle_id")), comm.local_address,
                               comm.peer_address, int(nbytes)))
    except Exception:  # noqa: BLE001 -- never break the worker
        pass


class FlowTap(WorkerPlugin):
    """Records the connection and size of every ``shuffle_receive`` a worker sends."""

    name = "rapier-flow-tap"

    def setup(self, worker):
        from distributed.comm import tcp

        if getattr(tcp.TCP.write, "_rapier_tap", False):
            return
        orig = tcp.TCP.write

        async def write(self, msg, serializers=None, on_error="message"):
            n = await orig(self, msg, serializers=serializers, on_error=on_error)
            _record(self, msg, n)
            return n

        write._rapier_tap = True
        tcp.TCP.write = write


def collect():
    """The records of this worker process, cleared."""
    tap = _tap()
    out = list(tap)
    tap.clear()
    return out


def array(n, chunks, seed):
    """An n x n float64 array in column blocks (``chunks`` columns each)."""
    import dask.array as da

    return da.random.default_rng(seed).random((n, n), chunks=(n, chunks))


def summary(records):
    """Per shuffle the set of connections (local -> peer) and bytes; the shared ones."""
    conns = collections.defaultdict(set)
    bytes_on = collections.Counter()
    for sid, local, peer, n in records:
        conns[sid].add((local, peer))
        bytes_on[(sid, local, peer)] += n
    ids = sorted(conns)
    shared = set.intersection(*(conns[s] for s in ids)) if len(ids) > 1 else set()
    return {"shuffles": {s: {"connections": len(conns[s]),
                             "bytes": sum(v for (i, *_), v in bytes_on.items() if i == s)}
                         for s in ids},
            "shared_connections": len(shared),
            "bytes_on_shared": {s: sum(bytes_on[(s, *c)] for c in shared) for s in ids},
            "example_shared": sorted(shared)[:2]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--n", type=int, default=3000, help="arrays of n x n float64")
    ap.add_argument("--chunks", type=int, default=250, help="block width (columns, then rows)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of both phases")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    import dask
    from distributed import Client, LocalCluster

    out = {}
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      protocol="tcp://", host="127.0.0.1", dashboard_address=None) as cluster, \
            Client(cluster) as client, dask.config.set({"array.rechunk.method": "p2p"}):
        client.register_plugin(FlowTap())
        a, b = array(args.n, args.chunks, 1), array(args.n, args.chunks, 2)

        def shuffle(x):  # column blocks -> row blocks: every block to every block
            return x.rechunk((args.chunks, args.n)).sum()

        def records():
            got = client.run(collect)
            return [tuple(r) for rs in got.values() for r in rs]

        every = []
        for rep in range(args.repeat):
            dask.compute(shuffle(a))
            dask.compute(shuffle(b))
            got = records()
            every += got
            out.setdefault("sequential", []).append(summary(got))
            dask.compute(shuffle(a), shuffle(b))
            got = records()
            every += got
            out.setdefault("concurrent", []).append(summary(got))
        out["all"] = summary(every)
        out["all"]["connections"] = len({(r[1], r[2]) for r in every})
    import distributed
    out["distributed"] = distributed.__version__
    if args.json:
        print(json.dumps(out, indent=1, default=str))
    for phase in ("sequential", "concurrent"):
        for k, s in enumerate(out[phase]):
            print(f"{phase} {k + 1}: " + "; ".join(
                f"shuffle {sid[:8]} {v['bytes'] / 1e6:.1f} MB over {v['connections']} "
                f"connections" for sid, v in s["shuffles"].items())
                + f"; connections carrying both: {s['shared_connections']} ("
                + ", ".join(f"{v / 1e6:.1f} MB" for v in s["bytes_on_shared"].values())
                + " of each)")
    s = out["all"]
    print(f"all rounds: {s['connections']} connections; carrying both shuffles: "
          f"{s['shared_connections']}")
    print(f"distributed {out['distributed']}, {args.workers} workers, two {args.n} x {args.n} "
          f"float64 arrays rechunked (P2P) from {args.chunks}-column to {args.chunks}-row blocks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
