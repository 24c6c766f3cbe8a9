"""The fair-queueing stage of the emulated switch ports (issue 13), as tc lines:
buckets hashed on the TCP destination port under Mininet's shaping class.  Pure:
no tc is run here (tests/emulation/test_network_tuning.py runs it)."""

import re

import pytest

from mininet_tests.switchq import (INNER_RATE_FACTOR, SwitchQueueError, fair_queue_lines,
                                   host_shaping_lines)


def test_tree_for_four_buckets():
    lines = fair_queue_lines("s1-eth2", 10e6, buckets=4, limit_packets=25)
    assert lines[0] == "qdisc replace dev s1-eth2 parent 5:1 handle 10: htb default 10"
    inner = int(10e6 * INNER_RATE_FACTOR)
    assert f"classid 10:1 htb rate {inner}bit ceil {inner}bit" in lines[1]
    classes = [l for l in lines if l.startswith("class add") and "parent 10:1 " in l]
    # classids in hex (tc reads minors as hex): 0x10..0x13; equal shares of 11 Mbit/s
    assert [re.search(r"classid (\S+)", l).group(1) for l in classes] == \
        ["10:10", "10:11", "10:12", "10:13"]
    assert all(f"rate {inner // 4}bit ceil {inner}bit" in l for l in classes)
    fifos = [l for l in lines if l.startswith("qdisc add")]
    assert len(fifos) == 4 and all(l.endswith("pfifo limit 25") for l in fifos)
    # the hash: low 2 bits of the destination port (the low half of the word at 20)
    hash_line = next(l for l in lines if "hashkey" in l)
    assert "hashkey mask 0x00000003 at 20 link 2:" in hash_line
    assert "match ip protocol 6 0xff" in hash_line
    buckets = [l for l in lines if " ht 2:" in l]
    assert [re.search(r"ht 2:(\w+):", l).group(1) for l in buckets] == ["0", "1", "2", "3"]
    assert [l.split()[-1] for l in buckets] == ["10:10", "10:11", "10:12", "10:13"]
    # the default class (unhashed traffic: ARP, non-TCP) is bucket 0's
    assert "default 10" in lines[0]


def test_32_buckets_hex_minors_and_mask():
    lines = fair_queue_lines("x", 1e9, buckets=32)
    assert any("classid 10:2f htb" in l for l in lines)
    assert any("hashkey mask 0x0000001f" in l for l in lines)
    assert lines[-1].endswith("flowid 10:2f") and " ht 2:1f: " in lines[-1]
    assert len(lines) == 2 + 2 * 32 + 2 + 32


@pytest.mark.parametrize("kw, field", [({"buckets": 3}, "buckets"),
                                       ({"buckets": 512}, "buckets"),
                                       ({"buckets": 1}, "buckets"),
                                       ({"rate_bps": 0}, "rate_bps"),
                                       ({"limit_packets": 0}, "limit_packets"),
                                       ({"limit_packets": 2.5}, "limit_packets")])
def test_bad_parameters_named(kw, field):
    args = {"dev": "x", "rate_bps": 1e6, "buckets": 4, "limit_packets": 10}
    args.update(kw)
    with pytest.raises(SwitchQueueError, match=field):
        fair_queue_lines(**args)


def test_host_shaping_puts_the_link_rate_above_the_queue():
    lines = host_shaping_lines("h1-eth0", 10e6, 0, 50)
    assert lines == ["qdisc replace dev h1-eth0 root handle 5: htb default 1",
                     "class add dev h1-eth0 parent 5: classid 5:1 htb rate 10000000bit "
                     "ceil 10000000bit",
                     "qdisc add dev h1-eth0 parent 5:1 handle 10: pfifo limit 50"]
    fq = host_shaping_lines("h1-eth0", 10e6, 4, 50)
    assert fq[:2] == lines[:2]
    assert fq[2:] == fair_queue_lines("h1-eth0", 10e6, 4, 50)


@pytest.mark.parametrize("kw, field", [({"rate_bps": 0}, "rate_bps"),
                                       ({"limit_packets": 0}, "limit_packets"),
                                       ({"buckets": 3}, "buckets")])
def test_host_shaping_bad_parameters_named(kw, field):
    args = {"dev": "h1-eth0", "rate_bps": 10e6, "buckets": 0, "limit_packets": 100}
    args.update(kw)
    with pytest.raises(SwitchQueueError, match=field):
        host_shaping_lines(**args)
