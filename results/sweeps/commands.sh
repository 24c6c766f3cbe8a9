#!/bin/sh
# Full x ranges of RAPIER Figs. 4-6 with each scheduler's own decision points
# (rapier and Varys decide at coflow arrivals and completions, RAPIER Section IV-C).
# Run from the repository root.  Each `run` appends to results/sweeps/runs.csv,
# skips rows already there and rebuilds summary.csv, the PNGs and summary.md.
#
# How results/sweeps was made: seed 1 with the loops below (--tries 1); seeds 2-4
# with the same loops and --base-seed 2, 3, 4 --tries 1, as three parallel
# processes each with its own --out, whose runs.csv rows were then appended here
# (the rows depend only on the seed, so this equals --tries 4 in one directory);
# the seed schedulers on Figs. 5 and 6 for seed 1 only (last two commands).
set -e
E="nice .venv/bin/rapier-experiment"
[ -x .venv/bin/rapier-experiment ] || E="env PYTHONPATH=. nice .venv/bin/python -m rapier_app.experiments.cli"
S=baseline,routing-only,scheduling-only,rapier,rapier-spread
O=results/sweeps
T=${TRIES:-4}
for F in fattree512 vl2-512; do
  $E run --experiment width    --fabric $F --values 16,32,64,128,256,384,512 --tries $T --schemes $S --out $O
done
for F in fattree512 vl2-512; do
  $E run --experiment number   --fabric $F --values 10,20,30,40,50 --tries $T --schemes $S --out $O
  $E run --experiment interval --fabric $F --values 0,0.1,0.2,0.4,0.6,0.8 --tries $T --schemes $S --out $O
done
$E run --experiment number   --fabric fattree512,vl2-512 --values 10,20,30,40,50 --tries 1 --schemes aalo,philae,sincronia,optas --out $O
$E run --experiment interval --fabric fattree512,vl2-512 --values 0,0.1,0.2,0.4,0.6,0.8 --tries 1 --schemes aalo,philae,sincronia,optas --out $O
