"""Register coflows with the RAPIER coflow-aware SDN controller.

Standard library only.  Blocking (:class:`Controller`, :class:`Coflow`) and asyncio
(:class:`AsyncController`, :class:`AsyncCoflow`) clients of the controller's REST API
(``/rapier/v1``: open coflows, flows added as connections open, close, done).

Example (a shuffle's server side registers each accepted connection before sending)::

    from rapier_client import Controller

    ctl = Controller("http://127.0.0.1:8080")
    with ctl.coflow(name="shuffle-0") as cf:
        conn, _ = listener.accept()
        cf.register_socket(conn, size_bytes=len(partition))
        conn.sendall(partition)
"""

from ._common import Flow
from .aio import AsyncCoflow, AsyncController
from .errors import (BadRequest, Conflict, ControllerUnavailable, NotFound,
                     RapierClientError, RequestRefused, Unauthorized)
from .sync import Coflow, Controller

__version__ = "0.1.0"
__all__ = ["Controller", "Coflow", "AsyncController", "AsyncCoflow", "Flow",
           "RapierClientError", "RequestRefused", "BadRequest", "Unauthorized", "NotFound",
           "Conflict", "ControllerUnavailable", "__version__"]
