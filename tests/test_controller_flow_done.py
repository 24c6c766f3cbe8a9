"""Tests of the receivers' completion report (issue 13):
``POST /rapier/v1/coflows/<id>/flows/<n>/done`` closes a flow at the report's arrival
instead of at the next flow-statistics poll.  In-process, no root (as
tests/test_controller_app.py)."""

import pytest

from test_controller_app import app, call, connect_all, flow, ofproto_v1_3  # noqa: F401

MB = 1 << 20


def test_report_closes_the_flow_then_the_coflow_and_removes_its_rules(app):  # noqa: F811
    dps = connect_all(app)
    st, _ = call(app, "POST", "/rapier/v1/coflows",
                 {"id": "a", "flows": [flow("h1", "h5", 10 * MB, 5001),
                                       flow("h2", "h6", 10 * MB, 5002)]})
    assert st == 201
    path0 = call(app, "GET", "/rapier/v1/coflows/a")[1]["flows"][0]["path"]
    for dp in dps.values():
        dp.sent.clear()
    st, body = call(app, "POST", "/rapier/v1/coflows/a/flows/0/done")
    assert st == 200 and body["finished"] is True
    flows = body["coflow"]["flows"]
    assert body["coflow"]["state"] == "active"
    assert flows[0]["finish_s"] is not None and flows[0]["bytes_sent"] == 10 * MB
    assert flows[1]["finish_s"] is None
    # the finished flow's rules are deleted on its path (nothing waits for a poll)
    for s in path0[1:-1]:
        cmds = [m.command for m in dps[s].sent if hasattr(m, "command")]
        assert ofproto_v1_3.OFPFC_DELETE_STRICT in cmds
    # a repeated report changes nothing
    st, body = call(app, "POST", "/rapier/v1/coflows/a/flows/0/done")
    assert st == 200 and body["finished"] is False
    st, body = call(app, "POST", "/rapier/v1/coflows/a/flows/1/done")
    assert st == 200 and body["finished"] is True
    c = body["coflow"]
    assert c["state"] == "done"
    assert c["cct_s"] == pytest.approx(max(f["finish_s"] for f in c["flows"])
                                       - c["arrival_s"])
    # after the coflow is done: accepted, nothing changes
    st, body = call(app, "POST", "/rapier/v1/coflows/a/flows/1/done")
    assert st == 200 and body["finished"] is False


@pytest.mark.parametrize("path, status, field", [
    ("/rapier/v1/coflows/zz/flows/0/done", 404, "coflow_id"),
    ("/rapier/v1/coflows/a/flows/2/done", 400, "index"),
    ("/rapier/v1/coflows/a/flows/-1/done", 400, "index"),
    ("/rapier/v1/coflows/a/flows/x/done", 400, "index"),
    ("/rapier/v1/coflows/a%20b/flows/0/done", 400, "id"),
])
def test_bad_reports_name_the_field_and_change_nothing(app, path, status, field):  # noqa: F811
    connect_all(app)
    call(app, "POST", "/rapier/v1/coflows",
         {"id": "a", "flows": [flow("h1", "h5", MB, 5001), flow("h2", "h6", MB, 5002)]})
    st, body = call(app, "POST", path)
    assert (st, body["field"]) == (status, field)
    c = call(app, "GET", "/rapier/v1/coflows/a")[1]
    assert c["state"] == "active" and all(f["finish_s"] is None for f in c["flows"])


def test_get_on_the_done_path_is_not_found_or_not_allowed(app):  # noqa: F811
    st, _ = call(app, "GET", "/rapier/v1/coflows/a/flows/0/done")
    assert st in (404, 405)



def test_without_stats_completion_only_the_report_finishes_a_flow():
    """``stats_completion = false``: counters showing every byte (and then standing
    still past the idle rule) close nothing; bytes_sent stops one slack (1448 bytes)
    below the size; the receiver's report closes the flow."""
    from types import SimpleNamespace


    import rapier_app.controller as controller_pkg
    from rapier_app.controller.rules import cookie_for
    from rapier_app.controller.settings import Settings

    a = controller_pkg.RapierController(rapier_settings=Settings(
        scheduler="rapier", topology="leafspine:3,3,3", agent_url="",
        stats_completion=False))
    dps = connect_all(a)
    size = 1448 * 100
    assert call(a, "POST", "/rapier/v1/coflows", {"id": "a", "flows": [flow(size=size)]})[0] == 201
    stat = SimpleNamespace(cookie=cookie_for(1), byte_count=101 * 66 + 101 * 1448,
                           packet_count=101)
    a.flow_stats_reply(SimpleNamespace(msg=SimpleNamespace(datapath=dps["l1"], body=[stat],
                                                           flags=0)))
    with a._lock:
        a.core.check_idle(a.now() + 100.0)
    c = call(a, "GET", "/rapier/v1/coflows/a")[1]
    assert c["state"] == "active" and c["flows"][0]["bytes_sent"] == size - 1448
    st, body = call(a, "POST", "/rapier/v1/coflows/a/flows/0/done")
    assert st == 200 and body["finished"] is True and body["coflow"]["state"] == "done"


def test_stats_completion_must_be_a_bool():
    from rapier_app.controller.settings import Settings, SettingsError

    with pytest.raises(SettingsError, match="stats_completion"):
        Settings(stats_completion="no").validate()
