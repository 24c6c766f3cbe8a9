#!/bin/sh
# The commands that produced results/eval, in the order they ran (reduced sweeps:
# 1 try, a subset of the paper's points, every flow completion a decision point:
# --reschedule flow; see docs/evaluation.md).  Run from the
# repository root.  Each `run` appends to results/eval/runs.csv, skips runs already
# there, and rebuilds summary.csv, the PNGs and summary.md.
set -e
E="nice .venv/bin/rapier-experiment"
[ -x .venv/bin/rapier-experiment ] || E="env PYTHONPATH=. nice .venv/bin/python -m rapier_app.experiments.cli"
$E run --out results/eval --reschedule flow --experiment width    --fabric fattree512,vl2-512 --values 16,32 --tries 1 --schemes all
$E run --out results/eval --reschedule flow --experiment interval --fabric fattree512,vl2-512 --values 0.8   --tries 1 --schemes all
# sensitivity to the fabric layout and the flow sizes (width 32, 20 coflows)
$E run --out results/eval --reschedule flow --experiment width --fabric fattree512-nb,vl2-512-os --values 32 --tries 1 \
    --schemes baseline,routing-only,scheduling-only,rapier,rapier-ls
$E run --out results/eval --reschedule flow --experiment width --fabric fattree512,vl2-512 --values 32 --tries 1 \
    --schemes baseline,routing-only,scheduling-only,rapier,rapier-ls --sizes uniform:10,100
$E run --out results/eval --reschedule flow --experiment number   --fabric fattree512,vl2-512 --values 10    --tries 1 --schemes all
$E run --out results/eval --reschedule flow --experiment width    --fabric fattree512,vl2-512 --values 64 --tries 1 \
    --schemes baseline,routing-only,scheduling-only,rapier,aalo,philae,sincronia,optas
# one try on the 8192-server fat-tree, rapier only (log and wall time in
# results/eval/big_fattree8192.md; `big` appends to that file, so move the old
# one away first to get the run alone)
$E big --reschedule flow --fabric fattree8192 --schemes rapier --log-every 10 --out results/eval
$E big --reschedule flow --fabric fattree8192 --schemes baseline,scheduling-only --log-every 200 --out /tmp/big_base
cp /tmp/big_base/big_fattree8192.md results/eval/big_fattree8192_baseline_scheduling-only.md
