"""Switch-port queues of the emulated fabric, as ``tc -batch`` lines (no process run).

The flow model (the simulator, and RAPIER's baseline) shares a link max-min fairly
among the flows crossing it.  TCP over one tail-drop FIFO does not: measured here
with three BBR flows through a 10 Mbit/s port (a router namespace between sender and
receiver, pfifo of 100 packets), the flows got 0.88, 2.01 and 6.93 Mbit/s, and in
the fattree:4 emulation single ``baseline`` flows sat for 3-10 s in retransmission
timeouts behind full queues (mininet_tests/README.md).  :func:`fair_queue_lines`
puts a *fair-queueing stage* under Mininet's shaping class instead: packets are
hashed on their TCP destination port into ``buckets`` HTB classes of equal share
(one FIFO each), which HTB serves round robin, one quantum of 1514 bytes each.  The
same three flows then got 3.19 Mbit/s each.  This kernel has no ``sfq``,
``fq_codel`` or ``drr`` qdisc (``/work/shared/ENVIRONMENT.md``), hence HTB + u32.

Tree, under Mininet's ``TCIntf`` (root ``5:`` htb, class ``5:1`` at the link rate)::

    qdisc 10: htb default 10                       parent 5:1
      class 10:1 htb rate 1.1 R                    (never the limit: 5:1 shapes at R)
        class 10:<0x10 + b> htb rate 1.1 R / N ceil 1.1 R    b = 0 .. N-1
          qdisc pfifo limit <limit>
      filter u32 ht 800: TCP -> hash table 2: on (destination port & (N - 1))
      filter u32 ht 2:<b>: -> class 10:<0x10 + b>

Units: rates in bit/s.  Flows whose destination ports are equal modulo ``buckets``
share a bucket (the controller gives each flow its own port, so consecutive ports
spread over the buckets).
"""

from __future__ import annotations

from typing import List

from rapier_app.errors import RapierError

#: Default number of fair-queueing buckets per switch port (a power of two; u32 hash
#: tables hold at most 256).
DEFAULT_BUCKETS = 32
#: The inner HTB's rate as a multiple of the port's rate: above 1 so that Mininet's
#: class (at the port's rate) is the only shaper and the inner tree only orders.
INNER_RATE_FACTOR = 1.1
#: HTB quantum (bytes): one Ethernet frame, so round robin is per packet.
QUANTUM_BYTES = 1514


class SwitchQueueError(RapierError, ValueError):
    """Bad fair-queue parameters; the message names the parameter."""


def check_buckets(buckets: int) -> int:
    """``buckets`` if it is a power of two in 2..256 (a u32 hash table's sizes).

    Raises:
        SwitchQueueError: otherwise (the message names ``buckets``).
    """
    if not (isinstance(buckets, int) and 2 <= buckets <= 256 and buckets & (buckets - 1) == 0):
        raise SwitchQueueError(f"buckets: must be a power of two in 2..256, got {buckets!r}")
    return buckets


def fair_queue_lines(dev: str, rate_bps: float, buckets: int = DEFAULT_BUCKETS,
                     limit_packets: int = 100) -> List[str]:
    """The ``tc -batch`` lines that put the fair-queueing stage on ``dev``.

    Args:
        dev: the switch interface (already shaped by Mininet: class ``5:1``).
        rate_bps: the port's shaped rate, bit/s.
        buckets: number of hashed FIFOs, a power of two in 2..256.
        limit_packets: each FIFO's limit, packets.

    Returns:
        tc commands without the leading ``tc``, one per line, in order.

    Raises:
        SwitchQueueError: ``buckets``, ``rate_bps`` or ``limit_packets`` out of range.
    """
    check_buckets(buckets)
    if not rate_bps > 0:
        raise SwitchQueueError(f"rate_bps: must be positive, got {rate_bps!r}")
    if int(limit_packets) != limit_packets or limit_packets < 1:
        raise SwitchQueueError(f"limit_packets: must be a positive integer, got "
                               f"{limit_packets!r}")
    inner = int(rate_bps * INNER_RATE_FACTOR)
    share = max(1, inner // buckets)
    lines = [f"qdisc replace dev {dev} parent 5:1 handle 10: htb default 10",
             f"class add dev {dev} parent 10: classid 10:1 htb rate {inner}bit "
             f"ceil {inner}bit quantum {QUANTUM_BYTES}"]
    for b in range(buckets):
        cls = f"10:{0x10 + b:x}"
        lines.append(f"class add dev {dev} parent 10:1 classid {cls} htb rate {share}bit "
                     f"ceil {inner}bit quantum {QUANTUM_BYTES}")
        lines.append(f"qdisc add dev {dev} parent {cls} pfifo limit {int(limit_packets)}")
    lines.append(f"filter add dev {dev} parent 10: prio 1 handle 2: protocol ip u32 "
                 f"divisor {buckets}")
    # the 32-bit word at offset 20 of an option-less IP header is the TCP source and
    # destination ports; its low bits are the destination port's
    lines.append(f"filter add dev {dev} parent 10: prio 1 protocol ip u32 ht 800:: "
                 f"match ip protocol 6 0xff hashkey mask 0x{buckets - 1:08x} at 20 link 2:")
    for b in range(buckets):
        lines.append(f"filter add dev {dev} parent 10: prio 1 protocol ip u32 ht 2:{b:x}: "
                     f"match u32 0 0 flowid 10:{0x10 + b:x}")
    return lines


def host_shaping_lines(dev: str, rate_bps: float, buckets: int = 0,
                       limit_packets: int = 100) -> List[str]:
    """``tc -batch`` lines that shape a *host-side* interface at its link rate, as
    Mininet's ``TCLink`` shapes switch-side ones (root ``5:`` HTB, class ``5:1`` at
    ``rate_bps``), then queue it like a switch port: the fair-queueing stage of
    :func:`fair_queue_lines` with ``buckets`` > 0, else one ``pfifo`` of
    ``limit_packets``.

    Used when no host agent shapes the interface (``baseline``: ``--no-enforce``):
    without it a host's sending is bounded only by the next switch's egress ports, so
    a host sending to several destinations across faster fabric links (VL2's 10x
    ToR uplinks) is not held to its access link as the simulator holds it.

    Args:
        dev: the host's interface name (the commands run in the host's namespace).
        rate_bps: the access link's rate, bit/s.
        buckets: fair-queueing buckets (0: one FIFO).
        limit_packets: FIFO limit, packets.

    Returns:
        tc commands without the leading ``tc``, one per line, in order.

    Raises:
        SwitchQueueError: ``rate_bps``, ``buckets`` or ``limit_packets`` out of range.
    """
    if not rate_bps > 0:
        raise SwitchQueueError(f"rate_bps: must be positive, got {rate_bps!r}")
    if int(limit_packets) != limit_packets or limit_packets < 1:
        raise SwitchQueueError(f"limit_packets: must be a positive integer, got "
                               f"{limit_packets!r}")
    rate = int(rate_bps)
    lines = [f"qdisc replace dev {dev} root handle 5: htb default 1",
             f"class add dev {dev} parent 5: classid 5:1 htb rate {rate}bit ceil {rate}bit"]
    if buckets:
        return lines + fair_queue_lines(dev, rate_bps, buckets, limit_packets)
    return lines + [f"qdisc add dev {dev} parent 5:1 handle 10: pfifo limit "
                    f"{int(limit_packets)}"]
