"""REST API of the RAPIER controller (JSON everywhere), a WSGI application
(:mod:`.wsgiapp`) served by :mod:`.httpserver`.

Endpoints (prefix ``/rapier/v1``), in the style of Ryu's ``ofctl_rest.py``:

    POST   /rapier/v1/coflows          body {"flows": [{"src": "h1", "dst": "h5",
                                        "size_bytes": 52428800, "dst_port": 5001}],
                                        "id": optional, "weight": optional,
                                        "name": optional, "open": optional bool}
                                        (FLOW: src, dst, protocol tcp|udp,
                                        src_port and/or dst_port, size_bytes or
                                        null) -> 201 {the coflow's view,
                                        "coflow": {the same}}
                                        (stored; decided after the reply:
                                        coflow.decision queued|provisional|scheduled|fallback;
                                        flows left out above 100 flows)
    GET    /rapier/v1/coflows          -> 200 {"coflows": [{...}, ...], "total": N,
                                        "offset", "limit", "next_offset"}
                                        ?limit= (default 50) &offset=&state=active|
                                        done|cancelled|finished &flows=1 (with
                                        flows; default: summaries) (docs/api.md)
    GET    /rapier/v1/coflows/<id>     -> 200 {...} (state active/done/cancelled;
                                        per flow path, rate_bps, bytes_sent, finish_s;
                                        cct_s once done)
    DELETE /rapier/v1/coflows/<id>     -> 200 {...} (cancelled: rules and limits gone)
    POST   /rapier/v1/coflows/<id>/flows
                                        body {"flows": [FLOW, ...]} -> 201 {"id",
                                        "open", "flows": [{"index": n, ...}]} (an
                                        open coflow, :mod:`.openflows`; 409 closed
                                        or ended, 409 overlapping a live flow)
    POST   /rapier/v1/coflows/<id>/close -> 200 {...} ("open": false; idempotent)
    POST   /rapier/v1/coflows/<id>/flows/<n>/done
                                        -> 200 {"finished": bool, "coflow": {...}}
                                        (a receiver has every byte of flow n; no
                                        body; done now, not at the next stats poll)
    GET    /rapier/v1/topology         -> 200 the topology in force + what Ryu observed
                                        (observed.discovery: mode, state, switches,
                                        hosts, differences, missing links)
    GET    /rapier/v1/topology/file    -> 200 {"name", "state", "file": topology-file
                                        text, "topology": {...}} (pin a discovered
                                        fabric: topology = file:PATH)
    GET    /rapier/v1/schedule         -> 200 the schedule in force
    GET    /rapier/v1/summary          -> 200 {"now_s", "scheduler", "counts": {state: n},
                                        "ccts_s": [...]} (cheap; for the dashboard)
    GET    /rapier/v1/dashboard        -> 200 the live dashboard (HTML; its files under
                                        /rapier/v1/dashboard/<name>, :mod:`.dashboard`);
                                        ``GET /`` redirects there
    GET    /metrics                    -> 200 Prometheus text format (:mod:`.metrics`)
    GET    /rapier/v1/health           -> 200 {"ok": true, "status": ok|discovering|
                                        degraded, "differences": [...], ...}

``HEAD`` works wherever ``GET`` does (same status and headers, no body).  Any other
method on these paths is 405 (JSON, with ``Allow``); any other path under the prefix
is a JSON 404.

Errors are answered in one place (:func:`rest_method`) as
``{"error": "field: message", "field": field}``: 400 bad input (naming the field,
quoting at most 64 characters of it), 401 a mutating call without the configured
bearer token, 404 an unknown id, 409 a conflict (flows added to a closed coflow, a
flow overlapping a live one), 413 a body above ``max_body_bytes`` or more than
``max_flows_per_coflow`` flows.  An unexpected exception is 500 with no detail in the
reply (the traceback goes to the log only).  Bad input changes nothing (everything is
validated before the core mutates).  Ids in URLs must match
:data:`~.validation.COFLOW_ID_PATTERN`.

Security (``docs/operations.md``): :func:`configure_listeners` makes REST
and OpenFlow listen on 127.0.0.1 unless configured otherwise, and refuses a REST
address off loopback without ``rest_token``; with a token, POST/PUT/DELETE need
``Authorization: Bearer <token>`` (:func:`rapier_app.httpjson.require_bearer`).

The controller object behind the routes (``data[APP_KEY]``) needs ``core``
(:class:`~.core.ControllerCore`, whose ``settings`` give the token and the caps),
``submit(body) -> view``, ``cancel(id) -> view`` and ``observed() -> dict``; the Ryu
app provides them, tests may pass the app built in-process.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
from typing import Any, Dict, Optional

from ..httpjson import RequestError, require_bearer, short
from .jsonslices import dumps_sliced
from .settings import Settings, SettingsError
from .validation import check_coflow_id, check_flow_count, decode_json_body
from .wsgiapp import ControllerBase, Response, WSGIApplication, route

LOG = logging.getLogger(__name__)

PREFIX = "/rapier/v1"
APP_KEY = "rapier_controller"
ID_REQ = {"coflow_id": r"[^/]+"}
FLOW_REQ = {"coflow_id": r"[^/]+", "index": r"[^/]+"}
#: Methods that change state: they need the bearer token when one is configured.
MUTATING = frozenset({"POST", "PUT", "DELETE", "PATCH"})
#: Ryu's defaults for --wsapi-host and --ofp-listen-host (meaning "not given").
RYU_DEFAULT_HOST = "0.0.0.0"
#: Where REST and OpenFlow listen unless configured.
DEFAULT_HOST = "127.0.0.1"


# -- listen addresses --------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (127.0.0.0/8, ::1); False for
    anything else, including ``0.0.0.0``, ``""`` and other host names."""
    h = (host or "").strip().strip("[]")
    if h.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def listen_addresses(settings: Settings, wsapi_host: str = RYU_DEFAULT_HOST,
                     ofp_listen_host: str = RYU_DEFAULT_HOST) -> Dict[str, str]:
    """Where REST and OpenFlow listen: ``{"rest_host": ..., "ofp_host": ...}``.

    Precedence for each: Ryu's command-line flag when given with a value other than
    its default ``0.0.0.0`` (``--wsapi-host``, ``--ofp-listen-host``), else the config
    option (``rest_host``, ``ofp_host``), else :data:`DEFAULT_HOST` (loopback).  To
    listen on every interface, set the option to ``0.0.0.0``.

    Raises:
        SettingsError: REST off loopback without ``rest_token`` (names ``rest_token``).
    """
    def pick(flag: str, option: Optional[str]) -> str:
        if flag is not None and flag != RYU_DEFAULT_HOST:
            return flag
        return option if option is not None else DEFAULT_HOST

    rest_host = pick(wsapi_host, settings.rest_host)
    ofp_host = pick(ofp_listen_host, settings.ofp_host)
    if not is_loopback(rest_host) and not settings.rest_token:
        raise SettingsError(f"rest_token: required when REST listens off loopback "
                            f"(rest_host/--wsapi-host = {rest_host!r}); set rest_token or "
                            f"listen on {DEFAULT_HOST}")
    return {"rest_host": rest_host, "ofp_host": ofp_host}


