"""``rapier-bssi``: RAPIER's joint routing with Sincronia's BSSI order (issue 12).

On a big switch every flow has one path, so routing is trivial and the coflow order
of rapier-bssi's full pass must be exactly Sincronia's BSSI order on the same
remaining demands (Sincronia Algorithm 1, ``seeds.bssi_order``).
"""

import random

import pytest

from rapier_app.core.model import CoflowState, InfoPolicy, make_coflow
from rapier_app.scheduling import make_scheduler
from topologies import build_topology

MB = 1e6


@pytest.mark.parametrize("seed", range(8))
def test_order_is_bssi_on_a_big_switch(seed):
    rnd = random.Random(seed)
    topo = build_topology("bigswitch:5")
    specs = []
    for k in range(5):
        flows = [(*rnd.sample(topo.hosts, 2), rnd.choice([50, 100, 300, 700]) * MB)
                 for _ in range(rnd.randint(1, 4))]
        specs.append(make_coflow(f"c{k}", 0.0, flows))
    states = [CoflowState(s, InfoPolicy(True)) for s in specs]
    got = make_scheduler("rapier-bssi", topo).schedule(0.0, states).order
    sin = make_scheduler("sincronia-immediate", topo)
    want = [c.coflow_id for c in sin.order(states)]
    assert got == want


def test_bssi_and_minimum_cct_first_disagree_by_hand():
    # Gbit.  A = {h1->h2 5}; B = {h1->h3 4, h4->h5 6}.  Port loads: h1 up 9 (A 5 +
    # B 4), h4 up 6, h5 down 6, h2 down 5, h3 down 4.  BSSI: the bottleneck is h1
    # up; of the coflows on it, the one with the most there per unit weight (A, 5
    # against 4) goes last: B, A.  Algorithm 1: A alone needs 5 s, B 6 s (h4 up):
    # A, B.
    topo = build_topology("bigswitch:5")
    specs = [make_coflow("A", 0, [("h1", "h2", 625 * MB)]),
             make_coflow("B", 0, [("h1", "h3", 500 * MB), ("h4", "h5", 750 * MB)])]
    states = [CoflowState(s, InfoPolicy(True)) for s in specs]
    assert make_scheduler("rapier-bssi", topo).schedule(0.0, states).order == ["B", "A"]
    assert make_scheduler("rapier", topo).schedule(0.0, states).order == ["A", "B"]
