"""A read-back handled while a switch's batch is taken from its outbox but not yet
sent (its flow mods being built: the writer yields every 32 messages, or builds a
large batch in a native thread) repairs nothing: the table it shows may predate the
batch.  Seen on Mininet (benchmarks/controller_burst_emulated.py --flows 4: 13 rules
"wrong" repaired in one of three runs, the switches equal to the view after)."""


from rapier_app.controller.stack import ofproto_v1_3_parser as parser

from rapier_app.controller import ofmsgs

from test_controller_barrier import connect, flow, make_app  # noqa: I100
from test_controller_worker_reconcile import read_back, want_view


def test_read_back_during_a_batch_being_built_repairs_nothing(monkeypatch):
    app = make_app(reconcile_interval_s=0.0)
    sw = connect(app)
    for dp in sw.values():
        dp.answer()
    app.submit({"id": "a", "flows": [flow("h1", "h5", port=5001)]})
    app.submit({"id": "b", "flows": [flow("h2", "h6", port=5002)]})
    for dp in sw.values():
        dp.answer()
    app.poll_once()  # every switch is asked for its table (due after connecting)
    for dp in sw.values():
        assert any(isinstance(m, parser.OFPFlowStatsRequest) for m in dp.log)
    first_hop = sw[app.core.coflows["a"].flows[0].path[1]]
    replied = []
    build = ofmsgs.message_for

    def building(dp, item, idle):
        # the hub runs the switch's stats reply while the cancel's batch is built
        if dp is first_hop and not replied:
            replied.append(dp.id)
            read_back(app, dp)
        return build(dp, item, idle)

    monkeypatch.setattr(ofmsgs, "message_for", building)
    app.cancel("a")
    assert replied == [first_hop.id]
    counts = app.core.reconcile_counts
    # the table still held a's rule (its delete not sent yet): not counted stale
    assert (counts["missing"], counts["wrong"], counts["stale"]) == (0, 0, 0)
    assert counts["skipped"] == 1 and first_hop.id in app._reconcile_due
    # the next round, with the batch sent and confirmed, compares and finds nothing
    first_hop.answer()
    monkeypatch.setattr(ofmsgs, "message_for", build)
    app.poll_once()
    read_back(app, first_hop)
    assert (counts["missing"], counts["wrong"], counts["stale"]) == (0, 0, 0)
    assert counts["rounds"] >= 1 and first_hop.table == want_view(app, first_hop.id)
