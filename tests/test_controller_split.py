"""The pure pieces the controller core was split into: the rule diff and the push
book, on hand-made inputs."""

from rapier_app.controller.pushes import FAILED, AgentPush, PushBook, flow_limit
from rapier_app.controller.rules import FlowRule, diff_rules, tcp_match


def rule(dpid, port, fid):
    return FlowRule(dpid, 100, tcp_match("10.0.0.1", "10.0.0.2", 5001), (("output", port),),
                    7, "add", fid)


def test_diff_rules_adds_and_modifies_first_then_deletes():
    a1, b1, c1 = rule(1, 1, "a"), rule(2, 1, "b"), rule(3, 1, "c")
    installed = {(1, "a"): a1, (2, "b"): b1, (3, "c"): c1}
    desired = {(4, "d"): rule(4, 2, "d"),     # new
               (2, "b"): rule(2, 3, "b"),     # moved to port 3: modify
               (1, "a"): a1}                  # unchanged: nothing
    out = diff_rules(installed, desired)
    assert [(r.dpid, r.flow_id, r.command) for r in out] == [
        (4, "d", "add"), (2, "b", "modify"), (3, "c", "delete")]
    assert out[1].actions == (("output", 3),) and out[2].actions == (("output", 1),)
    assert diff_rules(desired, desired) == []


def test_push_book_pushes_changes_only_and_retries_failures():
    book = PushBook(lambda h: f"unix:/tmp/{h}.sock")
    lim_a = flow_limit("c1/0", "10.0.0.1", "10.0.0.5", 5001, 2.6)   # 2.6 bit/s -> 3
    lim_b = flow_limit("c1/1", "10.0.0.2", "10.0.0.6", 5002, 0.0)   # floor 1 bit/s
    assert lim_a["rate_bps"] == 3 and lim_b["rate_bps"] == 1
    first = book.update({"h2": [lim_b], "h1": [lim_a]})
    assert [(p.host, p.url, [d["flow_id"] for d in p.flows]) for p in first] == [
        ("h1", "unix:/tmp/h1.sock", ["c1/0"]), ("h2", "unix:/tmp/h2.sock", ["c1/1"])]
    assert book.update({"h2": [lim_b], "h1": [lim_a]}) == []        # nothing changed
    gone = book.update({"h1": [lim_a]})                              # h2 lost its flow
    assert [(p.host, p.flows) for p in gone] == [("h2", [])] and "h2" not in book.pushed
    book.failed("h1")
    assert book.pushed["h1"] == FAILED
    again = book.retry()
    assert [(p.host, p.flows) for p in again] == [("h1", [lim_a])]
    assert book.retry() == [] and book.update({"h1": [lim_a]}) == []
    assert isinstance(again[0], AgentPush) and again[0].body() == (
        b'{"flows": [{"flow_id": "c1/0", "src_ip": "10.0.0.1", "dst_ip": "10.0.0.5", '
        b'"proto": "tcp", "dst_port": 5001, "rate_bps": 3}]}')

