"""RAPIER's Section V-B evaluation (fabrics, sweeps, statistics, plots) and the
``rapier-bench`` speed benchmark.  See docs/evaluation.md."""
