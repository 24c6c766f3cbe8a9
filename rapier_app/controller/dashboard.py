"""The live dashboard's files (``GET /rapier/v1/dashboard`` and its assets).

Pure core: no Ryu.  The page (``static/index.html``) and its script and style sheet
ship in the package (``package_data``); nothing is fetched from elsewhere.  The
script reads the existing read routes once a second (``/topology``, ``/schedule``,
``/coflows?state=active``, ``/summary``) and changes nothing; see
``docs/operations.md`` (Dashboard).

Only the files named in :data:`ASSETS` are served: a name is looked up in that
table, never joined to a path from the request, so ``..``, ``/``, ``%2F`` or an
absolute path can reach no other file.
"""

from __future__ import annotations

import functools
import os
from typing import Dict, Tuple

from ..httpjson import RequestError, short

#: Folder of the dashboard's files in the package.
STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
#: The files served, by name, and their content types.
ASSETS: Dict[str, str] = {
    "index.html": "text/html; charset=utf-8",
    "dashboard.js": "text/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
}
#: Headers of every dashboard file: no script or style from anywhere else, no
#: framing, no content sniffing; the page reads only its own origin's routes.
HEADERS: Dict[str, str] = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; "
                                "connect-src 'self'; img-src 'self' data:; "
                                "frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


@functools.lru_cache(maxsize=None)
def _read(name: str) -> bytes:
    with open(os.path.join(STATIC_DIR, name), "rb") as fh:
        return fh.read()


def asset(name: str) -> Tuple[bytes, str]:
    """The bytes and content type of the dashboard file ``name`` (one of
    :data:`ASSETS`, e.g. ``"dashboard.js"``), read once and kept in memory.

    Raises:
        RequestError: 404 naming ``path`` for any other name (including anything
            with ``/``, ``\\`` or ``..``: names are looked up, not joined).
    """
    ctype = ASSETS.get(name)
    if ctype is None:
        raise RequestError(404, "path", f"no such dashboard file {short(name)}")
    return _read(name), ctype


__all__ = ["ASSETS", "HEADERS", "STATIC_DIR", "asset"]
