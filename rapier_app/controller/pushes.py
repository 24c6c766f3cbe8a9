"""Agent pushes as data: each host agent's full set of per-flow rate limits.

The core never talks to an agent: it returns :class:`AgentPush` objects (one
``PUT /v1/flows`` each, the host's complete set, ``[]`` clearing it) and the Ryu
shell sends them with :mod:`.agent_client`.  :class:`PushBook` remembers what each host
was last sent, so that a host is pushed only when its set changes, and again after a
failed push.

Units: rates in bit/s (integers in the JSON body).  Pure: no Ryu import, no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

#: Marker of a host whose last push failed (its set on the agent is unknown).
FAILED = ("<failed>",)


@dataclass
class AgentPush:
    """A ``PUT /v1/flows`` to one host agent: the full set of its rate limits.

    Attributes:
        host: host name.
        url: agent base URL (``http://IP:PORT`` or ``unix:/path.sock``).
        flows: list of dicts ``{flow_id, src_ip, dst_ip, proto, dst_port, rate_bps}``
            plus ``src_port`` for a flow matched by its source port
            (rate in bit/s, int); an empty list removes every limit on the host.
        gen: the host's push generation (1, 2, ... per host; 0: not from a
            :class:`PushBook`), handed back to :meth:`PushBook.succeeded`.
    """

    host: str
    url: str
    flows: List[Dict[str, Any]]
    gen: int = 0

    def body(self) -> bytes:
        """The JSON request body."""
        return json.dumps({"flows": self.flows}).encode()



def flow_limit(flow_id: str, src_ip: str, dst_ip: str, dst_port: Optional[int],
               rate_bps: float, proto: str = "tcp",
               src_port: Optional[int] = None) -> Dict[str, Any]:
    """One flow's entry of a push: the flow's match (IPs, ``proto`` tcp/udp, the
    ports given: ``dst_port`` may be None, ``src_port`` is sent only when given; the
    agent's u32 filter matches exactly these, ``enforcement.tc``) and the rate as an
    integer bit/s, at least 1 (the agent enforces its own floor)."""
    d = {"flow_id": flow_id, "src_ip": src_ip, "dst_ip": dst_ip, "proto": proto,
         "dst_port": dst_port, "rate_bps": int(round(max(rate_bps, 1.0)))}
    if src_port is not None:
        d["src_port"] = src_port
    return d


def _key(flows: List[Dict[str, Any]]) -> Tuple:
    return tuple(tuple(sorted(d.items())) for d in flows)


class PushBook:
    """What each host agent was last sent (``pushed``: host -> key of its set, or
    :data:`FAILED`) and the rate limits now wanted (``limits``: host -> flow entries).

    Args:
        url_of: host name -> the agent's base URL.
    """

    def __init__(self, url_of: Callable[[str], str]):
        self.url_of = url_of
        self.pushed: Dict[str, Tuple] = {}
        #: host -> {flow id: entry}: the wanted sets (:attr:`limits` as lists)
        self._sets: Dict[str, Dict[str, Dict[str, Any]]] = {}
        #: flow id -> the host whose wanted set holds it
        self._want_host: Dict[str, str] = {}
        #: hosts whose wanted set changed since the last :meth:`update_changed`
        self._changed: set = set()
        #: host -> (consecutive failures, earliest time of the next retry in s)
        self.backoff: Dict[str, Tuple[int, float]] = {}
        #: host -> generation of the last push handed out / acknowledged by the agent
        self.gen: Dict[str, int] = {}
        self.acked: Dict[str, int] = {}
        #: host -> {flow id: generation of the first push whose set held its limit}
        self.first: Dict[str, Dict[str, int]] = {}
        #: flow id -> the host whose set holds its limit
        self.host_of: Dict[str, str] = {}

    @property
    def limits(self) -> Dict[str, List[Dict[str, Any]]]:
        """The wanted sets: host -> flow entries (:func:`flow_limit`), hosts with at
        least one limit (a new dict of new lists)."""
        return {h: list(d.values()) for h, d in self._sets.items() if d}

    @limits.setter
    def limits(self, limits: Mapping[str, List[Dict[str, Any]]]) -> None:
        self._changed.update(h for h, d in self._sets.items() if d)
        self._sets, self._want_host = {}, {}
        for host, flows in limits.items():
            for d in flows:
                self.want(host, d)

    def want(self, host: str, entry: Dict[str, Any]) -> None:
        """Make ``entry`` (:func:`flow_limit`) flow ``entry["flow_id"]``'s wanted
        limit, on ``host`` (replacing its entry, on whichever host it was)."""
        fid = entry["flow_id"]
        was = self._want_host.get(fid)
        if was is not None and was != host:
            self.unwant(fid)
        self._sets.setdefault(host, {})[fid] = entry
        self._want_host[fid] = host
        self._changed.add(host)

    def unwant(self, flow_id: str) -> None:
        """Flow ``flow_id`` wants no limit any more (nothing when it had none)."""
        host = self._want_host.pop(flow_id, None)
        if host is not None:
            mine = self._sets[host]
            del mine[flow_id]
            if not mine:
                del self._sets[host]
            self._changed.add(host)

    def update_changed(self, push: bool = True) -> List[AgentPush]:
        """The pushes of the hosts whose wanted set changed since the last call (see
        :meth:`want`, :meth:`unwant`) and of the hosts whose last push failed, when
        what they were last sent differs (hosts that lost all flows get ``[]``),
        in name order, each set sorted by flow id: what :meth:`update` gives with
        the whole table, at the cost of the hosts that changed.  ``push=False``
        (agents off): forget the changes, no push."""
        changed, self._changed = self._changed, set()
        if not push:
            return []
        changed.update(h for h, k in self.pushed.items() if k == FAILED)
        out = []
        for host in sorted(changed):
            flows = sorted(self._sets.get(host, {}).values(), key=lambda d: d["flow_id"])
            if not flows and host not in self.pushed:
                continue
            if self.pushed.get(host) != _key(flows):
                out.append(self._push(host, flows))
        return out

    def _push(self, host: str, flows: List[Dict[str, Any]]) -> AgentPush:
        if flows:
            self.pushed[host] = _key(flows)
        else:
            self.pushed.pop(host, None)
        g = self.gen[host] = self.gen.get(host, 0) + 1
        old = self.first.get(host, {})
        new = {}
        for d in flows:
            fid = d["flow_id"]
            new[fid] = old.get(fid, g)
            self.host_of[fid] = host
        for fid in old:
            if fid not in new and self.host_of.get(fid) == host:
                del self.host_of[fid]
        self.first[host] = new
        return AgentPush(host, self.url_of(host), flows, g)

    def limited(self, flow_id: str) -> bool:
        """True when flow ``flow_id``'s limit is in force: its host's agent
        acknowledged a set that held it (a newer rate may still be on its way), or
        no limit is wanted for it.  False while its first limit is on its way, or
        after a failed push to its host (the agent's state is unknown)."""
        host = self.host_of.get(flow_id)
        if host is None:
            return True
        return self.pushed.get(host) != FAILED and \
            self.acked.get(host, 0) >= self.first[host][flow_id]

    def update(self, limits: Mapping[str, List[Dict[str, Any]]]) -> List[AgentPush]:
        """Make ``limits`` the wanted sets; the pushes of every host whose set differs
        from what it was last sent (hosts that lost all flows get ``[]``), hosts in
        name order, each set sorted by flow id."""
        self.limits = limits
        self._changed = set()
        out = []
        for host in sorted(set(limits) | set(self.pushed)):
            flows = sorted(limits.get(host, []), key=lambda d: d["flow_id"])
            if self.pushed.get(host) != _key(flows):
                out.append(self._push(host, flows))
        return out

    def failed(self, host: str, now: float = 0.0, min_s: float = 0.0,
               max_s: float = 0.0) -> float:
        """Mark ``host``'s set as unknown: the next :meth:`update` or :meth:`retry`
        pushes it again.  With ``min_s``/``max_s`` (s) the retry waits an exponential
        backoff: ``min(min_s * 2**(n-1), max_s)`` after the n-th consecutive failure.
        Returns that delay (s).  The exponent is capped before the power is computed
        (once the delay reached ``max_s`` it stays there), so any number of failures
        is safe."""
        self.pushed[host] = FAILED
        n = self.backoff.get(host, (0, 0.0))[0] + 1
        delay = 0.0
        if min_s > 0:
            # 2**60 * min_s exceeds any max_s a person sets; no float overflow
            delay = min(min_s * 2.0 ** min(n - 1, 60), max_s)
        self.backoff[host] = (n, now + delay)
        return delay

    def succeeded(self, host: str, gen: int = 0) -> None:
        """A push to ``host`` went through: its backoff starts over, and the agent
        holds every set up to generation ``gen`` (the push's :attr:`AgentPush.gen`;
        a later set replaces the earlier ones, so an acknowledged generation covers
        those before it)."""
        self.backoff.pop(host, None)
        if gen > self.acked.get(host, 0):
            self.acked[host] = gen

    def retry(self, now: float = float("inf")) -> List[AgentPush]:
        """Pushes of the current sets of the hosts whose last push failed and whose
        backoff (see :meth:`failed`) has run out at ``now`` (s; default: all)."""
        due = sorted(h for h, k in self.pushed.items()
                     if k == FAILED and self.backoff.get(h, (0, 0.0))[1] <= now)
        return [self._push(host, sorted(self._sets.get(host, {}).values(),
                                        key=lambda d: d["flow_id"])) for host in due]

    def push_all(self) -> List[AgentPush]:
        """The full current set of every host that has limits or was sent some (the
        periodic agent reconciliation: PUT replaces whatever the agent holds, so a
        limit it lost or kept by mistake is repaired), hosts in name order."""
        hosts = sorted({h for h, d in self._sets.items() if d} | set(self.pushed))
        return [self._push(h, sorted(self._sets.get(h, {}).values(),
                                     key=lambda d: d["flow_id"])) for h in hosts]
