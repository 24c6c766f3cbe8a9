"""Coflow orders on demand matrices (``rapier_app.scheduling.orders``), by hand."""

import itertools

import numpy as np
import pytest

from rapier_app.scheduling.orders import greedy_completion_order, open_shop_cost, sebf_order
from rapier_app.scheduling.seeds.sincronia import bssi_order

# ports: h1 up, h2 down, h3 down, h4 up, h5 down (s).  A = {h1->h2 5 s};
# B = {h1->h3 4 s, h4->h5 6 s}.
D = np.array([[5.0, 5.0, 0.0, 0.0, 0.0],
              [4.0, 0.0, 4.0, 6.0, 6.0]])


def test_open_shop_cost_by_hand():
    assert open_shop_cost(D, [0, 1]) == 5.0 + 9.0     # A at 5; B at 5 + 4 on h1
    assert open_shop_cost(D, [1, 0]) == 6.0 + 9.0     # B at 6 (h4); A at 4 + 5
    assert open_shop_cost(D, [1, 0], weights=[2.0, 1.0]) == 6.0 + 18.0
    # a coflow waits only on the ports it uses: C = {h2 down 3 s} behind A, B
    D3 = np.vstack([D, [0.0, 3.0, 0.0, 0.0, 0.0]])
    assert open_shop_cost(D3, [0, 1, 2]) == 5.0 + 9.0 + 8.0
    assert open_shop_cost(np.zeros((0, 5)), []) == 0.0


def test_orders_by_hand():
    assert bssi_order(D, [1.0, 1.0]) == [1, 0]
    assert greedy_completion_order(D) == [0, 1]       # A alone 5 s < B alone 6 s
    assert sebf_order(D) == [0, 1]                    # bottlenecks 5 s < 6 s
    # weights: B twice as important -> 6 / 2 = 3 < 5
    assert greedy_completion_order(D, [1.0, 2.0]) == [1, 0]
    # ties go to the smaller tie key
    T = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert greedy_completion_order(T, tiebreak=[5, 2]) == [1, 0]
    assert sebf_order(T, tiebreak=[5, 2]) == [1, 0]


@pytest.mark.parametrize("seed", range(20))
def test_greedy_first_pick_and_bssi_optimal_on_one_port(seed):
    rnd = np.random.default_rng(seed)
    # the greedy's first pick has the smallest stand-alone completion
    M = rnd.choice([0.0, 1.0, 2.0, 5.0], size=(5, 3))
    M[M.sum(axis=1) == 0, 0] = 1.0
    g = greedy_completion_order(M)
    assert M[g[0]].max() == min(M[i].max() for i in range(5))
    # every coflow on one shared port (plus a private one): the open-shop cost is the
    # single-machine weighted completion time, where BSSI is Smith's rule and
    # optimal; a wrong order (e.g. the longest first) costs more
    p = rnd.uniform(0.5, 10.0, size=5)
    S = np.column_stack([p, np.diag(rnd.uniform(0.0, 0.4, size=5) * p)])
    w = list(rnd.choice([1.0, 2.0, 3.0], size=5))
    best = min(open_shop_cost(S, list(o), w) for o in itertools.permutations(range(5)))
    assert open_shop_cost(S, bssi_order(S, w), w) == pytest.approx(best, rel=1e-12)


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match="order"):
        open_shop_cost(D, [0, 0])
    with pytest.raises(ValueError, match="weights"):
        greedy_completion_order(D, [1.0])
    with pytest.raises(ValueError, match="demand"):
        sebf_order(-D)
    with pytest.raises(ValueError, match="demand"):
        sebf_order(np.zeros(3))
