"""tools/mutants.py's curated list stays plantable: every mutant names a file of the
tree that holds the text it replaces (as often as ``count`` asks), and test files
that exist.  A mutant whose file moved or whose text changed would otherwise only
fail when the (slow, not-in-CI) mutation run reaches it."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import mutants  # noqa: E402


def test_every_mutant_can_be_planted_and_its_tests_exist():
    assert len(mutants.MUTANTS) >= 20
    assert len({m.name for m in mutants.MUTANTS}) == len(mutants.MUTANTS)
    stale = []
    for m in mutants.MUTANTS:
        path = os.path.join(ROOT, m.path)
        if not os.path.isfile(path):
            stale.append(f"{m.name}: no file {m.path}")
            continue
        with open(path, encoding="utf-8") as fh:
            n = fh.read().count(m.old)
        if n == 0 or (m.count > 0 and n < m.count):
            stale.append(f"{m.name}: {m.old!r} occurs {n} time(s) in {m.path}")
        stale += [f"{m.name}: no test file {t}" for t in m.tests
                  if not os.path.isfile(os.path.join(ROOT, t))]
    assert stale == []


def test_apply_refuses_a_stale_mutant(tmp_path):
    m = mutants.MUTANTS[0]
    target = tmp_path / m.path
    target.parent.mkdir(parents=True)
    target.write_text("nothing to replace here\n")
    try:
        mutants.apply(str(tmp_path), m)
    except ValueError as exc:
        assert m.name in str(exc)
    else:
        raise AssertionError("a mutant whose text is absent was planted")
