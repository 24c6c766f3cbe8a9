"""Merge several runs.csv files (e.g. from parts of a sweep run on different machines).

Two rows are the same run when they share :func:`~rapier_app.experiments.sweeps.run_key`
(experiment, fabric, x, seed, sizes, scheme).  Duplicates with the same average CCT
are kept once; the same run with a different average CCT is a conflict (two
simulations disagree, e.g. different code versions) and refuses the merge, naming
the point.  Files made with different decision points (the ``reschedule`` column)
are refused too, as ``rapier-experiment run`` refuses to mix them.
"""

from __future__ import annotations

import os
from typing import Dict, List, Sequence, Tuple

from .sweeps import RUN_FIELDS, append_runs, read_runs, run_key
from ..errors import RapierError


class MergeConflict(RapierError, ValueError):
    """Two input rows are the same run (same point, seed and scheme) with different
    average CCTs, or the inputs mix decision points."""


def runs_path(path: str) -> str:
    """``path`` itself if it is a file, else ``path/runs.csv``.

    Raises:
        ValueError: neither exists (names the path).
    """
    p = path if os.path.isfile(path) else os.path.join(path, "runs.csv")
    if not os.path.isfile(p):
        raise ValueError(f"inputs: no runs.csv at {path!r}")
    return p


def merge_rows(sources: Sequence[Tuple[str, List[dict]]]) -> List[dict]:
    """Union of the rows of ``sources`` ((name, rows) pairs), deduplicated by run.

    Returns the rows sorted by (experiment, fabric, sizes, x, seed, scheme).

    Raises:
        MergeConflict: the same run with different ``avg_cct_s`` (exact float
            comparison: a rerun of a point is bit-identical), naming the point and
            both files; or rows with different ``reschedule`` values.
    """
    seen: Dict[tuple, Tuple[str, dict]] = {}
    modes: Dict[str, str] = {}
    for name, rows in sources:
        for r in rows:
            modes.setdefault(r.get("reschedule") or "", name)
            k = run_key(r)
            if k in seen:
                other_name, other = seen[k]
                if other["avg_cct_s"] != r["avg_cct_s"]:
                    raise MergeConflict(
                        f"conflict: experiment={k[0]} fabric={k[1]} x={k[2]:g} seed={k[3]} "
                        f"sizes={k[4]} scheme={k[5]}: avg CCT {other['avg_cct_s']!r} s in "
                        f"{other_name} but {r['avg_cct_s']!r} s in {name}")
                continue
            seen[k] = (name, r)
    if len(modes) > 1:
        raise MergeConflict("reschedule: the inputs mix decision points " + ", ".join(
            f"{m or '(unrecorded)'!r} in {n}" for m, n in sorted(modes.items())))
    return [r for _, r in sorted(seen.values(), key=lambda nr: (
        nr[1]["experiment"], nr[1]["fabric"], nr[1]["sizes"], float(nr[1]["x"]),
        int(nr[1]["seed"]), nr[1]["scheme"]))]


def merge_files(inputs: Sequence[str], out_dir: str) -> Tuple[str, int, int]:
    """Merge the runs CSVs ``inputs`` (files or folders holding runs.csv) into
    ``out_dir/runs.csv``.

    Returns:
        (written path, rows read, rows written).

    Raises:
        ValueError: fewer than one input, a missing input, or ``out_dir/runs.csv``
            already exists (merge into a fresh folder).
        MergeConflict: see :func:`merge_rows`.
    """
    if not inputs:
        raise ValueError("inputs: give at least one runs.csv (or folder)")
    paths = [runs_path(p) for p in inputs]
    dest = os.path.join(out_dir, "runs.csv")
    if os.path.exists(dest):
        raise ValueError(f"out: {dest} exists; merge into a new folder (or add it as an input)")
    sources = [(p, read_runs(p)) for p in paths]
    merged = merge_rows(sources)
    for r in merged:  # files written before the column existed
        r.setdefault("reschedule", "")
    os.makedirs(out_dir, exist_ok=True)
    append_runs(dest, [{k: r[k] for k in RUN_FIELDS} for r in merged])
    return dest, sum(len(rs) for _, rs in sources), len(merged)
