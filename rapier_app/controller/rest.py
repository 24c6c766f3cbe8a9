"""REST API of the RAPIER controller on Ryu's WSGI server (JSON everywhere).

Endpoints (prefix ``/rapier/v1``), in the style of Ryu's ``ofctl_rest.py``:

    POST   /rapier/v1/coflows          body {"flows": [{"src": "h1", "dst": "h5",
                                        "size_bytes": 52428800, "dst_port": 5001}],
                                        "id": optional, "weight": optional}
                                        -> 201 {"id": ..., "coflow": {...}}
    GET    /rapier/v1/coflows          -> 200 {"coflows": [{...}, ...]}
    GET    /rapier/v1/coflows/<id>     -> 200 {...} (state active/done/cancelled;
                                        per flow path, rate_bps, bytes_sent, finish_s;
                                        cct_s once done)
    DELETE /rapier/v1/coflows/<id>     -> 200 {...} (cancelled: rules and limits gone)
    GET    /rapier/v1/topology         -> 200 configured topology + what Ryu observed
    GET    /rapier/v1/schedule         -> 200 the schedule in force
    GET    /rapier/v1/health           -> 200 {"ok": true, ...}

Errors are answered in one place (:func:`rest_method`): bad input gives 400 and an
unknown id 404, with ``{"error": "field: message", "field": field}``; an internal
error gives 500 with the exception text.  Bad input changes nothing (the core
validates before it mutates).

The controller object behind the routes (``data[APP_KEY]``) needs ``core``
(:class:`~.core.ControllerCore`), ``submit(body) -> view``, ``cancel(id) -> view``
and ``observed() -> dict``; the Ryu app provides them, tests may pass the app
built in-process.
"""

from __future__ import annotations

import functools
import json
import logging

from .compat import ensure_eventlet_compat

ensure_eventlet_compat()

from ryu.app.wsgi import ControllerBase, Response, route  # noqa: E402

from .core import RequestError  # noqa: E402

LOG = logging.getLogger(__name__)

PREFIX = "/rapier/v1"
APP_KEY = "rapier_controller"
ID_REQ = {"coflow_id": r"[^/]+"}


def json_response(status: int, body) -> Response:
    """A JSON response with ``status``."""
    return Response(status=status, content_type="application/json",
                    body=json.dumps(body).encode("utf-8"))


def rest_method(method):
    """Decorator: turn ``(status, body)`` into JSON and errors into 400/404/500."""

    @functools.wraps(method)
    def wrapper(self, req, **kwargs):
        try:
            status, body = method(self, req, **kwargs)
        except RequestError as exc:
            LOG.info("REST %s %s: %s %s", req.method, req.path, exc.status, exc)
            return json_response(exc.status, exc.to_json())
        except Exception as exc:  # noqa: BLE001 -- report, never kill the server
            LOG.exception("REST %s %s failed", req.method, req.path)
            return json_response(500, {"error": f"internal error: {exc!r}", "field": None})
        return json_response(status, body)

    return wrapper


class RapierRestController(ControllerBase):
    """Ryu WSGI controller for the coflow API (see the module docstring)."""

    def __init__(self, req, link, data, **config):
        super().__init__(req, link, data, **config)
        self.app = data[APP_KEY]

    @route("rapier", PREFIX + "/coflows", methods=["POST"])
    @rest_method
    def post_coflow(self, req, **_kwargs):
        """Register a coflow and reschedule; 201 with its id and state."""
        view = self.app.submit(req.body)
        return 201, {"id": view["id"], "coflow": view}

    @route("rapier", PREFIX + "/coflows", methods=["GET"])
    @rest_method
    def list_coflows(self, req, **_kwargs):
        """Every coflow (active, done, cancelled) in arrival order."""
        return 200, {"coflows": self.app.core.coflows_view()}

    @route("rapier", PREFIX + "/coflows/{coflow_id}", methods=["GET"], requirements=ID_REQ)
    @rest_method
    def get_coflow(self, req, coflow_id, **_kwargs):
        """One coflow; 404 for an unknown id."""
        return 200, self.app.core.coflow_view(coflow_id)

    @route("rapier", PREFIX + "/coflows/{coflow_id}", methods=["DELETE"], requirements=ID_REQ)
    @rest_method
    def delete_coflow(self, req, coflow_id, **_kwargs):
        """Cancel a coflow; 404 unknown id, 400 when already done or cancelled."""
        return 200, self.app.cancel(coflow_id)

    @route("rapier", PREFIX + "/topology", methods=["GET"])
    @rest_method
    def get_topology(self, req, **_kwargs):
        """Configured topology, hosts' attachment points, observed switches/links."""
        return 200, self.app.core.topology_view(self.app.observed())

    @route("rapier", PREFIX + "/schedule", methods=["GET"])
    @rest_method
    def get_schedule(self, req, **_kwargs):
        """The schedule in force (paths and rates per flow, fallbacks, solve time)."""
        return 200, self.app.core.schedule_view()

    @route("rapier", PREFIX + "/health", methods=["GET"])
    @rest_method
    def get_health(self, req, **_kwargs):
        """Liveness: scheduler, topology and number of connected switches."""
        core = self.app.core
        return 200, {"ok": True, "scheduler": core.settings.scheduler,
                     "topology": core.settings.topology,
                     "switches_connected": len(self.app.observed().get("connected", [])),
                     "switches_configured": len(core.topology.switches)}
