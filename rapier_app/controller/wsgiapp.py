"""The REST layer's WSGI application: routes (the ``routes`` library) to controller
methods, requests and responses as WebOb objects; no OpenFlow stack.

The same routing as Ryu's ``ryu.app.wsgi`` (which the REST API used before it ran on
either stack): a controller class's methods are decorated with :func:`route`, the
class is registered on a :class:`WSGIApplication` with the data it needs, and each
request builds one controller object and calls the matched method as
``method(req, **url_variables)``.  Routes are connected in method-name order
(``inspect.getmembers``), so a catch-all route belongs on a method named last.  A
path that no route matches is WebOb's plain 404.

Served by :mod:`.httpserver` (native threads or eventlet, :mod:`.stack`), or called
directly with ``webob.Request.blank(...).get_response(app)`` (tests).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Optional

import webob
import webob.exc
from routes import Mapper

Response = webob.Response

__all__ = ["ControllerBase", "Response", "WSGIApplication", "route"]


def route(name: str, path: str, methods=None, requirements: Optional[Dict[str, str]] = None
          ) -> Callable[[Callable], Callable]:
    """Decorator: serve ``path`` (a ``routes`` template, ``{var}`` parts) with the
    method, for the HTTP ``methods`` (None: any), ``requirements`` a regular
    expression per URL variable."""

    def deco(method):
        method.routing_info = {"name": name, "path": path, "methods": methods,
                               "requirements": requirements or {}}
        return method

    return deco


class ControllerBase:
    """One request's controller: ``req``, the URL variables and the registered
    ``data`` (what :meth:`WSGIApplication.register` was given)."""

    #: URL variables that are routing, not method arguments.
    special_vars = ("action", "controller")

    def __init__(self, req, link, data, **config):
        self.req, self.link, self.data = req, link, data

    def __call__(self, req):
        kwargs = {k: v for k, v in req.urlvars.items() if k not in self.special_vars}
        return getattr(self, req.urlvars.get("action", "index"))(req, **kwargs)


class WSGIApplication:
    """The WSGI callable: ``app(environ, start_response)``."""

    def __init__(self) -> None:
        self.mapper = Mapper()
        self.registry: Dict[str, Any] = {}

    def register(self, controller: type, data: Any = None) -> None:
        """Connect every :func:`route` of ``controller`` (a :class:`ControllerBase`
        subclass), in method-name order; ``data`` is given to each instance."""
        for method_name, method in inspect.getmembers(controller, inspect.isfunction):
            info = getattr(method, "routing_info", None)
            if info is None:
                continue
            conditions = {"method": info["methods"]} if info["methods"] else {}
            self.mapper.connect(info["name"], info["path"], controller=controller,
                                requirements=info["requirements"], action=method_name,
                                conditions=conditions)
        if data is not None:
            self.registry[controller.__name__] = data

    def __call__(self, environ, start_response):
        req = webob.Request(environ)
        match = self.mapper.match(environ=environ)
        if not match:
            return webob.exc.HTTPNotFound()(environ, start_response)
        req.urlvars = match
        controller = match["controller"]
        obj = controller(req, None, self.registry.get(controller.__name__))
        resp = obj(req)
        return resp(environ, start_response)
