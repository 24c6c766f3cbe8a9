"""One import path per public name: no module re-exports what it imports, and every
``from X import name`` in the repository names the module that defines ``name``.

Checked on the source (``ast``), without importing anything:

* a module of ``rapier_app``, ``topologies``, ``enforcement`` or ``mininet_tests``
  uses every project name it imports (an import kept only so that callers can reach
  the name through this module is a re-export shim).  A package's ``__init__`` may
  list names of its submodules in ``__all__``: that is the package's public face;
* an import of a project name, anywhere in the repository (package, tests,
  benchmarks, scripts), is from the module that defines it, a submodule, or such a
  package face.

:data:`OWNED_ELSEWHERE` can exempt a package while a reorganisation is under way.
"""

from __future__ import annotations

import ast
import os
import subprocess
from functools import lru_cache
from typing import Dict, List, Optional, Set, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("rapier_app", "topologies", "enforcement", "mininet_tests")
#: Module prefixes a reorganisation in progress may exempt for a while (imports from
#: them and their own imports are then not checked); empty: everything is checked.
OWNED_ELSEWHERE: Tuple[str, ...] = ()


def python_files() -> List[str]:
    """Every tracked ``.py`` file of the repository (paths relative to it)."""
    out = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout.split()
    return [f for f in out if os.path.isfile(os.path.join(REPO, f))]


def module_name(path: str) -> str:
    """``a/b/c.py`` -> ``a.b.c``; ``a/b/__init__.py`` -> ``a.b``."""
    mod = path[:-3].replace("/", ".")
    return mod[:-len(".__init__")] if mod.endswith(".__init__") else mod


@lru_cache(maxsize=None)
def module_file(mod: str) -> Optional[str]:
    base = os.path.join(REPO, *mod.split("."))
    for cand in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(cand):
            return cand
    return None


@lru_cache(maxsize=None)
def parsed(path: str) -> ast.Module:
    with open(path, encoding="utf-8") as fh:
        return ast.parse(fh.read(), path)


def absolute(node: ast.ImportFrom, path: str) -> str:
    """The absolute module of ``from ... import`` in the file ``path``."""
    if not node.level:
        return node.module or ""
    pkg = module_name(os.path.relpath(path, REPO)).split(".")
    if not path.endswith("__init__.py"):
        pkg = pkg[:-1]
    if node.level > 1:
        pkg = pkg[:-(node.level - 1)]
    return ".".join(pkg + ([node.module] if node.module else []))


@lru_cache(maxsize=None)
def definitions(mod: str) -> Tuple[Set[str], Set[str], bool]:
    """(names bound by ``mod`` other than by import of a project name, its
    ``__all__``, is a package).  A name a module imports from a library outside the
    project counts as its own: such a module is that library's face in the project
    (``rapier_app.controller.stack``: the one import path of the OpenFlow stack)."""
    path = module_file(mod)
    names: Set[str] = set()
    exported: Set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.ImportFrom) and not node.level \
                and (node.module or "").split(".")[0] not in PACKAGES:
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names.update(x.id for x in ast.walk(t) if isinstance(x, ast.Name))
                if isinstance(t, ast.Name) and t.id == "__all__":
                    exported = {e.value for e in node.value.elts}
    return names, exported, path.endswith("__init__.py")


def project_imports(path: str) -> List[Tuple[int, str, str, str]]:
    """(line, module, name, bound name) of each ``from <project module> import name``."""
    out = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.ImportFrom):
            mod = absolute(node, path)
            if mod.split(".")[0] in PACKAGES:
                out += [(node.lineno, mod, a.name, a.asname or a.name) for a in node.names]
    return out


def used_names(tree: ast.Module) -> Set[str]:
    """Names a module reads: ``Name`` nodes and names inside string annotations."""
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    annotations = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotations.append(n.returns)
            args = n.args
            annotations += [a.annotation for a in
                            args.posonlyargs + args.args + args.kwonlyargs
                            + [args.vararg, args.kwarg] if a is not None]
        elif isinstance(n, ast.AnnAssign):
            annotations.append(n.annotation)
    for ann in filter(None, annotations):
        for c in ast.walk(ann):
            if isinstance(c, ast.Constant) and isinstance(c.value, str):
                try:
                    used |= {x.id for x in ast.walk(ast.parse(c.value, mode="eval"))
                             if isinstance(x, ast.Name)}
                except SyntaxError:
                    pass
    return used


def owned_elsewhere(mod: str) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in OWNED_ELSEWHERE)


def reexports(path: str) -> List[str]:
    """``file:line name`` of each project name ``path`` imports but never uses (package
    faces' ``__all__`` names and submodules, imported for what they register, excepted)."""
    tree = parsed(path)
    used = used_names(tree)
    _, exported, is_pkg = definitions(module_name(os.path.relpath(path, REPO)))
    return [f"{os.path.relpath(path, REPO)}:{line} {name}"
            for line, mod, imported, name in project_imports(path)
            if name not in used and not (is_pkg and name in exported)
            and not module_file(f"{mod}.{imported}")]


def wrong_paths(path: str) -> List[str]:
    """``file:line module.name`` of each import not naming the defining module (nor a
    submodule, nor a package face listing the name in ``__all__``)."""
    bad = []
    for line, mod, name, _ in project_imports(path):
        if owned_elsewhere(mod) or module_file(mod) is None or module_file(f"{mod}.{name}"):
            continue
        names, exported, is_pkg = definitions(mod)
        if name not in names and not (is_pkg and name in exported):
            bad.append(f"{os.path.relpath(path, REPO)}:{line} {mod}.{name}")
    return bad


def package_files() -> List[str]:
    return [os.path.join(REPO, f) for f in python_files()
            if f.split("/")[0] in PACKAGES and not owned_elsewhere(module_name(f))]


def test_no_module_reexports_what_it_imports():
    files = package_files()
    assert len(files) > 50
    assert [r for f in files for r in reexports(f)] == []


def test_every_import_names_the_defining_module():
    files = [os.path.join(REPO, f) for f in python_files()]
    assert sum(len(project_imports(f)) for f in files) > 500
    assert [w for f in files for w in wrong_paths(f)] == []


def test_the_checks_catch_a_shim(tmp_path, monkeypatch):
    """A module importing a name only to pass it on, and a caller importing the name
    through it, are both reported."""
    pkg = os.path.join(REPO, "rapier_app")
    shim = os.path.join(pkg, "controller", "_shim_for_test.py")
    user = os.path.join(REPO, "tests", "_shim_user_for_test.py")
    with open(shim, "w") as fh:
        fh.write("from .rules import FlowRule, cookie_for  # noqa: F401\n\n"
                 "def f():\n    return cookie_for(1)\n")
    with open(user, "w") as fh:
        fh.write("from rapier_app.controller._shim_for_test import FlowRule, f\n")
    try:
        assert reexports(shim) == ["rapier_app/controller/_shim_for_test.py:1 FlowRule"]
        assert wrong_paths(user) == [
            "tests/_shim_user_for_test.py:1 rapier_app.controller._shim_for_test.FlowRule"]
    finally:
        os.remove(shim)
        os.remove(user)
        parsed.cache_clear()
        definitions.cache_clear()
        module_file.cache_clear()
