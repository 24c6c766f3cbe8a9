"""`_Routed._active_routes`: the per-coflow view filtered as flows finish, with
columns built only when a caller asks for them, equals a fresh computation."""

import numpy as np
import pytest

from rapier_app.core.model import CoflowState, InfoPolicy
from rapier_app.core.workload import synthetic
from rapier_app.scheduling import make_scheduler
from topologies import build_topology


def _fresh(topo, coflows):
    return make_scheduler("baseline", topo, seed=3)._active_routes(coflows)


def _same(a, b):
    assert [f.flow_id for f in a[0]] == [f.flow_id for f in b[0]]
    assert a[1] == b[1] and a[6] == b[6]
    assert all(np.array_equal(x, y) for x, y in zip(a[2], b[2]))
    for k in (3, 4, 5):
        assert np.array_equal(a[k], b[k])


def test_filtered_and_lazy_columns_match_a_fresh_computation():
    topo = build_topology("fattree:4")
    specs = synthetic(topo, n_coflows=3, width=8, mean_interarrival_s=0.0, seed=5)
    coflows = [CoflowState(s, InfoPolicy()) for s in specs]
    sched = make_scheduler("baseline", topo, seed=3)
    rng = np.random.default_rng(0)
    for step in range(4):
        # the narrow view the fair-sharing schemes use, then the full one
        # (link columns 3 and 4 only from step 1 on, so they too are first built
        # on a filtered view)
        need = (0, 1) if step == 0 else (0, 1, 3, 4)
        narrow = sched._active_routes(coflows, need)
        full = _fresh(topo, coflows)
        assert narrow[2] is None and narrow[5] is None and narrow[6] is None
        assert [f.flow_id for f in narrow[0]] == [f.flow_id for f in full[0]]
        assert narrow[1] == full[1]
        if step:
            assert np.array_equal(narrow[3], full[3]) and np.array_equal(narrow[4], full[4])
        if step >= 2:  # columns first asked for after flows finished
            _same(sched._active_routes(coflows), full)
        # finish a few random flows of each coflow
        for c in coflows:
            for f in c.active_flows():
                if rng.random() < 0.3:
                    f.finish_s = float(step)
            c._invalidate(finished_only=True)
    assert sum(len(c.active_flows()) for c in coflows) < 24  # flows did finish


@pytest.mark.parametrize("name", ["baseline", "routing-only", "scheduling-only"])
def test_finished_flow_reports_filter_the_cached_views_like_a_scan(name, monkeypatch):
    # _active_routes drops the flows the flows_finished hook reported by position;
    # without the reports it scans every flow's finish_s: the very same run
    from rapier_app.core.workload import synthetic
    from rapier_app.scheduling import make_scheduler
    from rapier_app.scheduling.classic import routed as classic
    from rapier_app.sim import simulate
    from topologies import build_topology

    topo = build_topology("fattree:4")
    used = []
    orig = classic._Routed._finished_mask

    def counted(self, *a):
        m = orig(self, *a)
        used.append(m is not None)
        return m

    out = []
    for reports in (True, False):
        monkeypatch.setattr(classic._Routed, "_finished_mask",
                            counted if reports else (lambda self, *a: None))
        cfs = synthetic(topo, 25, 12, 0.02, "pareto:0.5,1.3", seed=3)
        res = simulate(topo, cfs, make_scheduler(name, topo))
        out.append([(c.coflow_id, c.cct_s.hex()) for c in res.coflows])
    assert out[0] == out[1]
    assert used and all(used)  # every filtering took the reported positions
