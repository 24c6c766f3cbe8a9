"""Make Ryu 4.34 importable with eventlet >= 0.30.3 on Python 3.11.

Ryu 4.34 (its last release) does ``from eventlet.wsgi import ALREADY_HANDLED`` in
``ryu.app.wsgi``; eventlet removed that constant in 0.30.3, and the eventlet
releases that still have it do not import on Python 3.11 (see
``shared/ENVIRONMENT.md``).  Ryu only uses the constant as the return value of its
WebSocket handler, so any unique sentinel object restores it.

Two ways in, because ``ryu-manager`` imports ``ryu.app.wsgi`` at module level,
before it loads any application module:

* :func:`ensure_eventlet_compat` defines the constant now (our own package calls it
  before importing ``ryu.app.wsgi``: tests, ``python -m`` use).
* :func:`install_import_hook` registers a ``sys.meta_path`` finder that defines the
  constant right after ``eventlet.wsgi`` is first imported.  ``scripts/install.sh``
  copies this file into the venv's site-packages as ``rapier_ryu_compat.py`` and
  adds a ``rapier_ryu_compat.pth`` line that calls it at interpreter start-up, so
  that the unmodified ``ryu-manager`` command works.

This module imports nothing from this package (it must work as a standalone copy).
"""

import importlib.abc
import importlib.util
import sys

#: Module whose attribute is restored.
TARGET = "eventlet.wsgi"


def _patch(module) -> None:
    if not hasattr(module, "ALREADY_HANDLED"):
        module.ALREADY_HANDLED = object()


def ensure_eventlet_compat() -> bool:
    """Define ``eventlet.wsgi.ALREADY_HANDLED`` if eventlet lacks it.

    Returns:
        True when eventlet is importable (patched or already fine), False when
        eventlet is not installed (nothing to do; Ryu cannot run anyway).
    """
    try:
        import eventlet.wsgi as ew  # noqa: WPS433 (deliberately late import)
    except ImportError:
        return False
    _patch(ew)
    return True


class _PatchingLoader(importlib.abc.Loader):
    """Wraps the real loader of ``eventlet.wsgi`` and patches after execution."""

    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds ``eventlet.wsgi`` through the other finders and wraps its loader."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


def install_import_hook() -> None:
    """Patch ``eventlet.wsgi`` whenever it gets imported (idempotent).

    If it is already imported, patch it at once; otherwise put a finder first on
    ``sys.meta_path``.  Costs nothing for processes that never import eventlet.
    """
    if TARGET in sys.modules:
        _patch(sys.modules[TARGET])
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
