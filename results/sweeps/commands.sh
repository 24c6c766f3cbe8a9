#!/bin/sh
# Full x ranges of RAPIER Figs. 4-6 with each scheduler's own decision points:
# rapier, rapier-bssi and Varys run Algorithm 1 / SEBF+MADD at coflow arrivals and
# completions and work conservation alone at every other flow completion (issue
# 12); the others decide at every flow completion.  Run from the repository root.
# Each `run` appends to its --out's runs.csv, skips rows already there and rebuilds
# summary.csv, the PNGs and summary.md.
#
# How results/sweeps was made (seeds 1-4 = --tries 4 from --base-seed 1):
# - baseline and routing-only rows: unchanged since before issue 12 (their
#   decisions did not change; tests/test_sim_speed_equivalence.py pins them);
# - scheduling-only, rapier and rapier-bssi: rerun after issue 12 with the loop
#   below, one process per fabric with its own --out (results/sweeps/parts/F),
#   whose runs.csv rows were then appended to results/sweeps/runs.csv, followed by
#   `rapier-experiment report --out results/sweeps`;
#   the issue-12 rerun first covered width 16-512, number 10 and 50, interval
#   0, 0.4 and 0.8 only; on 2026-11-24 the rapier-bssi rows were rerun with its
#   order="best" default and scheduling-only, rapier-bssi and rapier were run at
#   number 20,30,40 and interval 0.1,0.2,0.6 (SCHEMES=... with those --values);
# - the seed schedulers (Figs. 5 and 6, seed 1): the last two commands; the aalo and
#   philae rows rerun on 2026-11-27 with their 10 ms decision interval (SCHEMES unset,
#   --schemes aalo,philae into a fresh --out, rows replaced, then `report`);
# - the rapier-bssi rows rerun on 2026-11-27 with its rank_lp="fast" default
#   (SCHEMES=rapier-bssi into a fresh OUT, rows replaced, then `report`);
# - rapier-spread's old rows were removed: its ECMP rule is now rapier's default
#   tie-break (tie_break="spread").
set -e
E="nice .venv/bin/rapier-experiment"
[ -x .venv/bin/rapier-experiment ] || E="env PYTHONPATH=. nice .venv/bin/python -m rapier_app.experiments.cli"
S=${SCHEMES:-baseline,routing-only,scheduling-only,rapier,rapier-bssi}
O=${OUT:-results/sweeps}
T=${TRIES:-4}
for F in ${FABRICS:-fattree512 vl2-512}; do
  $E run --experiment width    --fabric $F --values 16,32,64,128,256,384,512 --tries $T --schemes $S --out $O
  $E run --experiment number   --fabric $F --values 10,20,30,40,50 --tries $T --schemes $S --out $O
  $E run --experiment interval --fabric $F --values 0,0.1,0.2,0.4,0.6,0.8 --tries $T --schemes $S --out $O
done
if [ -z "$SCHEMES" ]; then
  $E run --experiment number   --fabric fattree512,vl2-512 --values 10,20,30,40,50 --tries 1 --schemes aalo,philae,sincronia,optas --out $O
  $E run --experiment interval --fabric fattree512,vl2-512 --values 0,0.1,0.2,0.4,0.6,0.8 --tries 1 --schemes aalo,philae,sincronia,optas --out $O
fi
