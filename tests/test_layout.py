"""The package layout: every module imports, the import graph has no cycle, and no
module imports a console-script module (a script's ``main`` module is its own: what
the tools share lives in library modules such as ``rapier_app.workload_options``).

The graph is built from the source (``ast``) of every module of ``rapier_app``,
``topologies``, ``enforcement`` and ``mininet_tests``: one edge per ``import`` or
``from ... import`` statement naming another of these modules, wherever it stands
(an import inside a function closes a cycle as surely as one at the top, only
later), except under ``if TYPE_CHECKING:``.  ``from P import name`` is an edge to
``P.name`` when that is a module, else to ``P``.  A package's ``__init__`` is a
module like any other: no edge is left out.
"""

import ast
import importlib
import os
import re

import networkx as nx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("rapier_app", "topologies", "enforcement", "mininet_tests")


def module_files(root=ROOT, packages=PACKAGES) -> dict:
    """{dotted module name: (source path, is a package ``__init__``)} of ``packages``
    under ``root``."""
    out = {}
    for pkg in packages:
        for d, dirs, files in os.walk(os.path.join(root, pkg)):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            for f in sorted(files):
                if f.endswith(".py"):
                    name = os.path.relpath(os.path.join(d, f), root)[:-3].replace(os.sep, ".")
                    init = name.endswith(".__init__")
                    out[name[:-len(".__init__")] if init else name] = (os.path.join(d, f), init)
    return out


def _type_checking_nodes(tree) -> set:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skip.update(id(n) for n in ast.walk(child))
    return skip


def import_graph(root=ROOT, packages=PACKAGES) -> nx.DiGraph:
    """The directed import graph among the modules of ``packages`` (module docstring)."""
    mods = module_files(root, packages)
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for m, (path, init) in mods.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        skip = _type_checking_nodes(tree)
        here = m if init else m.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here
                    for _ in range(node.level - 1):
                        up = up.rpartition(".")[0]
                    base = up + ("." + node.module if node.module else "")
                for a in node.names:
                    full = f"{base}.{a.name}"
                    targets.append(full if full in mods else base)
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != m:
                    g.add_edge(m, t)
    return g


def console_script_modules(setup_py=os.path.join(ROOT, "setup.py")) -> dict:
    """{console script name: module} of setup.py's ``console_scripts``."""
    with open(setup_py, encoding="utf-8") as fh:
        text = fh.read()
    found = dict(re.findall(r'"([\w-]+)\s*=\s*([\w.]+):\w+"', text))
    assert found, "no console_scripts entry point found in setup.py"
    return found


def test_every_module_imports():
    failed = {}
    for m in sorted(module_files()):
        try:
            importlib.import_module(m)
        except Exception as exc:  # noqa: BLE001 - each failure is reported by name
            failed[m] = f"{type(exc).__name__}: {exc}"
    assert not failed, failed


def test_no_import_cycle():
    cycles = sorted(" -> ".join(c + c[:1]) for c in nx.simple_cycles(import_graph()))
    assert cycles == []


def test_no_module_imports_a_console_script_module():
    g = import_graph()
    scripts = console_script_modules()
    assert set(scripts) >= {"rapier-sim", "rapier-check", "rapier-emulate"}
    back = sorted(f"{m} imports {s} ({name})" for name, s in scripts.items()
                  for m in g.predecessors(s))
    assert back == []


def test_the_checks_see_a_planted_cycle_and_back_arrow(tmp_path):
    """The graph builder finds what the two tests above forbid (so they can fail)."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("def f():\n    from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("import pkg.cli\nfrom .. import a\n")
    (pkg / "cli.py").write_text("from typing import TYPE_CHECKING\n"
                                "if TYPE_CHECKING:\n    from pkg import a\n")
    g = import_graph(str(tmp_path), ("pkg",))
    assert sorted(g.edges) == [("pkg", "pkg.a"), ("pkg.a", "pkg.sub.b"),
                               ("pkg.sub.b", "pkg.a"), ("pkg.sub.b", "pkg.cli")]
    assert [sorted(c) for c in nx.simple_cycles(g)] == [["pkg.a", "pkg.sub.b"]]


def test_setup_py_names_every_console_script():
    scripts = console_script_modules()
    assert scripts["rapier-sim"] == "rapier_app.cli"
    assert scripts["rapier-check"] == "rapier_app.sim.check_cli"
    assert scripts["rapier-emulate"] == "mininet_tests.emulate"
    for mod in scripts.values():
        assert mod in module_files(), mod
