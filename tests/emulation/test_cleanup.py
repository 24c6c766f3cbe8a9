"""The runner stops everything it started, by PID, also when something fails: a
controller that does not come up, and an exception in the middle of a run."""

import os
import subprocess

import pytest

from mininet_tests.runner import Emulation, EmulationError


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _bridges():
    return set(subprocess.run(["ovs-vsctl", "list-br"], capture_output=True,
                              text=True).stdout.split())


def test_controller_failure_cleans_up(ovs):
    em = Emulation("leafspine:3,3,3", scheduler="no-such-scheduler", bw_mbps=None)
    with pytest.raises(EmulationError, match=r"\(rapier-controller\) exited"):
        with em:
            pass
    assert em.ryu is None and em.net is None and em.agents == {}
    assert not ({"l1", "l2", "l3", "s1", "s2", "s3"} & _bridges())


def test_exception_mid_run_cleans_up(ovs):
    pids = []
    with pytest.raises(RuntimeError, match="boom"):
        with Emulation("leafspine:3,3,3", scheduler="rapier", bw_mbps=None) as em:
            pids.append(em.ryu.pid)
            pids += [p.pid for p in em.agents.values()]
            pids += [em.start_receiver("h4", 5999, 1000, os.path.join(em.workdir, "r.json")).pid]
            pids += [h.pid for h in em.net.hosts]
            assert len(pids) == 1 + 9 + 1 + 9 and all(_alive(p) for p in pids)
            raise RuntimeError("boom")
    assert [p for p in pids if _alive(p)] == []
    assert not ({"l1", "l2", "l3", "s1", "s2", "s3"} & _bridges())
