#!/bin/sh
# The 8192-server fat-tree try (RAPIER Section V-B), with today's decision points
# (issue 12: rapier, rapier-bssi and Varys run their full pass at coflow events and
# work conservation at every other flow completion).  Run from the repository root;
# `big` appends to OUT/big_fattree8192.md, so each command gets its own folder.
# Measured 2026-11-24 23:33-23:37 UTC on f3bc904 (a `git archive`), beside a
# whole-hour replay on the other core, under /usr/bin/time -v:
#   rapier: 42 s wall in all (5.6 s topology, 13.7 s bound, 21.2 s simulation), 629 MiB
#   the other four: 47 s wall in all, 726 MiB
set -e
E="nice .venv/bin/rapier-experiment"
$E big --fabric fattree8192 --schemes rapier --log-every 200 --out /tmp/big_rapier
cp /tmp/big_rapier/big_fattree8192.md results/big8192/rapier.md
$E big --fabric fattree8192 --schemes baseline,routing-only,scheduling-only,rapier-bssi \
    --log-every 1000 --out /tmp/big_others
cp /tmp/big_others/big_fattree8192.md results/big8192/others.md
