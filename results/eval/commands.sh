#!/bin/sh
# The commands that produced results/eval (reduced sweeps: 1 try, subset of points).
# Run from the repository root.  Each line appends to results/eval/runs.csv and
# skips runs already there, then rebuilds summary.csv, the PNGs and summary.md.
set -e
E="nice .venv/bin/rapier-experiment"
[ -x .venv/bin/rapier-experiment ] || E="env PYTHONPATH=. nice .venv/bin/python -m rapier_app.experiments.cli"
$E run --experiment width    --fabric fattree512,vl2-512 --values 16,32 --tries 1 --schemes all
$E run --experiment interval --fabric fattree512,vl2-512 --values 0.8   --tries 1 --schemes all
$E run --experiment number   --fabric fattree512,vl2-512 --values 10    --tries 1 --schemes all
$E run --experiment width    --fabric fattree512,vl2-512 --values 64    --tries 1 --schemes all
$E run --experiment interval --fabric fattree512,vl2-512 --values 0.4   --tries 1 --schemes all
# sensitivity to the fabric layout and the flow sizes (width 32)
$E run --experiment width --fabric fattree512-nb,vl2-512-os --values 32 --tries 1 --schemes all
$E run --experiment width --fabric fattree512,vl2-512 --values 32 --tries 1 --schemes all --sizes uniform:10,100
# the paper's headline point
$E run --experiment width    --fabric fattree512,vl2-512 --values 128   --tries 1 --schemes all