def configure_listeners(conf, settings: Settings, log: Optional[logging.Logger] = None
                        ) -> Dict[str, str]:
    """Apply :func:`listen_addresses` (and ``rest_port``) to the stack's oslo.config
    ``conf`` (``wsapi_host``, ``wsapi_port``, ``ofp_listen_host``), before they are bound.

    Called from the app's ``__init__``: the app starts its REST server in ``start``
    and the stack's OpenFlow listener starts after every app is built, so the
    overrides take effect.

    Returns:
        the addresses, as :func:`listen_addresses`.

    Raises:
        SettingsError: as :func:`listen_addresses` (the controller does not start).
    """
    from . import stack  # noqa: F401 -- its import registers the listen options
    for name in ("wsapi_host", "ofp_listen_host"):  # read the flags, not our last override
        conf.clear_override(name)
    addrs = listen_addresses(settings, getattr(conf, "wsapi_host", RYU_DEFAULT_HOST),
                             getattr(conf, "ofp_listen_host", RYU_DEFAULT_HOST))
    if settings.rest_port is not None and conf.wsapi_port == 8080:
        conf.set_override("wsapi_port", settings.rest_port)
    conf.set_override("wsapi_host", addrs["rest_host"])
    conf.set_override("ofp_listen_host", addrs["ofp_host"])
    if log is not None:
        log.info("REST listens on %s:%s (token %s), OpenFlow on %s", addrs["rest_host"],
                 conf.wsapi_port, "required on POST/DELETE" if settings.rest_token else "off",
                 addrs["ofp_host"])
        if not is_loopback(addrs["ofp_host"]):
            log.warning("OpenFlow listens off loopback on %s without authentication: "
                        "restrict it to the switches' management network (or use Ryu's "
                        "TLS options --ctl-privkey/--ctl-cert/--ca-certs)", addrs["ofp_host"])
    return addrs


