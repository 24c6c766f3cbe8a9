"""Run coflows on an emulated fabric: Open vSwitch + Mininet + ryu-manager + agents.

:class:`Emulation` is a context manager.  Entering it

1. starts Open vSwitch if it is not running (``ovs-ctl start``; no kernel module, so
   every bridge uses the userspace datapath) and removes bridges and interfaces left
   over from a crashed run of the same topology (never ``mn -c``: that kills every
   ``ryu-manager`` and deletes ``/tmp/*.log`` on the machine);
2. builds the Mininet network from :mod:`mininet_tests.topos` (explicit dpids, ports,
   IPs, MACs), switch-side links shaped to ``bw_mbps`` with Mininet's HTB;
3. turns checksum/segmentation offloads off on every host and switch interface (TCP
   stalls over the userspace datapath otherwise), limits every packet handed to a
   qdisc to one TCP segment (``GSO_MAX_SEGS``: an agent's HTB class at a low rate
   otherwise holds a 64 KB GSO skb for seconds) and gives hosts static ARP entries;
4. byte-compiles the checkout's packages (:func:`byte_compile`, as
   ``scripts/install.sh`` does), starts ``ryu-manager rapier_app.controller`` in the
   root namespace with a generated config file, waits for its REST API and for
   every switch to connect (Mininet's switches retry a lost controller every second:
   ``max_backoff`` 1000 ms on their Controller records, Mininet's default);
5. starts a ``rapier-agent`` in every host on a Unix socket under ``agent_dir`` (with
   ``--no-enforce`` when ``enforce=False``: the baseline run has no rate limits).

:meth:`Emulation.run_coflows` then, for each coflow at its arrival time, starts one
receiver per flow, submits the coflow over REST, and starts one sender per flow
(:mod:`mininet_tests.transfer`, exactly the flow's bytes to its TCP dst port); a
flow finishes when its receiver has every byte.  The receiver announces that on its
stdout pipe, which the run waits on (``select``), and the run reports the flow to the
controller at once (``POST /coflows/<id>/flows/<n>/done``; hosts live in their own
network namespaces and cannot reach the controller's loopback REST address
themselves), so the controller hands the bandwidth on without waiting for its next
flow-statistics poll (``report_done=False`` restores the polling-only behaviour).  A
report the controller does not get (it is down or restarting) is queued and sent
again every :data:`REPORT_RETRY_S` until it answers, also after the last byte of the
run.  Leaving the context stops, by PID,
every process it started (senders, receivers, agents, ryu-manager), stops the
network and, if it started Open vSwitch, its two daemons: also when something failed.

Units: bytes, bit/s (``bw_mbps`` in Mbit/s, as Mininet takes it), seconds.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import logging
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Callable, Dict, List, Optional, Sequence

from enforcement import client
from rapier_app.errors import RapierError

from .topos import DefinedTopo
from .switchq import SwitchQueueError, check_buckets, fair_queue_lines, host_shaping_lines
from .transfer import available_congestion_controls

LOG = logging.getLogger("rapier-emulate")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OVS_CTL = "/usr/share/openvswitch/scripts/ovs-ctl"
OVS_RUNDIR = "/var/run/openvswitch"
OFFLOADS = ["tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"]
#: Largest number of TCP segments in one packet handed to a qdisc (``ip link set
#: ... gso_max_segs``).  Linux builds multi-segment TCP skbs even with segmentation
#: offloads off (software GSO splits them after the qdisc), and HTB charges a whole
#: skb against the class's rate: a 47-segment skb (68 KB) in a class at 64 kbit/s
#: holds the class 8.5 s, also after its rate is raised.  Measured with two network
#: namespaces, one TCP flow through an HTB class at 9.5 Mbit/s, 64 kbit/s for 2 s,
#: then 9.5 Mbit/s: no byte received for 8.52 s (4 retransmission timeouts) with
#: Linux's value, resumed at once with 1 (mininet_tests/README.md).
GSO_MAX_SEGS = 1
REST_PREFIX = "/rapier/v1"
#: Period (s) at which a run polls the controller's schedule for its timeline.
SCHEDULE_POLL_S = 0.1
#: Seconds between attempts to send a flow-done report the controller did not get.
REPORT_RETRY_S = 0.25


class EmulationError(RapierError, RuntimeError):
    """Something the emulation needs did not come up or a run did not finish."""


# ---------------------------------------------------------------------------------
# process helpers
# ---------------------------------------------------------------------------------
def stop_pid(proc: subprocess.Popen, name: str, timeout_s: float = 5.0) -> Optional[int]:
    """SIGTERM ``proc`` by its PID, then SIGKILL after ``timeout_s``; return its exit code."""
    if proc.poll() is not None:
        return proc.returncode
    try:
        os.kill(proc.pid, signal.SIGTERM)
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        LOG.warning("%s (pid %d) ignored SIGTERM; killing", name, proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        return proc.wait(timeout_s)
    except ProcessLookupError:
        return proc.wait(timeout_s)


def _venv_bin(name: str) -> str:
    """``name`` next to this interpreter (the venv's bin), else on PATH."""
    cand = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(cand):
        return cand
    found = shutil.which(name)
    if not found:
        raise EmulationError(f"{name}: not found next to {sys.executable} nor on PATH "
                             f"(run scripts/install.sh)")
    return found


def free_tcp_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now (the kernel's choice)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ovs_running() -> bool:
    """True when ovsdb-server and ovs-vswitchd answer."""
    r = subprocess.run(["ovs-vsctl", "--timeout=3", "show"], capture_output=True)
    return r.returncode == 0


class OvsDaemons:
    """Start Open vSwitch if needed; stop it again (by PID) only if we started it."""

    def __init__(self) -> None:
        self.started = False

    def start(self) -> None:
        """Ensure the daemons run.

        Raises:
            EmulationError: ovs-ctl failed or the daemons do not answer.
        """
        if ovs_running():
            return
        r = subprocess.run([OVS_CTL, "start"], capture_output=True, text=True)
        if not ovs_running():
            raise EmulationError(f"ovs-ctl start failed ({r.returncode}): {r.stderr.strip()}")
        self.started = True

    def stop(self) -> None:
        """Stop the daemons by the PIDs in their pidfiles, if we started them."""
        if not self.started:
            return
        for daemon in ("ovs-vswitchd", "ovsdb-server"):
            try:
                with open(os.path.join(OVS_RUNDIR, f"{daemon}.pid")) as fh:
                    pid = int(fh.read().strip())
                os.kill(pid, signal.SIGTERM)
                for _ in range(50):
                    os.kill(pid, 0)
                    time.sleep(0.1)
            except (OSError, ValueError):
                pass
        self.started = False


def _cleanup_leftovers(topo: DefinedTopo) -> None:
    """Delete bridges and root-namespace interfaces named like ``topo``'s (crashed runs)."""
    for s in topo.switches():
        subprocess.run(["ovs-vsctl", "--timeout=5", "--if-exists", "del-br", s],
                       capture_output=True)
    existing = set(os.listdir("/sys/class/net"))
    for s in topo.switches():
        for name in sorted(existing):
            if name.startswith(s + "-eth"):
                subprocess.run(["ip", "link", "del", name], capture_output=True)


def _switch_side_tclink(bw_mbps: float):
    """A Mininet link class shaping the switch side of every link at ``bw_mbps``
    (Mbit/s) and leaving host interfaces to their agents' HTB trees, as
    :class:`~mininet_tests.topos.DefinedTopo` shapes its links (for a ``Topo`` of the
    user's own, whose links carry no ``bw``)."""
    from mininet.link import TCLink
    from mininet.node import Switch

    class SwitchSideTCLink(TCLink):
        def __init__(self, node1, node2, params1=None, params2=None, **kw):
            p1, p2 = dict(params1 or {}), dict(params2 or {})
            for node, p in ((node1, p1), (node2, p2)):
                if isinstance(node, Switch):
                    p.setdefault("bw", float(bw_mbps))
            TCLink.__init__(self, node1, node2, params1=p1, params2=p2, **kw)

    return SwitchSideTCLink


# ---------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------
@dataclass
class FlowResult:
    """One emulated flow: times in seconds from the run's start, size in bytes."""

    flow_id: str
    coflow_id: str
    src: str
    dst: str
    dst_port: int
    size_bytes: int
    received_bytes: int
    start_s: Optional[float]
    finish_s: Optional[float]
    fct_s: Optional[float]
    #: ``[[t_s, bytes received so far], ...]`` (t from the run's start), about every 0.1 s.
    received: List[list] = field(default_factory=list)
    #: When the controller was told the flow finished (s from the start; None: not told).
    reported_s: Optional[float] = None


@dataclass
class CoflowResult:
    """One emulated coflow: arrival (REST submission) and CCT in seconds."""

    coflow_id: str
    arrival_s: float
    finish_s: Optional[float]
    cct_s: Optional[float]
    flows: List[FlowResult] = field(default_factory=list)
    controller: Optional[dict] = None
    #: When the controller's decision for it was seen taken (s from the start; the
    #: senders are released then); None without a controller.
    decided_s: Optional[float] = None


@dataclass
class RunResult:
    """One scheduler's run of a workload.

    ``schedule_timeline``: the controller's allocations (path, rate in bit/s per flow)
    each time they changed, polled every :data:`SCHEDULE_POLL_S` seconds, with the
    time ``t_s`` (seconds from the start) at which the change was seen.
    ``t0_unix_s``: the run's start (``time.time()``).
    """

    scheduler: str
    coflows: List[CoflowResult]
    wall_s: float
    schedule_timeline: List[dict] = field(default_factory=list)
    t0_unix_s: Optional[float] = None

    @property
    def ccts(self) -> List[float]:
        """CCTs (s) in coflow order; raises EmulationError if one did not finish."""
        out = []
        for c in self.coflows:
            if c.cct_s is None:
                raise EmulationError(f"coflow {c.coflow_id}: did not finish")
            out.append(c.cct_s)
        return out

    @property
    def avg_cct_s(self) -> float:
        """Mean CCT in seconds."""
        c = self.ccts
        return sum(c) / len(c)

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"scheduler": self.scheduler, "wall_s": self.wall_s,
                "t0_unix_s": self.t0_unix_s,
                "coflows": [asdict(c) for c in self.coflows],
                "schedule_timeline": self.schedule_timeline}


# ---------------------------------------------------------------------------------
# the emulation
# ---------------------------------------------------------------------------------
def controller_config(topology: str, scheduler: str, link_bps: Optional[float],
                      agent_url: str, extra: Optional[Dict[str, object]] = None) -> str:
    """The ryu-manager config file: oslo.config INI, the controller's ``[rapier]`` group.

    Args:
        topology: spec for :func:`topologies.build_topology`.
        scheduler: scheduler name.  link_bps: emulated link speed in bit/s (None: the
            definition's).  agent_url: agent URL template with ``{host}``; empty for
            no agents (no rate enforcement).
        extra: further ``[rapier]`` options (see configs/rapier.conf).
    """
    opts: Dict[str, object] = {"topology": topology, "scheduler": scheduler,
                               "agent_url": agent_url}
    if link_bps is not None:
        opts["link_bps"] = float(link_bps)
    opts.update(extra or {})
    lines = ["[rapier]"] + [f"{k} = {v}" for k, v in opts.items()]
    return "\n".join(lines) + "\n"


class Emulation:
    """One network + controller + agents, as a context manager (see module docstring).

    Args:
        topology: spec, e.g. ``"leafspine:3,3,3"``.
        scheduler: controller scheduler name (``rapier``, ``routing-only``, ``baseline``).
        bw_mbps: link speed in Mbit/s for shaping and for the controller (None: no
            shaping, controller uses the definition's speed).
        enforce: start agents that enforce rates (False: ``--no-enforce``).
        workdir: directory for logs and transfer records (default: a new temp dir
            under /tmp/rapier-emu).
        rest_port, of_port: controller REST and OpenFlow ports (default: free ports
            picked at start, so that runs do not collide with a controller on 8080/6653).
        agent_dir: directory of the agents' Unix sockets (default ``<workdir>/agents``).
        controller_opts: extra controller options (e.g. ``{"delta_s": 5}``).
        start_controller: False to run without ryu-manager (tests of the agent alone;
            the network then has no forwarding until rules are added).
        queue_packets: if given (with ``bw_mbps``), every shaped switch port queues
            at most this many packets (a ``pfifo`` under Mininet's HTB class; None:
            Mininet's default, the interface's txqueuelen of 1000 packets, 1.2 s at
            10 Mbit/s).
        rto_min_ms: if given, every host's route to the fabric has TCP's minimum
            retransmission timeout set to this many milliseconds (``ip route ...
            rto_min``; None: Linux's 200 ms).
        tsq_bytes: if given, every host's ``net.ipv4.tcp_limit_output_bytes`` (TCP
            small queues: the bytes one socket may have in the qdiscs below it;
            None: the kernel's 4 MiB, which lets a flow throttled by its agent's HTB
            class queue seconds of data at the host).
        fair_queue: if given (with ``bw_mbps``), every shaped switch port shares its
            rate round robin among this many hashed FIFOs (a power of two; flows
            hashed on their TCP destination port; :mod:`mininet_tests.switchq`),
            each holding ``queue_packets`` packets (100 if None): max-min sharing as
            the flow model has it.  None: one FIFO per port.
        tcp_cc: if given, the senders' TCP congestion control (``TCP_CONGESTION`` on
            each socket, e.g. ``"cubic"``; it must be in the kernel's
            ``tcp_available_congestion_control``; None: the machine's default,
            ``bbr`` on this one).

    Raises (on entry): EmulationError when a component does not come up; the parts
    already started are stopped first.
    """

    def __init__(self, topology: str = "leafspine:3,3,3", scheduler: str = "rapier",
                 bw_mbps: Optional[float] = 20.0, enforce: bool = True,
                 workdir: Optional[str] = None, rest_port: Optional[int] = None,
                 of_port: Optional[int] = None, agent_dir: Optional[str] = None,
                 controller_opts: Optional[Dict[str, object]] = None,
                 start_controller: bool = True, queue_packets: Optional[int] = None,
                 rto_min_ms: Optional[float] = None, tsq_bytes: Optional[int] = None,
                 tcp_cc: Optional[str] = None, fair_queue: Optional[int] = None,
                 mn_topo=None, observe_links: bool = False):
        if queue_packets is not None and (int(queue_packets) != queue_packets
                                          or queue_packets < 1):
            raise EmulationError(f"queue_packets: must be a positive integer, got "
                                 f"{queue_packets!r}")
        if rto_min_ms is not None and not rto_min_ms > 0:
            raise EmulationError(f"rto_min_ms: must be positive, got {rto_min_ms!r}")
        self.queue_packets = None if queue_packets is None else int(queue_packets)
        self.rto_min_ms = rto_min_ms
        if tsq_bytes is not None and (int(tsq_bytes) != tsq_bytes or tsq_bytes < 1):
            raise EmulationError(f"tsq_bytes: must be a positive integer, got {tsq_bytes!r}")
        self.tsq_bytes = None if tsq_bytes is None else int(tsq_bytes)
        if tcp_cc is not None and tcp_cc not in available_congestion_controls():
            raise EmulationError(f"tcp_cc: {tcp_cc!r} is not one of this kernel's "
                                 f"{sorted(available_congestion_controls())}")
        self.tcp_cc = tcp_cc
        if fair_queue is not None:
            try:
                check_buckets(fair_queue)
            except SwitchQueueError as exc:
                raise EmulationError(f"fair_queue: {exc}") from None
        self.fair_queue = fair_queue
        self.topology = topology
        self.scheduler = scheduler
        self.bw_mbps = bw_mbps
        self.enforce = enforce
        os.makedirs("/tmp/rapier-emu", exist_ok=True)
        self.workdir = workdir or tempfile.mkdtemp(prefix=f"{scheduler}-", dir="/tmp/rapier-emu")
        os.makedirs(self.workdir, exist_ok=True)
        self.rest_port = rest_port or free_tcp_port()
        self.of_port = of_port or free_tcp_port()
        self.agent_dir = agent_dir or os.path.join(self.workdir, "agents")
        self.controller_opts = dict(controller_opts or {})
        self.start_controller = start_controller
        #: a Mininet ``Topo`` of the user's own (``mn_topo``): Mininet builds it, every
        #: link at ``bw_mbps``; the controller runs ``topology`` (``discover``, or a
        #: declared spec to check against it) with LLDP link discovery, hosts learn
        #: addresses by ARP (no static entries) and :attr:`definition` is what the
        #: controller discovered (:meth:`learn_definition`)
        self.mn_topo = mn_topo
        self.observe_links = bool(observe_links or mn_topo is not None
                                  or topology == "discover")
        if mn_topo is not None:
            self.topo = mn_topo
            self.definition = None
        else:
            self.topo = DefinedTopo(topology, bw_mbps=bw_mbps)
            self.definition = self.topo.definition
        self.ovs = OvsDaemons()
        self.net = None
        self.ryu: Optional[subprocess.Popen] = None
        self.agents: Dict[str, subprocess.Popen] = {}
        self.transfers: List[subprocess.Popen] = []
        self._logs: List = []

    # -- lifecycle ---------------------------------------------------------------
    def __enter__(self) -> "Emulation":
        try:
            self.start()
        except EmulationError:
            self.stop()
            raise
        except Exception as exc:  # Mininet/OVS failures: stop, then report as ours
            self.stop()
            raise EmulationError(f"start-up failed: {type(exc).__name__}: {exc}") from exc
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def rest(self) -> str:
        """Controller REST base URL."""
        return f"http://127.0.0.1:{self.rest_port}"

    def agent_url(self, host: str) -> str:
        """Agent base URL of ``host`` (Unix socket; named by the host's address with
        ``mn_topo``, whose Mininet names need not be the controller's)."""
        if self.mn_topo is not None:
            return f"unix:{self.agent_dir}/{self.net[host].IP()}.sock"
        return f"unix:{self.agent_dir}/{host}.sock"

    def node(self, host: str):
        """The Mininet host of ``host`` (a name of :attr:`definition`: with
        ``mn_topo``, the controller's name, matched to Mininet's by address)."""
        if self.mn_topo is not None and self.definition is not None \
                and host in self.definition.graph:
            ip = self.definition.graph.nodes[host]["ip"]
            for h in self.net.hosts:
                if h.IP() == ip:
                    return h
        return self.net[host]

    def _log(self, name: str):
        fh = open(os.path.join(self.workdir, name), "w")
        self._logs.append(fh)
        return fh

    def start(self) -> None:
        """Bring everything up (see the module docstring); raises EmulationError."""
        from mininet.link import TCLink, Link
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.node import OVSSwitch, RemoteController

        class _QuietRemote(RemoteController):
            """RemoteController without Mininet's ``telnet`` probe of the OpenFlow port:
            telnet prints the controller's binary OFPT_HELLO, and Mininet's UTF-8 reader
            then fails at random.  We check the controller ourselves (REST, /health)."""

            def checkListening(self) -> None:
                return None

        setLogLevel("critical")  # Mininet logs HTB "quantum is big" warnings as errors
        self.ovs.start()
        _cleanup_leftovers(self.topo)
        byte_compile()  # a restart of the controller then reads no source
        if self.start_controller:
            self._start_ryu()
        t0 = time.time()
        link = TCLink if self.bw_mbps else Link
        if self.mn_topo is not None and self.bw_mbps:
            link = _switch_side_tclink(self.bw_mbps)
        self.net = Mininet(topo=self.topo,
                           switch=partial(OVSSwitch, datapath="user", protocols="OpenFlow13"),
                           link=link,
                           controller=partial(_QuietRemote, ip="127.0.0.1",
                                              port=self.of_port),
                           autoSetMacs=False, autoStaticArp=False, build=True)
        self.net.start()
        for node in self.net.hosts + self.net.switches:
            for intf in node.intfList():
                if intf.name != "lo":
                    node.cmd(" ".join(["ethtool", "-K", intf.name] + OFFLOADS))
                    # one MSS per skb: TCP builds GSO skbs even with the offloads
                    # off (segmented after the qdisc), and an agent's HTB class at a
                    # low rate charges a whole 64 KB skb at once (module docstring)
                    out = node.cmd(f"ip link set dev {intf.name} gso_max_segs {GSO_MAX_SEGS}")
                    if out.strip():
                        raise EmulationError(f"gso_max_segs: ip link on {intf.name}: "
                                             f"{out.strip()}")
        if self.mn_topo is None:
            self.net.staticArp()
        self._tune_network()
        LOG.info("network %s up in %.1f s", self.topology, time.time() - t0)
        if self.start_controller:
            self._wait_switches_connected()
        else:
            self.install_static_routes()
        self._start_agents()

    def _tune_network(self) -> None:
        """Apply ``fair_queue``, ``queue_packets``, ``rto_min_ms`` and ``tsq_bytes``
        (class docstring).

        Raises:
            EmulationError: a ``tc`` or ``ip route`` command failed (named).
        """
        if self.fair_queue and self.bw_mbps:
            lines = []
            for sw in self.net.switches:
                for intf in sw.intfList():
                    bw = intf.params.get("bw")
                    if intf.name != "lo" and bw:
                        lines += fair_queue_lines(intf.name, float(bw) * 1e6, self.fair_queue,
                                                  self.queue_packets or 100)
            path = os.path.join(self.workdir, "switch-queues.tc")
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            out = subprocess.run(["tc", "-batch", path], capture_output=True, text=True)
            if out.returncode:
                raise EmulationError(f"fair_queue: tc -batch {path}: "
                                     f"{(out.stderr or out.stdout).strip()[:300]}")
        elif self.queue_packets is not None and self.bw_mbps:
            for sw in self.net.switches:
                for intf in sw.intfList():
                    if intf.name == "lo":
                        continue
                    # Mininet's TCIntf: root 5:0 htb, class 5:1 at the link rate
                    out = sw.cmd(f"tc qdisc replace dev {intf.name} parent 5:1 handle 10: "
                                 f"pfifo limit {self.queue_packets}")
                    if out.strip():
                        raise EmulationError(f"queue_packets: tc on {intf.name}: {out.strip()}")
        if not self.enforce and self.bw_mbps:
            # no agent shapes the hosts' interfaces: shape them at the access link
            # rate (switchq.host_shaping_lines says why)
            g = self.definition.graph if self.definition is not None else None
            for h in self.net.hosts:
                lines = []
                for intf in h.intfList():
                    if intf.name != "lo":
                        # the access link's capacity (a topology file's host links
                        # may differ in speed): the definition's, shaped as built
                        port = h.ports[intf]
                        rate = next((g.edges[h.name, n]["capacity_bps"]
                                     for n in g.successors(h.name)
                                     if g.edges[h.name, n]["port"] == port),
                                    self.bw_mbps * 1e6) if g is not None else \
                            self.bw_mbps * 1e6  # a Topo of the user's own: every link
                        lines += host_shaping_lines(intf.name, rate,
                                                    self.fair_queue or 0,
                                                    self.queue_packets or 100)
                path = os.path.join(self.workdir, f"host-queues-{h.name}.tc")
                with open(path, "w") as f:
                    f.write("\n".join(lines) + "\n")
                out = h.cmd(f"tc -batch {path}; echo rc=$?").strip()
                if not out.endswith("rc=0"):
                    raise EmulationError(f"host shaping: tc -batch {path} on {h.name}: "
                                         f"{out[:300]}")
        if self.rto_min_ms is not None:
            for h in self.net.hosts:
                intf = h.defaultIntf()
                # a Topo of the user's own: Mininet's address plan (its ipBase's prefix)
                prefix = getattr(self.topo, "prefix_len", None) or \
                    int(self.net.ipBase.split("/")[1])
                net = ipaddress.ip_network(f"{h.IP()}/{prefix}", strict=False)
                out = h.cmd(f"ip route replace {net} dev {intf.name} "
                            f"proto kernel scope link src {h.IP()} "
                            f"rto_min {self.rto_min_ms:g}ms")
                if out.strip():
                    raise EmulationError(f"rto_min_ms: ip route on {h.name}: {out.strip()}")
        if self.tsq_bytes is not None:
            for h in self.net.hosts:  # a per-namespace sysctl
                out = h.cmd(f"sysctl -q -w net.ipv4.tcp_limit_output_bytes={self.tsq_bytes}")
                if out.strip():
                    raise EmulationError(f"tsq_bytes: sysctl on {h.name}: {out.strip()}")

    def static_route_rules(self) -> Dict[str, List[str]]:
        """Destination-based forwarding without a controller, as ovs-ofctl flow specs.

        For every switch and host: ``ip,nw_dst=IP,actions=output:PORT`` towards the first
        (lexicographically smallest) shortest path, one path per destination, no ECMP.
        Used only with ``start_controller=False``.
        """
        import networkx as nx

        g = self.definition.graph
        out: Dict[str, List[str]] = {}
        for s in self.definition.switches:
            rules = []
            for h in self.definition.hosts:
                path = min(nx.all_shortest_paths(g, s, h))
                rules.append(f"priority=10,ip,nw_dst={g.nodes[h]['ip']},"
                             f"actions=output:{g.edges[path[0], path[1]]['port']}")
            out[s] = rules
        return out

    def install_static_routes(self) -> None:
        """Install :meth:`static_route_rules` with ``ovs-ofctl add-flows`` (one call per switch).

        Raises:
            EmulationError: ovs-ofctl failed.
        """
        for s, rules in self.static_route_rules().items():
            r = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "add-flows", s, "-"],
                               input="\n".join(rules) + "\n", capture_output=True, text=True)
            if r.returncode != 0:
                raise EmulationError(f"ovs-ofctl add-flows {s}: {r.stderr.strip()}")

    def _start_ryu(self) -> None:
        conf = os.path.join(self.workdir, "controller.conf")
        with open(conf, "w") as fh:
            fh.write(controller_config(
                self.topology, self.scheduler,
                None if self.bw_mbps is None else self.bw_mbps * 1e6,
                (f"unix:{self.agent_dir}/{{ip}}.sock" if self.mn_topo is not None else
                 f"unix:{self.agent_dir}/{{host}}.sock") if self.enforce else "",
                # the controller's database lives in the run's folder: a
                # restarted controller of this run reloads it, another run never does
                dict({"state_db": os.path.join(self.workdir, "controller.sqlite3")},
                     **(self.controller_opts or {}))))
        env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        cmd = [_venv_bin("rapier-controller"), "--config-file", conf,
               "--ofp-tcp-listen-port", str(self.of_port),
               "--wsapi-port", str(self.rest_port)]
        if self.observe_links:
            cmd.insert(1, "--observe-links")
        LOG.info("starting %s", " ".join(cmd))
        self.ryu = subprocess.Popen(cmd, stdout=self._log("ryu.log"), stderr=subprocess.STDOUT,
                                    env=env, cwd=REPO, start_new_session=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.ryu.poll() is not None:
                raise EmulationError(f"the controller (rapier-controller) exited with "
                                     f"{self.ryu.returncode}; see "
                                     f"{self.workdir}/ryu.log:\n{self._tail('ryu.log')}")
            try:
                st, _ = client.request(self.rest, "GET", REST_PREFIX + "/topology", timeout=2)
                if st == 200:
                    return
            except OSError:
                pass
            time.sleep(0.3)
        raise EmulationError(f"controller REST {self.rest} did not answer within 30 s; "
                             f"see {self.workdir}/ryu.log")

    def _tail(self, name: str, n: int = 20) -> str:
        try:
            with open(os.path.join(self.workdir, name)) as fh:
                return "".join(fh.readlines()[-n:])
        except OSError:
            return ""

    def _wait_switches_connected(self, timeout_s: float = 30.0) -> None:
        """Wait until the controller's /health counts every configured switch connected
        (with ``mn_topo``: every switch Mininet built, and the fabric stable, see
        :meth:`wait_fabric`)."""
        if self.mn_topo is not None:
            self.wait_fabric(timeout_s)
            return
        deadline = time.time() + timeout_s
        obj = None
        while time.time() < deadline:
            if self.ryu is not None and self.ryu.poll() is not None:
                raise EmulationError(f"ryu-manager exited with {self.ryu.returncode}:\n"
                                     f"{self._tail('ryu.log')}")
            try:
                st, obj = client.request(self.rest, "GET", REST_PREFIX + "/health", timeout=2)
                if st == 200 and obj["switches_connected"] >= obj["switches_configured"]:
                    return
            except (OSError, KeyError, TypeError):
                pass
            time.sleep(0.3)
        raise EmulationError(f"switches did not all connect to the controller within "
                             f"{timeout_s} s (last /health: {obj})")

    def wait_fabric(self, timeout_s: float = 30.0, hosts: int = 0) -> dict:
        """Wait until every switch Mininet built is connected, LLDP saw every
        inter-switch cable of ``mn_topo`` (both directions) and the controller calls
        its fabric stable (``/health``: ``fabric`` ``stable``, or ``declared``), with at
        least ``hosts`` hosts learnt.  Returns the last ``GET /topology``.

        Raises:
            EmulationError: not so within ``timeout_s`` seconds (names the last state).
        """
        cables = sum(1 for u, v in self.topo.links()
                     if self.topo.isSwitch(u) and self.topo.isSwitch(v))
        deadline = time.time() + timeout_s
        last = None
        while time.time() < deadline:
            if self.ryu is not None and self.ryu.poll() is not None:
                raise EmulationError(f"ryu-manager exited with {self.ryu.returncode}:\n"
                                     f"{self._tail('ryu.log')}")
            try:
                st, topo = client.request(self.rest, "GET", REST_PREFIX + "/topology", timeout=2)
                disc = topo["observed"]["discovery"]
                last = {k: disc.get(k) for k in ("state", "links_present")}
                last["connected"] = len(topo["observed"]["connected"])
                last["hosts"] = len(disc["hosts"])
                if st == 200 and last["connected"] >= len(self.net.switches) \
                        and disc["links_present"] >= 2 * cables \
                        and disc["state"] in ("stable", "declared") and last["hosts"] >= hosts:
                    return topo
            except (OSError, KeyError, TypeError):
                pass
            time.sleep(0.3)
        raise EmulationError(f"fabric not stable within {timeout_s} s (expected "
                             f"{len(self.net.switches)} switches, {cables} cables, "
                             f"{hosts} hosts; last: {last}); see {self.workdir}/ryu.log")

    def learn_definition(self, timeout_s: float = 30.0):
        """Wait for a stable fabric with every Mininet host learnt (:meth:`wait_fabric`)
        and make the controller's discovered topology :attr:`definition` (the
        topology file of ``GET /topology/file``, read back with
        :func:`topologies.topofile.loads_topology`).  Returns it."""
        from topologies.topofile import loads_topology

        self.wait_fabric(timeout_s, hosts=len(self.net.hosts))
        st, saved = client.request(self.rest, "GET", REST_PREFIX + "/topology/file", timeout=5)
        if st != 200:
            raise EmulationError(f"GET /topology/file: {st} {saved}")
        self.definition = loads_topology(saved["file"], "GET /topology/file")
        return self.definition

    def _start_agents(self) -> None:
        os.makedirs(self.agent_dir, exist_ok=True)
        env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        for h in self.net.hosts:
            sock = self.agent_url(h.name)[len("unix:"):]
            # no --iface: the agent finds the host's only interface in its namespace
            cmd = [sys.executable, "-m", "enforcement.agent", "--listen", f"unix:{sock}"]
            if not self.enforce:
                cmd.append("--no-enforce")
            self.agents[h.name] = h.popen(cmd, stdout=self._log(f"agent-{h.name}.log"),
                                          stderr=subprocess.STDOUT, env=env, cwd=REPO)
        deadline = time.time() + 20
        pending = set(self.agents)
        while pending and time.time() < deadline:
            for h in sorted(pending):
                if self.agents[h].poll() is not None:
                    raise EmulationError(f"agent on {h} exited with {self.agents[h].returncode}:"
                                         f"\n{self._tail(f'agent-{h}.log')}")
                try:
                    if client.request(self.agent_url(h), "GET", "/v1/health", timeout=1)[0] == 200:
                        pending.discard(h)
                except OSError:
                    pass
            time.sleep(0.1)
        if pending:
            raise EmulationError(f"agents did not answer within 20 s: {sorted(pending)}")

    def stop(self) -> None:
        """Stop everything started, by PID, in reverse order; never raises."""
        for p in self.transfers:
            _quiet(stop_pid, p, "transfer", 2.0)
        self.transfers = []
        for h, p in sorted(self.agents.items()):
            _quiet(stop_pid, p, f"agent {h}", 5.0)
        self.agents = {}
        if self.ryu is not None:
            _quiet(stop_pid, self.ryu, "ryu-manager", 5.0)
            self.ryu = None
        if self.net is not None:
            _quiet(self.net.stop)
            self.net = None
        _quiet(_cleanup_leftovers, self.topo)
        _quiet(self.ovs.stop)
        for fh in self._logs:
            _quiet(fh.close)
        self._logs = []

    # -- REST helpers --------------------------------------------------------------
    def submit(self, body: dict, wait_decided_s: float = 10.0) -> dict:
        """POST a coflow to the controller; returns the reply.

        The controller answers 201 once the coflow is stored and decides after the
        reply (its decision worker: ``coflow.decision`` is ``queued`` until
        then); with ``wait_decided_s`` > 0 this polls ``GET /coflows/<id>`` every 5 ms
        until the decision is taken *and* its flows' limits are in force on the hosts
        (``coflow.rates`` is ``applied``: each source host's agent acknowledged a set
        holding them).  Senders released earlier would run unshaped until their HTB class
        exists (an agent passes unknown flows at line rate): measured 20-40 ms after
        the decision, a head start of about 35 KB per flow that the model has not
        (mininet_tests/README.md, "Unshaped starts").

        Raises:
            EmulationError: not 201, or not decided and applied after ``wait_decided_s``.
        """
        st, obj = client.request(self.rest, "POST", REST_PREFIX + "/coflows", body, timeout=30)
        if st != 201:
            raise EmulationError(f"POST /coflows {body.get('id')}: {st} {obj}")

        def ready(view: dict) -> bool:
            # placed by the scheduler: not queued, nor provisional (admitted on ECMP
            # paths at leftover rates until the scheduler places it)
            return view.get("decision") not in ("queued", "provisional") and \
                view.get("rates", "applied") == "applied"

        if wait_decided_s > 0 and not ready(obj.get("coflow", {})):
            deadline = time.time() + wait_decided_s
            while True:
                view = self.coflow_state(obj["id"])
                if view is not None and ready(view):
                    obj = {"id": obj["id"], "coflow": view}
                    break
                if time.time() > deadline:
                    raise EmulationError(f"coflow {obj['id']} not decided with its rates "
                                         f"in force after {wait_decided_s} s")
                time.sleep(0.005)
        return obj

    def coflow_state(self, cid: str) -> Optional[dict]:
        """GET /coflows/<id> (None on error)."""
        try:
            st, obj = client.request(self.rest, "GET", f"{REST_PREFIX}/coflows/{cid}", timeout=5)
            return obj if st == 200 else None
        except OSError:
            return None

    # -- traffic ---------------------------------------------------------------------
    def start_receiver(self, host: str, port: int, nbytes: int, out: str) -> subprocess.Popen:
        """Start a receiver of exactly ``nbytes`` bytes on ``host``:``port``; its stdout
        is a pipe carrying one ``done ...`` line when it has every byte."""
        p = self.node(host).popen([sys.executable, "-m", "mininet_tests.transfer", "recv",
                                  "--port", str(port), "--bytes", str(nbytes), "--out", out],
                                 cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.transfers.append(p)
        return p

    def start_sender(self, host: str, dst_ip: str, port: int, nbytes: int,
                     out: str, go: str) -> subprocess.Popen:
        """Start a sender of exactly ``nbytes`` bytes from ``host`` to ``dst_ip:port``.

        It connects at once (``--preconnect``: the handshake is outside the flow's
        time) and sends only once released through ``go`` (a FIFO made by
        :meth:`run_coflows`, or a file to appear; see :func:`transfer.send`).
        """
        p = self.node(host).popen([sys.executable, "-m", "mininet_tests.transfer", "send",
                                  "--dst", dst_ip, "--port", str(port), "--bytes", str(nbytes),
                                  "--out", out, "--go", go, "--preconnect"]
                                 + (["--cc", self.tcp_cc] if self.tcp_cc else []),
                                 cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.transfers.append(p)
        return p

    def _record_schedule(self, timeline: List[dict], t: float) -> None:
        """Append the controller's allocations to ``timeline`` when they changed."""
        try:
            st, sch = client.request(self.rest, "GET", REST_PREFIX + "/schedule", timeout=2)
        except OSError:
            return
        if st != 200 or not isinstance(sch, dict):
            return
        alloc = {fid: {"path": a.get("path"), "rate_bps": a.get("rate_bps")}
                 for fid, a in sorted((sch.get("allocations") or {}).items())}
        if not timeline or timeline[-1]["allocations"] != alloc:
            timeline.append({"t_s": t, "allocations": alloc})

    def _release(self, c, procs: Dict[str, tuple], t0: float) -> CoflowResult:
        """Submit coflow ``c`` (if there is a controller) and release its senders;
        returns its result record with the arrival (s from ``t0``)."""
        arrival = time.time() - t0
        decided = None
        if self.start_controller:
            self.submit({"id": c.coflow_id, "flows": [
                {"src": f.src, "dst": f.dst, "size_bytes": procs[f.flow_id][3],
                 "dst_port": f.dst_port} for f in c.flows]})
            decided = time.time() - t0
        for f in c.flows:
            _release_go(procs[f.flow_id][2] + ".go")
        return CoflowResult(c.coflow_id, arrival, None, None, decided_s=decided)

    def report_done(self, coflow_id: str, index: int) -> Optional[bool]:
        """Tell the controller flow ``index`` of ``coflow_id`` has every byte
        (``POST /coflows/<id>/flows/<index>/done``).

        Returns:
            The controller's ``finished`` (False: it had already closed the flow from
            its flow statistics, or refused the report with a 4xx, logged), or None
            when the controller could not be reached or answered 5xx (logged; the
            caller queues the report and sends it again, :data:`REPORT_RETRY_S`).
        """
        try:
            st, obj = client.request(
                self.rest, "POST", f"{REST_PREFIX}/coflows/{coflow_id}/flows/{index}/done",
                None, timeout=5)
        except OSError as exc:
            LOG.warning("report of %s/%d failed: %s", coflow_id, index, exc)
            return None
        if st != 200:
            LOG.warning("report of %s/%d: %s %s", coflow_id, index, st, obj)
            return None if st >= 500 else False
        return bool(obj.get("finished"))

    def warm_up(self) -> float:
        """Submit and cancel a throw-away coflow (id ``warmup``) before the clock starts.

        The controller's first scheduling call is much slower than the next ones
        (imports and solver set-up: 0.8 s against 15 ms measured); without this, the
        first coflow's submission would delay the coflows that arrive with it, and the
        emulated scenario would no longer be the simulated one.  No packet is sent.

        Returns:
            Seconds the warm-up submission took.

        Raises:
            EmulationError: the controller refused the submission or the cancel.
        """
        h = self.definition.hosts
        t = time.time()
        self.submit({"id": "warmup", "flows": [{"src": h[0], "dst": h[-1],
                                                "size_bytes": 1_000_000, "dst_port": 9}]})
        took = time.time() - t
        st, obj = client.request(self.rest, "DELETE", f"{REST_PREFIX}/coflows/warmup", timeout=30)
        if st != 200:
            raise EmulationError(f"DELETE /coflows/warmup: {st} {obj}")
        return took

    def run_coflows(self, coflows: Sequence, timeout_s: float = 300.0,
                    monitor: Optional[Callable[[float], None]] = None,
                    warm_up: bool = True, report_done: bool = True) -> RunResult:
        """Run coflows (``CoflowSpec`` objects) and measure their CCTs.

        Before the clock starts, one receiver and one (waiting) sender per flow are
        started; ``(dst, dst_port)`` must therefore be unique over the workload.  Then
        each coflow, at its ``arrival_s`` (seconds from the start), is submitted over
        REST and its senders are released.  Flow sizes are rounded to whole bytes.
        Arrival is the submission time; a flow finishes when its receiver has every
        byte; CCT = last flow's finish - arrival.

        ``monitor(elapsed_s)``, if given, is called about every 50 ms while flows run
        (tests use it to read rules and rates back during the transfers).  With
        ``warm_up`` (and a controller), :meth:`warm_up` runs before the clock starts.
        With ``report_done`` (and a controller) each flow is reported finished to the
        controller as soon as its receiver announces its last byte
        (:meth:`report_done`); otherwise the controller finds out from its
        flow-statistics poll.  Arrivals and completions are handled in one loop, so
        a completion is reported at once also while later coflows are still to come.

        Returns:
            RunResult with per-flow and per-coflow times (seconds from the start).

        Raises:
            EmulationError: missing or duplicate ``(dst, dst_port)``, a failed
                submission or transfer, or ``timeout_s`` passed before every flow
                finished.
        """
        g = self.definition.graph
        order = sorted(coflows, key=lambda c: (c.arrival_s, c.coflow_id))
        tdir = tempfile.mkdtemp(prefix="transfers-", dir=self.workdir)
        seen: Dict[tuple, str] = {}
        for c in order:
            for f in c.flows:
                if f.dst_port is None:
                    raise EmulationError(f"dst_port: flow {f.flow_id} has none")
                key = (f.dst, f.dst_port)
                if key in seen:
                    raise EmulationError(f"dst_port: flows {seen[key]} and {f.flow_id} both "
                                         f"use {f.dst}:{f.dst_port}")
                seen[key] = f.flow_id
        procs: Dict[str, tuple] = {}
        for c in order:
            for f in c.flows:
                n = int(round(f.size_bytes))
                base = os.path.join(tdir, f.flow_id.replace("/", "_"))
                rp = self.start_receiver(f.dst, f.dst_port, n, base + ".recv.json")
                os.mkfifo(base + ".go")
                sp = self.start_sender(f.src, g.nodes[f.dst]["ip"], f.dst_port, n,
                                       base + ".send.json", base + ".go")
                procs[f.flow_id] = (rp, sp, base, n)
        for fid, (rp, sp, base, _) in procs.items():
            _wait_file(base + ".recv.json.ready", 30.0, rp)
            _wait_file(base + ".send.json.armed", 30.0, sp)
        if warm_up and self.start_controller:
            LOG.info("controller warm-up submission took %.3f s", self.warm_up())
        index = {f.flow_id: (c.coflow_id, n) for c in order for n, f in enumerate(c.flows)}
        sel = selectors.DefaultSelector()
        for fid, (rp, _, _, _) in procs.items():
            sel.register(rp.stdout, selectors.EVENT_READ, fid)
        t0 = time.time()
        results: List[CoflowResult] = []
        arrivals = list(order)
        deadline = t0 + timeout_s
        pending = dict(procs)
        reported: Dict[str, float] = {}
        unreported: Dict[str, float] = {}  # flow id -> next attempt (controller away)
        timeline: List[dict] = []
        next_poll = 0.0

        def report(fid: str) -> None:
            # a report the controller did not get (down, restarting) is queued and
            # sent again until it answers: a restarted controller learns it then
            if self.report_done(*index[fid]) is None:
                unreported[fid] = time.time() + REPORT_RETRY_S
            else:
                unreported.pop(fid, None)
                reported[fid] = time.time() - t0

        def receiver_line(fid: str, fileobj) -> None:
            # a receiver's one line: "done <bytes> <t>" -> report the flow finished
            line = fileobj.readline().decode(errors="replace").split()
            sel.unregister(fileobj)
            if (report_done and self.start_controller and len(line) == 3
                    and line[0] == "done" and int(line[1]) == procs[fid][3]):
                report(fid)

        try:
            while pending or unreported:
                if not pending:  # every byte in: send the queued reports, then stop
                    if time.time() > deadline:
                        LOG.warning("reports never accepted: %s", sorted(unreported))
                        break
                    time.sleep(min(REPORT_RETRY_S, max(min(unreported.values())
                                                       - time.time(), 0.0)))
                for fid in [f for f, t in unreported.items() if t <= time.time()]:
                    report(fid)
                if not pending:
                    continue
                now = time.time()
                while arrivals and t0 + arrivals[0].arrival_s <= now:
                    c = arrivals.pop(0)
                    results.append(self._release(c, procs, t0))
                    now = time.time()
                wait = 0.05 if not arrivals else \
                    min(0.05, max(t0 + arrivals[0].arrival_s - now, 0.0))
                for key, _ in sel.select(wait):
                    receiver_line(key.data, key.fileobj)
                for fid in list(pending):
                    rp = pending[fid][0]
                    if rp.poll() is None:
                        continue
                    if fid not in reported and rp.stdout in sel.get_map():
                        # it exited between the select and the poll: its line is in
                        # the pipe still (without this its flow was never reported,
                        # and the controller kept the coflow active)
                        receiver_line(fid, rp.stdout)
                    if rp.returncode != 0:
                        raise EmulationError(f"flow {fid}: receiver exited {rp.returncode}: "
                                             f"{rp.stderr.read().decode(errors='replace')[-500:]}")
                    del pending[fid]
                if not pending:
                    continue
                if time.time() > deadline:
                    raise EmulationError(f"flows {sorted(pending)}: not finished within "
                                         f"{timeout_s} s (see {tdir})")
                if monitor is not None:
                    monitor(time.time() - t0)
                if self.start_controller and time.time() >= next_poll:
                    next_poll = time.time() + SCHEDULE_POLL_S
                    self._record_schedule(timeline, time.time() - t0)
        finally:
            sel.close()
        if self.start_controller:
            self._record_schedule(timeline, time.time() - t0)
        wall = time.time() - t0
        by_id = {c.coflow_id: c for c in results}
        for c in order:
            cr = by_id[c.coflow_id]
            for f in c.flows:
                rp, sp, base, n = procs[f.flow_id]
                _quiet(sp.wait, 5.0)
                r = _read_json(base + ".recv.json")
                s = _read_json(base + ".send.json") or {}
                fin = r["done_s"] - t0
                start = s.get("start_s")
                got = [[round(t - t0, 4), b] for t, b in r.get("samples", [])]
                cr.flows.append(FlowResult(f.flow_id, c.coflow_id, f.src, f.dst, f.dst_port, n,
                                           r["bytes"], None if start is None else start - t0,
                                           fin, fin - cr.arrival_s, got,
                                           reported.get(f.flow_id)))
            cr.finish_s = max(fl.finish_s for fl in cr.flows)
            cr.cct_s = cr.finish_s - cr.arrival_s
            if self.start_controller:
                cr.controller = self.coflow_state(c.coflow_id)
        for p in list(self.transfers):
            _quiet(stop_pid, p, "transfer", 2.0)
        self.transfers = []
        res = RunResult(self.scheduler, results, wall, timeline, t0)
        with open(os.path.join(self.workdir, "result.json"), "w") as fh:
            json.dump(res.to_dict(), fh, indent=1)
        return res


def byte_compile(packages: Sequence[str] = ("rapier_app", "topologies", "enforcement",
                                            "mininet_tests")) -> None:
    """Byte-compile this checkout's ``packages`` (``compileall``; files whose
    ``.pyc`` is up to date are skipped), as ``scripts/install.sh`` does, so that
    ryu-manager and the agents read ``__pycache__`` instead of compiling every
    module at each start: with ``PYTHONDONTWRITEBYTECODE`` set, or a checkout the
    process cannot write, Python compiles them in memory every time (about 0.2 s of
    CPU per controller start, which a restart waits for)."""
    import compileall

    for pkg in packages:
        compileall.compile_dir(os.path.join(REPO, pkg), quiet=1)


def _release_go(path: str) -> None:
    """Release the sender waiting on the FIFO ``path`` (:func:`transfer.wait_go`):
    open it for writing (the sender, armed, holds the read end) and close it.

    Raises:
        EmulationError: no reader on the FIFO within 5 s (the sender died).
    """
    deadline = time.time() + 5.0
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:  # ENXIO: the sender has not opened its end yet
            if exc.errno != errno.ENXIO or time.time() > deadline:
                raise EmulationError(f"{path}: cannot release the sender: {exc}") from exc
            time.sleep(0.005)
    try:
        os.write(fd, b"g")
    finally:
        os.close(fd)


def _wait_file(path: str, timeout_s: float, proc: Optional[subprocess.Popen] = None) -> None:
    """Wait for ``path`` to exist; EmulationError on timeout or if ``proc`` died."""
    deadline = time.time() + timeout_s
    while not os.path.exists(path):
        if proc is not None and proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace")[-500:] if proc.stderr else ""
            raise EmulationError(f"{path}: process exited {proc.returncode} first: {err}")
        if time.time() > deadline:
            raise EmulationError(f"{path}: not ready within {timeout_s} s")
        time.sleep(0.02)


def _read_json(path: str) -> Optional[dict]:
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _quiet(fn, *args) -> None:
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001 - cleanup path: log and continue
        LOG.warning("cleanup step %s failed: %s", getattr(fn, "__name__", fn), exc)
