"""Proxy ARP as pure bytes: parse an ARP request, build the reply (RFC 826).

The controller answers ARP for the topology's hosts itself, so ARP is never flooded
on fabrics with loops.  Ethernet + IPv4 only, no VLAN.
"""

from __future__ import annotations

import socket
import struct
from typing import Optional, Tuple

from .rules import ETH_TYPE_ARP, ETH_TYPE_IP


def _mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def _mac_str(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def parse_arp_request(frame: bytes) -> Optional[Tuple[str, str, str]]:
    """Parse an Ethernet ARP request (IPv4 over Ethernet, no VLAN).

    Returns:
        (sender MAC, sender IP, target IP), or None for anything else (ARP replies,
        non-ARP frames, truncated frames).
    """
    if len(frame) < 42:
        return None
    eth_type, = struct.unpack("!H", frame[12:14])
    if eth_type != ETH_TYPE_ARP:
        return None
    htype, ptype, hlen, plen, oper = struct.unpack("!HHBBH", frame[14:22])
    if (htype, ptype, hlen, plen, oper) != (1, ETH_TYPE_IP, 6, 4, 1):
        return None
    sha, spa, tpa = frame[22:28], frame[28:32], frame[38:42]
    return _mac_str(sha), socket.inet_ntoa(spa), socket.inet_ntoa(tpa)


def build_arp_reply(requester_mac: str, requester_ip: str, target_mac: str,
                    target_ip: str) -> bytes:
    """An ARP reply frame (42 bytes) telling ``requester`` that ``target_ip`` is at
    ``target_mac`` (RFC 826)."""
    eth = _mac_bytes(requester_mac) + _mac_bytes(target_mac) + struct.pack("!H", ETH_TYPE_ARP)
    arp = struct.pack("!HHBBH", 1, ETH_TYPE_IP, 6, 4, 2) + _mac_bytes(target_mac) + \
        socket.inet_aton(target_ip) + _mac_bytes(requester_mac) + socket.inet_aton(requester_ip)
    return eth + arp