# -- responses and the error boundary ----------------------------------------------------
def json_response(status: int, body, headers: Optional[Dict[str, str]] = None,
                  pause=None) -> Response:
    """A JSON response with ``status`` (and extra ``headers``); with ``pause``, a
    long body is encoded in slices, ``pause()`` between them
    (:func:`.jsonslices.dumps_sliced`: the event loop serves meanwhile)."""
    text = json.dumps(body) if pause is None else dumps_sliced(body, pause)
    resp = Response(status=status, content_type="application/json",
                    body=text.encode("utf-8"))
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


def safe_path(req) -> str:
    """The request path for logs: the raw ``PATH_INFO`` quoted and cut to 64
    characters (``req.path`` raises on non-UTF-8 percent-escapes)."""
    return short(req.environ.get("PATH_INFO", ""))


def _method(req) -> str:
    """The request method for messages (quoted and cut when it is not a plain word)."""
    m = req.method
    return m if m.isalpha() and len(m) <= 16 else short(m, 16)


def rest_method(method):
    """Decorator of the route handlers: the error boundary of the REST API.

    Before the handler: the bearer token for mutating methods (when ``rest_token`` is
    set) and the ``coflow_id`` of the URL (:func:`~.validation.check_coflow_id`).
    The handler returns ``(status, body)``, turned into JSON; :class:`RequestError`
    becomes its status (401 with ``WWW-Authenticate: Bearer``); any other exception a
    bare 500 (traceback in the log, not in the reply).
    """

    @functools.wraps(method)
    def wrapper(self, req, **kwargs):
        try:
            settings = self.app.core.settings
            if req.method in MUTATING and settings.rest_token:
                require_bearer(req.environ.get("HTTP_AUTHORIZATION", ""), settings.rest_token)
            if "coflow_id" in kwargs:
                kwargs["coflow_id"] = check_coflow_id(kwargs["coflow_id"])
            status, body = method(self, req, **kwargs)
        except RequestError as exc:
            LOG.info("REST %s %s: %s %s", _method(req), safe_path(req), exc.status,
                     exc)
            headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
            return json_response(exc.status, exc.to_json(), headers)
        except Exception:  # noqa: BLE001 -- report, never kill the server
            LOG.exception("REST %s %s failed", _method(req), safe_path(req))
            return json_response(500, {"error": "internal error (see the controller log)",
                                       "field": None})
        return json_response(status, body, pause=getattr(self.app, "encode_pause", None))

    return wrapper


def read_body(req, max_bytes: int) -> bytes:
    """The request body, at most ``max_bytes`` bytes.

    A ``Content-Length`` above the cap is refused before anything is read.

    Raises:
        RequestError: 413 naming ``body``.
    """
    length = req.content_length
    if length is not None and length > max_bytes:
        raise RequestError(413, "body", f"larger than {max_bytes} bytes "
                                        f"(Content-Length {length})")
    data = req.body_file.read(max_bytes + 1) if length is None else req.body
    if len(data) > max_bytes:
        raise RequestError(413, "body", f"larger than {max_bytes} bytes")
    return data


def _not_allowed(path: str, allowed: str):
    """A handler answering 405 for ``path`` (``allowed``: the methods it has)."""

    def handler(self, req, **_kwargs):
        return json_response(405, {"error": f"method: {_method(req)} not allowed "
                                            f"on {path} (allowed: {allowed})",
                                   "field": "method"}, {"Allow": allowed})

    handler.__doc__ = f"405 for methods other than {allowed} on {path}."
    return handler


_OTHER = ["POST", "PUT", "DELETE", "PATCH"]


def _metrics_response(core) -> Response:
    """``GET /metrics``: the core's :class:`~.metrics.CoreMetrics` exposition (a bare
    JSON 500 if collecting fails, the traceback in the log)."""
    from prometheus_client import CONTENT_TYPE_LATEST

    try:
        body = core.metrics.exposition()
    except Exception:  # noqa: BLE001 -- report, never kill the server
        LOG.exception("REST GET /metrics failed")
        return json_response(500, {"error": "internal error (see the controller log)",
                                   "field": None})
    resp = Response(status=200, body=body)
    resp.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return resp


