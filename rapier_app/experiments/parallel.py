"""Run sweep tasks serially, on a local process pool or on a Dask cluster.

Every backend runs the same :func:`~rapier_app.experiments.sweeps.run_task` on the
same :class:`~rapier_app.experiments.sweeps.Task` objects; a task's rows depend only
on the task (its seed), so the rows, CCTs included, are bit-identical whichever
backend ran them.  Only the *order* of the rows in runs.csv follows the order in
which the points finished.

The calling process is the only writer of runs.csv: workers return rows and the
parent appends them as each point finishes, so an interrupted sweep keeps every
finished point and ``rapier-experiment run`` resumes from there.

Backends:

* ``jobs=1``: in this process, in grid order;
* ``jobs=N``: :class:`concurrent.futures.ProcessPoolExecutor` with N workers
  (``forkserver`` start method: no fork of a process that may hold threads);
* ``dask=ADDRESS``: a :class:`distributed.Client` to a running Dask scheduler
  (``tcp://host:8786``), ``local`` / ``local:N`` for a
  :class:`distributed.LocalCluster` of N single-threaded worker processes started
  here, or a ``Client`` object.  The workers need this package installed (the same
  version); on SLURM/PBS start them with ``dask-jobqueue`` (docs/experiments.md).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable, List, Optional, Sequence, Tuple

from .sweeps import (DEFAULT_SIZES, Task, append_runs, check_decision_points, pending,
                     plan_tasks, run_key, run_task)

LOG = logging.getLogger("rapier_app.experiments")


def timed_task(task: Task) -> Tuple[List[dict], float, float]:
    """``(rows, cpu_s, wall_s)``: :func:`run_task` and the CPU time
    (``time.process_time``, the worker process) and wall time it took where it ran.
    What every backend ships to its workers."""
    c0, t0 = time.process_time(), time.perf_counter()
    rows = run_task(task)
    return rows, time.process_time() - c0, time.perf_counter() - t0


def _row_line(r: dict) -> str:
    return (f"{r['experiment']} {r['fabric']} x={r['x']:g} seed={r['seed']} {r['scheme']}: "
            f"avg CCT {r['avg_cct_s']:.4f} s (bound {r['lower_bound_s']:.4f} s, "
            f"x{r['ratio_to_bound']:.2f}), {r['wall_s']:.1f} s wall")


def progress_bar(total: int, quiet: bool, desc: str):
    """The project's tqdm bar (:func:`rapier_app.progress.bar`) over ``total`` points
    on stderr: percent, rate and ETA; a plain line every few seconds when stderr is
    not a terminal; nothing with ``quiet``."""
    from ..progress import bar, progress_enabled
    return bar(total, desc, unit="point", enabled=progress_enabled(quiet=quiet))


def parse_jobs(jobs: int) -> int:
    """``jobs`` checked: an int >= 1 (0 means one per CPU of this machine).

    Raises:
        ValueError: negative ``jobs``.
    """
    if jobs < 0:
        raise ValueError(f"jobs: must be >= 0 (0: one per CPU), got {jobs}")
    return jobs or (os.cpu_count() or 1)


def _dask_client(dask):
    """(client, owned): a ``distributed.Client`` for ``dask`` and whether we made it
    (and so must close it, with its LocalCluster)."""
    from distributed import Client, LocalCluster
    if isinstance(dask, Client):
        return dask, False
    if not isinstance(dask, str) or not dask:
        raise ValueError(f"dask: expected an address, 'local[:N]' or a Client, got {dask!r}")
    if dask == "local" or dask.startswith("local:"):
        n = dask.partition(":")[2] or "2"
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"dask: 'local:N' needs N >= 1 workers, got {dask!r}")
        cluster = LocalCluster(n_workers=int(n), threads_per_worker=1, processes=True,
                               dashboard_address=None)
        return Client(cluster), True
    try:
        return Client(dask, timeout=30), True
    except (OSError, TimeoutError, ValueError) as exc:
        raise ValueError(f"dask: cannot connect to the scheduler at {dask!r}: {exc}") from exc


def execute(tasks: Sequence[Task], runs_path: str, jobs: int = 1, dask=None,
            log: Optional[Callable[[str], None]] = None, quiet: bool = True,
            stats: Optional[dict] = None) -> List[dict]:
    """Run ``tasks`` and append each one's rows to ``runs_path`` as it finishes.

    Args:
        tasks: the points to run (already filtered of finished runs).
        runs_path: the runs CSV (:data:`~rapier_app.experiments.sweeps.RUN_FIELDS`);
            written only by this process.
        jobs: local worker processes (1: run here; 0: one per CPU).
        dask: None, or a Dask scheduler address, ``local[:N]`` or a
            ``distributed.Client`` (then ``jobs`` must be 1).
        log: called with one line per finished run (None: the lines go to the
            ``rapier_app.experiments`` logger at INFO).
        quiet: no progress bar.
        stats: if a dict, filled with ``points``, ``wall_s`` (this call, seconds),
            ``backend``, and ``task_cpu_s`` / ``task_wall_s``: the CPU and wall
            seconds the finished points took in their workers, summed (so
            ``wall_s - task_wall_s`` is the serial backends' overhead).

    Returns:
        The rows, in the order the points finished.

    Raises:
        ValueError: both ``jobs`` > 1 and ``dask``, or a bad ``jobs``/``dask``.
        RuntimeError: a point raised (message: the point and the error); the
            remaining points are cancelled, finished ones stay in ``runs_path``.
    """
    jobs = parse_jobs(jobs)
    if dask is not None and jobs > 1:
        raise ValueError("jobs: --jobs and --dask exclude each other (the Dask cluster "
                         "decides the parallelism)")
    emit = log or LOG.info
    rows: List[dict] = []
    t0 = time.perf_counter()
    used = [0.0, 0.0]

    def done(task: Task, result: Tuple[List[dict], float, float]) -> None:
        new, cpu, wall = result
        used[0] += cpu
        used[1] += wall
        append_runs(runs_path, new)
        rows.extend(new)
        for r in new:
            emit(_row_line(r))

    if dask is not None:
        backend = f"dask:{dask if isinstance(dask, str) else 'client'}"
    else:
        backend = "serial" if jobs == 1 else f"processes:{jobs}"
    bar = progress_bar(len(tasks), quiet, "points")
    try:
        if not tasks:
            pass
        elif dask is None and jobs == 1:
            for t in tasks:
                done(t, _run_named(t))
                bar.update(1)
        elif dask is None:
            ctx = multiprocessing.get_context("forkserver")
            # the fork server imports the simulator once; each worker forks from it
            # already loaded (about 3 s of imports per worker otherwise)
            ctx.set_forkserver_preload([__name__])
            with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx) as ex:
                futs = {ex.submit(timed_task, t): t for t in largest_first(tasks)}
                try:
                    for f in as_completed(futs):
                        done(futs[f], _result(f, futs[f]))
                        bar.update(1)
                except BaseException:
                    for f in futs:
                        f.cancel()
                    raise
        else:
            _run_dask(tasks, dask, done, bar)
    finally:
        bar.close()
        if stats is not None:
            stats.update(points=len(tasks), wall_s=time.perf_counter() - t0, backend=backend,
                         task_cpu_s=used[0], task_wall_s=used[1])
    return rows


def run_tasks(tasks: Sequence[Task], out_dir: str, reschedule_on: Optional[str] = None,
              jobs: int = 1, dask=None, log: Optional[Callable[[str], None]] = None,
              quiet: bool = True, stats: Optional[dict] = None,
              on_plan: Optional[Callable[[List[Task], str], None]] = None) -> List[dict]:
    """Run the tasks of a sweep not yet recorded in ``out_dir/runs.csv`` and append
    their rows there as they finish (:func:`execute`): the resumable sweep of
    ``rapier-experiment run`` and :func:`run_sweep`.

    Args:
        tasks: the grid (:func:`~rapier_app.experiments.sweeps.plan_tasks`).
        out_dir: the folder of ``runs.csv`` (created when missing, after the check).
        reschedule_on: the simulator's decision points; ``runs.csv`` must hold only
            rows made with the same ones.
        jobs, dask, log, quiet, stats: as for :func:`execute`.
        on_plan: called with (the tasks left to run, the runs.csv path) after the
            check and before the first point runs (the CLI sets up its log there).

    Returns:
        The new rows, in the order the points finished.

    Raises:
        ValueError: ``runs.csv`` already holds rows made with other decision points
            (its ``reschedule`` column); averaging them with these would mix two
            simulations, so the message asks for another ``out_dir``.
        RuntimeError: a point failed (the message names it); rows of the points that
            finished before are kept in runs.csv.
    """
    path = os.path.join(out_dir, "runs.csv")
    old = check_decision_points(path, reschedule_on)
    todo = pending(tasks, {run_key(r) for r in old})
    os.makedirs(out_dir, exist_ok=True)
    if on_plan is not None:
        on_plan(todo, path)
    return execute(todo, path, jobs=jobs, dask=dask, log=log, quiet=quiet, stats=stats)


def run_sweep(experiment: str, fabric_name: str, values: Sequence[float], tries: int,
              schemes: Sequence[str], out_dir: str, sizes: str = DEFAULT_SIZES,
              base_seed: int = 1, log=print, reschedule_on: Optional[str] = None,
              jobs: int = 1, dask=None, quiet: bool = True) -> List[dict]:
    """Run ``tries`` tries of every x in ``values`` (:func:`run_tasks` on the grid of
    :func:`~rapier_app.experiments.sweeps.plan_tasks`); append to
    ``out_dir/runs.csv``, skipping (experiment, fabric, x, seed, sizes, scheme) runs
    already recorded.

    Args:
        jobs: worker processes on this machine (1: in this process).
        dask: a Dask scheduler address, ``local[:N]`` or a ``distributed.Client``
            (see :func:`execute`).
        log: called with one line per finished run (None: the lines go to the
            ``rapier_app.experiments`` logger).
        quiet: no progress bar.

    Returns:
        The new rows, in the order they finished.

    Raises:
        ValueError: a bad grid (:func:`plan_tasks`), or ``runs.csv`` already holds
            rows made with other decision points (:func:`run_tasks`).
        RuntimeError: a point failed (the message names it); rows of the points that
            finished before are kept in runs.csv.
    """
    tasks = plan_tasks(experiment, fabric_name, values, tries, schemes, sizes, base_seed,
                       reschedule_on)
    return run_tasks(tasks, out_dir, reschedule_on, jobs=jobs, dask=dask, log=log,
                     quiet=quiet)


def largest_first(tasks: Sequence[Task]) -> List[Task]:
    """``tasks`` in the order the parallel backends start them: most flows first
    (:meth:`Task.flows`), ties in grid order.  Longest-processing-time-first list
    scheduling (Graham 1969): the point that ends a sweep is a small one, so two
    workers do not wait on one large point started last.  The rows do not depend on
    the order."""
    return sorted(tasks, key=lambda t: -t.flows())


def _run_named(task: Task) -> Tuple[List[dict], float, float]:
    try:
        return timed_task(task)
    except Exception as exc:
        raise RuntimeError(f"point {task.label()} failed: {exc}") from exc


def _result(fut, task: Task) -> Tuple[List[dict], float, float]:
    try:
        return fut.result()
    except Exception as exc:
        raise RuntimeError(f"point {task.label()} failed: {type(exc).__name__}: {exc}") from exc


def _run_dask(tasks: Sequence[Task], dask, done, bar) -> None:
    from distributed import as_completed as dask_completed
    client, owned = _dask_client(dask)
    try:
        futs = {client.submit(timed_task, t, pure=False, priority=t.flows(),
                              key=f"rapier-point-{t.experiment}-{t.fabric}-{t.x:g}-{t.seed}-"
                                  f"{i}"): t
                for i, t in enumerate(largest_first(tasks))}
        try:
            for f in dask_completed(list(futs)):
                done(futs[f], _result(f, futs[f]))
                bar.update(1)
        except BaseException:
            client.cancel(list(futs))
            raise
    finally:
        if owned:
            cluster = getattr(client, "cluster", None)
            client.close()
            if cluster is not None:
                cluster.close()
