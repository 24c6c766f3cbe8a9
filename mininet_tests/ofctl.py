"""Read OpenFlow rules back from Open vSwitch (``ovs-ofctl -O OpenFlow13 dump-flows``).

:func:`parse_dump_flows` is pure (tested on captured text); :func:`dump_flows` runs
the command.  Used by the emulation tests to check that a coflow's rules are on
exactly the switches of its chosen paths.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple


@dataclass(frozen=True)
class OfRule:
    """One dumped rule: priority, match fields (name -> text), actions text, counters."""

    priority: int
    match: Tuple[Tuple[str, str], ...]
    actions: str
    n_packets: int
    n_bytes: int

    def field(self, name: str) -> Optional[str]:
        """Value of a match field (``nw_src``, ``tp_dst``...), ``""`` for a bare flag
        such as ``tcp``, None when absent."""
        return dict(self.match).get(name)

    def output_ports(self) -> List[int]:
        """Ports of the ``output:N`` actions, in order."""
        out = []
        for a in self.actions.split(","):
            a = a.strip()
            if a.startswith("output:"):
                out.append(int(a.split(":", 1)[1]))
        return out


def parse_dump_flows(text: str) -> List[OfRule]:
    """Parse ``ovs-ofctl dump-flows`` output (OpenFlow 1.3 form) into rules.

    A line looks like ``cookie=0x1, duration=2.1s, table=0, n_packets=3, n_bytes=180,
    priority=100,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.4,tp_dst=5001 actions=output:5``.
    Lines without ``actions=`` (headers) are skipped.

    Raises:
        ValueError: a rule line whose counters or priority are not integers.
    """
    rules = []
    for line in text.splitlines():
        line = line.strip()
        if " actions=" not in line:
            continue
        head, actions = line.split(" actions=", 1)
        fields: Dict[str, str] = {}
        order = []
        # flags such as send_flow_rem end with a space, not a comma:
        # "idle_timeout=300, send_flow_rem priority=100,tcp,..."
        for tok in head.replace(", ", ",").replace(" ", ",").split(","):
            tok = tok.strip()
            if not tok:
                continue
            k, _, v = tok.partition("=")
            fields[k] = v
            order.append(k)
        meta = {"cookie", "duration", "table", "n_packets", "n_bytes", "idle_age",
                "hard_age", "priority", "reset_counts", "send_flow_rem", "idle_timeout",
                "hard_timeout", "importance"}
        match = tuple((k, fields[k]) for k in order if k not in meta)
        rules.append(OfRule(int(fields.get("priority", "32768")), match, actions.strip(),
                            int(fields.get("n_packets", "0")), int(fields.get("n_bytes", "0"))))
    return rules


def dump_flows(bridge: str) -> List[OfRule]:
    """Rules of ``bridge`` (OpenFlow 1.3).

    Raises:
        RuntimeError: ovs-ofctl failed (message holds its stderr).
    """
    r = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", bridge],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ovs-ofctl dump-flows {bridge}: {r.stderr.strip()}")
    return parse_dump_flows(r.stdout)


def flow_rules(rules: List[OfRule], src_ip: str, dst_ip: str, dst_port: int) -> List[OfRule]:
    """The rules matching exactly one TCP flow (src IP, dst IP, TCP dst port)."""
    return [r for r in rules if r.field("tcp") is not None and r.field("nw_src") == src_ip
            and r.field("nw_dst") == dst_ip and r.field("tp_dst") == str(dst_port)]