def _asset_response(name: str) -> Response:
    """A dashboard file (:func:`.dashboard.asset`) with its content type and
    :data:`.dashboard.HEADERS`; a JSON 404 for any name not in
    :data:`.dashboard.ASSETS`."""
    from . import dashboard

    try:
        body, ctype = dashboard.asset(name)
    except RequestError as exc:
        LOG.info("REST GET dashboard file: %s %s", exc.status, exc)
        return json_response(exc.status, exc.to_json())
    resp = Response(status=200, body=body)
    resp.headers["Content-Type"] = ctype
    for k, v in dashboard.HEADERS.items():
        resp.headers[k] = v
    return resp


def make_wsgi(app) -> WSGIApplication:
    """The REST API's WSGI application for the controller ``app`` (the object the
    module docstring describes)."""
    wsgi = WSGIApplication()
    wsgi.register(RapierRestController, {APP_KEY: app})
    return wsgi


class RapierRestController(ControllerBase):
    """The coflow API's routes (see the module docstring)."""

    def __init__(self, req, link, data, **config):
        super().__init__(req, link, data, **config)
        self.app = data[APP_KEY]

    @route("rapier", PREFIX + "/coflows", methods=["POST"])
    @rest_method
    def post_coflow(self, req, **_kwargs):
        """Register a coflow; 201 with its id and state once it is validated and
        written to the database (413 above the body or flow caps, 400 for bad input).
        The coflow is admitted on its ECMP paths at leftover rates before the reply
        (``coflow.decision`` ``provisional``, :mod:`.admission`); the scheduler places
        it after the reply, in the decision worker (see
        :meth:`~.app.RapierController.submit`)."""
        settings = self.app.core.settings
        body = decode_json_body(read_body(req, settings.max_body_bytes))
        check_flow_count(body, settings.max_flows_per_coflow)
        view = self.app.submit(body)
        return 201, {**view, "coflow": view}

    @route("rapier", PREFIX + "/coflows/{coflow_id}/flows", methods=["POST"],
           requirements=ID_REQ)
    @rest_method
    def post_coflow_flows(self, req, coflow_id, **_kwargs):
        """Add flows to an open coflow: 201 ``{"id", "open", "flows": [...]}`` (the
        flows added, with their new ``index``); 404 unknown coflow, 409 closed or
        ended coflow or a flow overlapping a live flow, 400 bad input, 413 caps."""
        settings = self.app.core.settings
        body = decode_json_body(read_body(req, settings.max_body_bytes))
        check_flow_count(body, settings.max_flows_per_coflow)
        return 201, self.app.add_flows(coflow_id, body)

    @route("rapier", PREFIX + "/coflows/{coflow_id}/close", methods=["POST"],
           requirements=ID_REQ)
    @rest_method
    def post_coflow_close(self, req, coflow_id, **_kwargs):
        """Close a coflow (no more flows; idempotent): 200 its view (``open``
        false); 404 unknown coflow.  The body must be empty or ``{}``."""
        raw = read_body(req, self.app.core.settings.max_body_bytes)
        if raw.strip():
            body = decode_json_body(raw)
            if body != {}:
                raise RequestError(400, "body", "must be empty or {}")
        return 200, self.app.close_coflow(coflow_id)

    @route("rapier", PREFIX + "/coflows", methods=["GET", "HEAD"])
    @rest_method
    def list_coflows(self, req, **_kwargs):
        """Coflows in arrival order, a page at a time: ``?limit=`` (1..page_limit,
        default 50), ``?offset=`` (>= 0), ``?state=`` (active, done, cancelled,
        finished; comma-separated), ``?flows=1`` (full views with their flows;
        default ``0``: each coflow's summary); 400 naming a bad parameter: a value
        out of range (``offset`` has at most 9 digits), a parameter given twice or
        one this call does not take."""
        try:
            items = list(req.GET.items())
        except UnicodeDecodeError:
            raise RequestError(400, "query", "is not UTF-8") from None
        query: Dict[str, str] = {}
        for name, raw in items:
            if name not in ("limit", "offset", "state", "flows"):
                raise RequestError(400, name, "unknown query parameter (limit, offset, "
                                              "state, flows)")
            if name in query:
                raise RequestError(400, name, "given more than once")
            query[name] = raw
        cap = self.app.core.settings.page_limit
        args = {}
        for name, lo, hi in (("limit", 1, cap), ("offset", 0, 999_999_999)):
            raw = query.get(name)
            if raw is not None:
                if not (raw.isascii() and raw.isdigit() and len(raw) <= 9
                        and lo <= int(raw) <= hi):
                    raise RequestError(400, name, f"must be an integer {lo}..{hi}")
                args[name] = int(raw)
        flows = query.get("flows", "0")
        if flows not in ("0", "1"):
            raise RequestError(400, "flows", "must be 0 or 1")
        return 200, self.app.coflows_page(query.get("state"), flows=flows == "1", **args)

    @route("rapier", PREFIX + "/coflows/{coflow_id}", methods=["GET", "HEAD"],
           requirements=ID_REQ)
    @rest_method
    def get_coflow(self, req, coflow_id, **_kwargs):
        """One coflow; 404 for an unknown id (read under the app's lock: a POST that
        yields keeps it, so no half-added coflow is seen)."""
        with self.app._lock:
            return 200, self.app.core.coflow_view(coflow_id)

    @route("rapier", PREFIX + "/coflows/{coflow_id}", methods=["DELETE"], requirements=ID_REQ)
    @rest_method
    def delete_coflow(self, req, coflow_id, **_kwargs):
        """Cancel a coflow; 404 unknown id, 400 when already done or cancelled."""
        return 200, self.app.cancel(coflow_id)

    @route("rapier", PREFIX + "/coflows/{coflow_id}/flows/{index}/done", methods=["POST"],
           requirements=FLOW_REQ)
    @rest_method
    def post_flow_done(self, req, coflow_id, index, **_kwargs):
        """A receiver or host agent reports flow ``index`` (0-based, decimal) of the
        coflow complete: 200 ``{"finished": true}`` when this closed it,
        ``false`` when it was already done or the coflow is not active; 404 unknown
        coflow, 400 bad index."""
        check_coflow_id(coflow_id)
        if not (index.isascii() and index.isdigit() and len(index) <= 6):
            raise RequestError(400, "index", f"must be a flow index 0, 1, ..., got "
                                             f"{short(index)}")
        return 200, self.app.flow_done(coflow_id, int(index))

    @route("rapier", PREFIX + "/topology", methods=["GET", "HEAD"])
    @rest_method
    def get_topology(self, req, **_kwargs):
        """Configured topology, hosts' attachment points, observed switches/links."""
        return 200, self.app.core.topology_view(self.app.observed())

    @route("rapier", PREFIX + "/topology/file", methods=["GET", "HEAD"])
    @rest_method
    def get_topology_file(self, req, **_kwargs):
        """The topology in force as a topology file (to pin a discovered fabric)."""
        with self.app._lock:
            return 200, self.app.core.topology_file(self.app.now())

    @route("rapier", PREFIX + "/schedule", methods=["GET", "HEAD"])
    @rest_method
    def get_schedule(self, req, **_kwargs):
        """The schedule in force (paths and rates per flow, fallbacks, solve time)."""
        with self.app._lock:
            return 200, self.app.core.schedule_view()

    @route("rapier", PREFIX + "/summary", methods=["GET", "HEAD"])
    @rest_method
    def get_summary(self, req, **_kwargs):
        """Coflow counts by state and the CCTs of the done coflows in memory
        (:meth:`~.views.ViewsMixin.summary_view`): what the dashboard's CDF needs,
        without the flows of every coflow."""
        with self.app._lock:
            return 200, self.app.core.summary_view(self.app.now())

    @route("rapier", PREFIX + "/dashboard", methods=["GET", "HEAD"])
    def get_dashboard(self, req, **_kwargs):
        """The live dashboard's page (:mod:`.dashboard`); it only reads the other
        routes."""
        return _asset_response("index.html")

    @route("rapier", PREFIX + "/dashboard/{name}", methods=["GET", "HEAD"],
           requirements={"name": r"[\s\S]*"})
    def get_dashboard_file(self, req, name, **_kwargs):
        """One of the dashboard's files by name (:data:`.dashboard.ASSETS`); any
        other name, ``..`` and paths included, is a JSON 404 (``/dashboard/`` is
        the page)."""
        return _asset_response(name or "index.html")

    @route("rapier", "/", methods=["GET", "HEAD"])
    def get_root(self, req, **_kwargs):
        """``/``: a redirect (302) to the dashboard."""
        resp = Response(status=302)
        resp.headers["Location"] = PREFIX + "/dashboard"
        return resp

    @route("rapier", "/metrics", methods=["GET", "HEAD"])
    def get_metrics(self, req, **_kwargs):
        """Prometheus text format of the controller's metrics (:mod:`.metrics`), content
        type ``prometheus_client.CONTENT_TYPE_LATEST``.  Same rules as the other read
        routes (same listen address; the bearer token is needed for mutating methods
        only); errors as :func:`rest_method` (JSON)."""
        with self.app._lock:
            return _metrics_response(self.app.core)

    @route("rapier", PREFIX + "/health", methods=["GET", "HEAD"])
    @rest_method
    def get_health(self, req, **_kwargs):
        """Liveness, and the fabric's status: ``ok``, ``discovering`` (discover mode,
        not stable yet) or ``degraded`` (``differences`` from the declared topology)."""
        health = getattr(self.app, "health", None)
        if health is not None:
            return 200, health()
        core = self.app.core
        return 200, {"ok": True, "scheduler": core.settings.scheduler,
                     "topology": core.settings.topology,
                     "switches_connected": len(self.app.observed().get("connected", [])),
                     "switches_configured": len(core.topology.switches)}

    # -- 405 for the other methods of each path ----------------------------------------
    not_allowed_coflows = route("rapier", PREFIX + "/coflows", methods=["PUT", "DELETE", "PATCH"])(
        _not_allowed(PREFIX + "/coflows", "GET, HEAD, POST"))
    not_allowed_coflow = route("rapier", PREFIX + "/coflows/{coflow_id}",
                               methods=["POST", "PUT", "PATCH"], requirements=ID_REQ)(
        _not_allowed(PREFIX + "/coflows/<id>", "GET, HEAD, DELETE"))
    not_allowed_coflow_flows = route("rapier", PREFIX + "/coflows/{coflow_id}/flows",
                                     methods=["GET", "HEAD", "PUT", "DELETE", "PATCH"],
                                     requirements=ID_REQ)(
        _not_allowed(PREFIX + "/coflows/<id>/flows", "POST"))
    not_allowed_coflow_close = route("rapier", PREFIX + "/coflows/{coflow_id}/close",
                                     methods=["GET", "HEAD", "PUT", "DELETE", "PATCH"],
                                     requirements=ID_REQ)(
        _not_allowed(PREFIX + "/coflows/<id>/close", "POST"))
    not_allowed_topology = route("rapier", PREFIX + "/topology", methods=_OTHER)(
        _not_allowed(PREFIX + "/topology", "GET, HEAD"))
    not_allowed_topology_file = route("rapier", PREFIX + "/topology/file", methods=_OTHER)(
        _not_allowed(PREFIX + "/topology/file", "GET, HEAD"))
    not_allowed_schedule = route("rapier", PREFIX + "/schedule", methods=_OTHER)(
        _not_allowed(PREFIX + "/schedule", "GET, HEAD"))
    not_allowed_metrics = route("rapier", "/metrics", methods=_OTHER)(
        _not_allowed("/metrics", "GET, HEAD"))
    not_allowed_summary = route("rapier", PREFIX + "/summary", methods=_OTHER)(
        _not_allowed(PREFIX + "/summary", "GET, HEAD"))
    not_allowed_dashboard = route("rapier", PREFIX + "/dashboard", methods=_OTHER)(
        _not_allowed(PREFIX + "/dashboard", "GET, HEAD"))
    not_allowed_health = route("rapier", PREFIX + "/health", methods=_OTHER)(
        _not_allowed(PREFIX + "/health", "GET, HEAD"))

    # Last route of this controller (routes are registered in name order): a JSON 404
    # for any other path under the prefix (ids with "/", unknown resources).  New
    # routes under the prefix must be methods of this class named before "zz": a
    # controller registered after this one would be shadowed by the catch-all.
    @route("rapier", PREFIX + "/{rest_of_path}", requirements={"rest_of_path": r"[\s\S]*"})
    def zz_not_found(self, req, **_kwargs):
        """404 (JSON) for a path under the prefix that no route matches."""
        return json_response(404, {"error": f"path: no such resource "
                                            f"{safe_path(req)}", "field": "path"})


__all__ = ["APP_KEY", "DEFAULT_HOST", "PREFIX", "RapierRestController", "configure_listeners",
           "is_loopback", "json_response", "listen_addresses", "make_wsgi", "read_body",
           "rest_method", "safe_path"]
