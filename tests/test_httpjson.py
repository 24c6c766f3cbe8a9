"""The HTTP/JSON helpers shared by the controller's REST API and the host agent
(:mod:`rapier_app.httpjson`): short quotes, the request error, bearer tokens."""

import pytest

from enforcement import agent, tc
from rapier_app.controller import rest, settings, validation
from rapier_app.errors import RapierError
from rapier_app.httpjson import TOKEN_RE, RequestError, bearer_ok, require_bearer, short

TOKEN = "s3cret-token-for-tests-0123"


def test_short_cuts_long_and_deep_values():
    assert short("abc") == "'abc'"
    long = short("x" * 1000)
    assert len(long) <= 64 and long.startswith("'xxx") and "..." in long
    assert short([[[["deep"]]]]) == "[[[...]]]"
    assert short(10 ** 100) == "1000000000...00000000000"
    assert short("y" * 50, 20) == "'" + "y" * 19 + "..."

    class Bad:
        def __repr__(self):
            raise RuntimeError("no repr")

    assert short(Bad()).startswith("<Bad")  # a failing repr never fails the error path


def test_request_error_is_a_project_value_error_with_status_and_field():
    exc = RequestError(413, "flows[2].rate_bps", "too large")
    assert isinstance(exc, RapierError) and isinstance(exc, ValueError)
    assert (exc.status, exc.field, exc.message) == (413, "flows[2].rate_bps", "too large")
    assert exc.to_json() == {"error": "flows[2].rate_bps: too large",
                             "field": "flows[2].rate_bps"}


@pytest.mark.parametrize("header, ok", [
    (f"Bearer {TOKEN}", True), (f"bearer {TOKEN}", True), (f"BEARER  {TOKEN} ", True),
    ("", False), (TOKEN, False), (f"Basic {TOKEN}", False), (f"Bearer {TOKEN}x", False),
    (f"Bearer {TOKEN[:-1]}", False), ("Bearer \xe9\u20ac", False), ("Bearer", False)])
def test_bearer_ok(header, ok):
    assert bearer_ok(header, TOKEN) is ok
    if ok:
        require_bearer(header, TOKEN)
    else:
        with pytest.raises(RequestError) as ei:
            require_bearer(header, TOKEN)
        assert (ei.value.status, ei.value.field) == (401, "authorization")


@pytest.mark.parametrize("token, ok", [(TOKEN, True), ("a" * 16, True), ("a" * 15, False),
                                       ("A-._~+/0123456789==", True), ("a" * 16 + " ", False),
                                       ("a" * 16 + "=x", False), ("\xe9" * 20, False)])
def test_token_form(token, ok):
    assert bool(TOKEN_RE.fullmatch(token)) is ok


def test_controller_and_agent_share_the_helpers():
    """One definition: the REST layer and the agent raise and quote with the same
    objects, so an agent error and a controller error have one shape."""
    for mod in (validation, rest, tc, agent):
        assert mod.RequestError is RequestError and mod.short is short
    assert settings.TOKEN_RE is TOKEN_RE and agent.TOKEN_RE is TOKEN_RE
    with pytest.raises(RequestError) as ei:
        tc.parse_flow_set({"flows": "x"})
    assert ei.value.status == 400 and ei.value.field == "flows"


def test_agent_errors_have_the_controllers_shape():
    """Every 4xx of the agent's router is ``{"error": "field: message", "field": ...}``,
    as the controller's REST API answers."""
    enf = agent.Enforcer("h1-eth0", runner=lambda cmd: None)
    for method, path, body, status, field in [
            ("GET", "/v2/flows", None, 404, "path"), ("POST", "/v1/flows", b"{}", 405, "method"),
            ("GET", "/v1/flows/x", None, 404, "flow_id"), ("PUT", "/v1/flows", b"[", 400, "body"),
            ("PUT", "/v1/flows", b'{"flows": [{}, {}]}', 413, "flows")]:
        st, obj = agent.handle(enf, method, path, body, max_flows=1)
        assert (st, obj["field"]) == (status, field) and obj["error"].startswith(field + ": ")
