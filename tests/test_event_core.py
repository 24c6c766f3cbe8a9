"""The faster event core (issue 16) against its slower definitions.

* :class:`WorkConservation` keeps its residual and each flow's "room" up to date on
  the changed links only; after every flow event both must equal, bit for bit, a
  recomputation from all flows (``residual()`` and ``np.minimum.reduceat``).
* :meth:`Scheduler.ecmp_path` is memoised; the memo must give the crc32 choice.
* The simulator's rate check now looks at the sending flows only: a NaN or inf
  rate must still be reported naming the flow.
"""

import math
import zlib

import numpy as np
import pytest

from rapier_app.core.model import CoflowSpec, FlowSpec, Schedule
from rapier_app.core.workload import port_mapping, read_trace, trace_to_coflows
from rapier_app.scheduling import make_scheduler
from rapier_app.scheduling import Scheduler
from rapier_app.scheduling.conserve import WorkConservation
from rapier_app.sim import SimulationError, simulate
from topologies import build_topology

from trace_file import fb_trace


@pytest.mark.parametrize("name", ["rapier", "scheduling-only"])
def test_incremental_residual_and_room_equal_recomputation(name, monkeypatch):
    tr = read_trace(fb_trace())
    topo = build_topology("fattree:4,19")
    cfs = [c for c in trace_to_coflows(tr, port_mapping(tr.ports, topo, 0))
           if len(c.flows) <= 400][:40]
    orig = WorkConservation.flow_event
    checked = []

    def flow_event(self):
        out = orig(self)
        # what the next event starts from, brought up to date, vs from scratch
        res, room = self._update()
        full = self.residual()
        assert np.array_equal(res, full)
        want = np.minimum.reduceat(full[self.lidx], self.starts) > 0
        live = self.alive
        assert np.array_equal(room[live], want[live])
        checked.append(len(self.flows))
        return out

    monkeypatch.setattr(WorkConservation, "flow_event", flow_event)
    simulate(topo, cfs, make_scheduler(name, topo))
    assert len(checked) > 50  # flow events did happen


def test_ecmp_memo_gives_the_crc32_choice():
    topo = build_topology("fattree:4")
    s = Scheduler(topo, seed=7)

    class F:
        src, dst, flow_id = "h1", "h16", "c1-3"

    paths = topo.candidate_paths("h1", "h16")
    assert len(paths) == 4
    want = paths[zlib.crc32(b"7|h1|h16|c1-3") % 4]
    first = s.ecmp_path(F)
    assert first == want
    assert s.ecmp_path(F) is first  # second call: the memo


class _BadRate(Scheduler):
    name = "bad-rate"

    def __init__(self, topology, value):
        super().__init__(topology)
        self.value = value

    def schedule(self, now, coflows):
        flows = [f for c in coflows for f in c.active_flows()]
        paths = [self.candidates(f)[0] for f in flows]
        rates = [1e6, self.value][:len(flows)]
        return Schedule.from_vectors(flows, paths, rates)


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_bad_rate_names_the_flow(value):
    topo = build_topology("fattree:4")
    c = CoflowSpec("c", 0.0, (FlowSpec("f0", "c", "h1", "h2", 1e6),
                              FlowSpec("f1", "c", "h3", "h4", 1e6)))
    with pytest.raises(SimulationError, match=r"rate_bps: flow f1 got rate"):
        simulate(topo, [c], _BadRate(topo, value))


def test_a_broken_schedule_is_a_project_error_and_a_runtime_error():
    # the steps raise their own StepError; the caller sees SimulationError, which
    # derives from RapierError and RuntimeError, with the step's message and no
    # StepError left in its cause
    from rapier_app.errors import RapierError
    from rapier_app.sim.steps import StepError

    topo = build_topology("fattree:4")
    c = CoflowSpec("c", 0.0, (FlowSpec("f0", "c", "h1", "h2", 1e6),
                              FlowSpec("f1", "c", "h3", "h4", 1e6)))
    with pytest.raises(SimulationError, match=r"rate_bps: flow f1 got rate") as err:
        simulate(topo, [c], _BadRate(topo, math.nan))
    assert type(err.value) is SimulationError
    assert isinstance(err.value, RapierError) and isinstance(err.value, RuntimeError)
    assert not isinstance(err.value, StepError) and err.value.__cause__ is None
