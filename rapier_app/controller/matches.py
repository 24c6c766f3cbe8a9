"""Flow matches (what identifies a flow on the wire) and the index of live matches.

A flow is matched by source and destination host, protocol (``tcp`` or ``udp``) and
the source port, the destination port or both (a port not given matches any).  Two
flows *overlap* when one packet could match both: same hosts and protocol, and for
each port either both give the same value or one of them gives none.  The
controller refuses a flow that overlaps a live one (its rules would collide).

:class:`MatchIndex` finds an overlapping live flow in O(1) dict look-ups (no scan of
every flow): each flow is filed under its exact ``(src, dst, proto, src_port,
dst_port)``, under ``(src, dst, proto, src_port)`` and under ``(src, dst, proto,
dst_port)``.  Entries of flows that stopped being live are dropped lazily when a
look-up meets them (``live`` callable), so callers add flows and never have to
remove them.

Pure: no Ryu import, no I/O.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple, Optional, Set, Tuple

#: Protocols a flow may use, with their IP protocol numbers.
PROTOCOLS = {"tcp": 6, "udp": 17}


class Match(NamedTuple):
    """What identifies a flow on the wire (host names, not IPs).

    Attributes:
        src, dst: host names.
        proto: ``"tcp"`` or ``"udp"``.
        src_port, dst_port: ports 1..65535, or None for any (at least one given).
    """

    src: str
    dst: str
    proto: str
    src_port: Optional[int]
    dst_port: Optional[int]

    def describe(self) -> str:
        """``h1:7000->h5:any tcp`` style text for error messages."""
        sp = "any" if self.src_port is None else self.src_port
        dp = "any" if self.dst_port is None else self.dst_port
        return f"{self.src}:{sp}->{self.dst}:{dp} {self.proto}"


def overlaps(a: Match, b: Match) -> bool:
    """True when one packet could match both ``a`` and ``b`` (see the module doc)."""
    return (a.src == b.src and a.dst == b.dst and a.proto == b.proto
            and (a.src_port is None or b.src_port is None or a.src_port == b.src_port)
            and (a.dst_port is None or b.dst_port is None or a.dst_port == b.dst_port))


class MatchIndex:
    """Live flows' matches, for :meth:`find` of an overlapping one.

    Args:
        live: ``value -> bool``: whether the flow filed with that value is still live
            (entries whose value is no longer live are dropped when met).
    """

    def __init__(self, live: Callable[[Any], bool]):
        self.live = live
        self._exact: Dict[Tuple, Dict[Any, Match]] = {}
        self._by_src: Dict[Tuple, Dict[Any, Match]] = {}
        self._by_dst: Dict[Tuple, Dict[Any, Match]] = {}

    def __len__(self) -> int:
        return len({k for d in self._exact.values() for k in d})

    def add(self, key: Any, m: Match) -> None:
        """File flow ``key`` (any hashable, e.g. a FlowState) with match ``m``."""
        base = (m.src, m.dst, m.proto)
        self._exact.setdefault(base + (m.src_port, m.dst_port), {})[key] = m
        self._by_src.setdefault(base + (m.src_port,), {})[key] = m
        self._by_dst.setdefault(base + (m.dst_port,), {})[key] = m

    def remove(self, key: Any, m: Match) -> None:
        """Forget flow ``key`` filed with ``m`` (no error when absent)."""
        base = (m.src, m.dst, m.proto)
        for table, k in ((self._exact, base + (m.src_port, m.dst_port)),
                         (self._by_src, base + (m.src_port,)),
                         (self._by_dst, base + (m.dst_port,))):
            bucket = table.get(k)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del table[k]

    def _first_live(self, table: Dict[Tuple, Dict[Any, Match]], k: Tuple) -> Optional[Any]:
        bucket = table.get(k)
        while bucket:
            key, m = next(iter(bucket.items()))
            if self.live(key):
                return key
            self.remove(key, m)
            bucket = table.get(k)
        return None

    def find(self, m: Match) -> Optional[Any]:
        """A live flow whose match overlaps ``m`` (its key), or None.

        Cost: at most three dict look-ups plus the dead entries dropped on the way.
        """
        base = (m.src, m.dst, m.proto)
        if m.src_port is not None and m.dst_port is not None:
            probes = ((self._exact, base + (m.src_port, m.dst_port)),
                      (self._exact, base + (m.src_port, None)),
                      (self._exact, base + (None, m.dst_port)))
        elif m.src_port is not None:  # any dst port: every flow with this or no src port
            probes = ((self._by_src, base + (m.src_port,)), (self._by_src, base + (None,)))
        elif m.dst_port is not None:
            probes = ((self._by_dst, base + (m.dst_port,)), (self._by_dst, base + (None,)))
        else:  # matches every port: anything between these hosts
            probes = tuple((self._by_src, k) for k in list(self._by_src) if k[:3] == base)
        for table, k in probes:
            hit = self._first_live(table, k)
            if hit is not None:
                return hit
        return None


def keys_overlapping(index: MatchIndex, m: Match) -> Set[Any]:
    """Every live key of ``index`` overlapping ``m`` (tests; linear in the index)."""
    out = set()
    for bucket in list(index._exact.values()):
        for key, other in list(bucket.items()):
            if overlaps(m, other) and index.live(key):
                out.add(key)
    return out


__all__ = ["Match", "MatchIndex", "PROTOCOLS", "keys_overlapping", "overlaps"]
