"""Every exception class the project defines derives from
:class:`rapier_app.errors.RapierError` and keeps its builtin base.

The check imports every module of ``rapier_app``, ``topologies``, ``enforcement`` and
``mininet_tests`` (a module that does not import fails the test) and looks at each
exception class defined there, so a new bare ``class XError(ValueError)`` anywhere in
those packages fails it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
from typing import List, Tuple

import pytest

from rapier_app.errors import RapierError

PACKAGES = ("rapier_app", "topologies", "enforcement", "mininet_tests")

#: Exception classes another change is moving under RapierError: (module prefix,
#: class name or None for any).  Remove an entry once those classes derive from
#: RapierError.
NOT_YET: tuple = ()


def not_yet(qualified: str) -> bool:
    """True for ``module.Class`` matched by :data:`NOT_YET`."""
    mod, cls = qualified.rsplit(".", 1)
    return any(mod.startswith(prefix) and name in (None, cls) for prefix, name in NOT_YET)


def exception_classes(module: types.ModuleType) -> List[type]:
    """The exception classes defined in ``module`` (not those it imports)."""
    return [obj for obj in vars(module).values()
            if inspect.isclass(obj) and issubclass(obj, BaseException)
            and obj.__module__ == module.__name__]


def without_base(module: types.ModuleType) -> List[str]:
    """``module.Class`` of each exception class of ``module`` not deriving from
    RapierError."""
    return [f"{module.__name__}.{c.__qualname__}" for c in exception_classes(module)
            if not issubclass(c, RapierError)]


def project_modules() -> Tuple[List[types.ModuleType], List[str]]:
    """Every module of :data:`PACKAGES`, imported, and the names of those that failed."""
    mods, failed = [], []
    for name in PACKAGES:
        pkg = importlib.import_module(name)
        mods.append(pkg)
        for info in pkgutil.walk_packages(pkg.__path__, name + "."):
            try:
                mods.append(importlib.import_module(info.name))
            except Exception as exc:  # noqa: BLE001 -- reported below
                failed.append(f"{info.name}: {exc!r}")
    return mods, failed


def test_every_project_exception_derives_from_rapier_error():
    mods, failed = project_modules()
    assert failed == []
    classes = [c for m in mods for c in exception_classes(m)]
    assert len(classes) >= 20  # the walk reached the packages' exception classes
    missing = sorted(n for m in mods for n in without_base(m))
    assert [n for n in missing if not not_yet(n)] == []


def test_the_check_catches_a_bare_builtin_subclass():
    mod = types.ModuleType("rapier_app.fake_module")
    exec("from rapier_app.errors import RapierError\n"
         "class GoodError(RapierError, ValueError): pass\n"
         "class XError(ValueError): pass\n"
         "class Sub(GoodError): pass\n", mod.__dict__)
    assert without_base(mod) == ["rapier_app.fake_module.XError"]
    assert not not_yet("rapier_app.fake_module.XError")
    assert not not_yet("rapier_app.sim.checker.CheckError")


@pytest.mark.parametrize("name, builtin", [
    ("topologies.base.TopologyError", ValueError),
    ("rapier_app.core.model.WorkloadError", ValueError),
    ("rapier_app.controller.settings.SettingsError", ValueError),
    ("rapier_app.controller.store.StoreError", RuntimeError),
    ("enforcement.tc.TcError", RuntimeError),
])
def test_subclasses_keep_their_builtin_base(name, builtin):
    mod, cls = name.rsplit(".", 1)
    exc = getattr(importlib.import_module(mod), cls)("x: bad")
    with pytest.raises(builtin):  # old ``except ValueError`` clauses still catch it
        raise exc
    assert isinstance(exc, RapierError) and str(exc) == "x: bad"
