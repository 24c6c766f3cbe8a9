"""Decisions pinned bit for bit before the event-core speed work (issue 16).

Workload: the first 100 coflows of the public Facebook trace (FB2010-1Hr-150-0)
with at most 400 flows each (3,370 flows, arrivals 0-520 s), ports mapped onto
hosts as the CLI maps them (``port_mapping(150, topo, seed=0)``: identity on
``bigswitch:150``, seeded random hosts elsewhere), on ``bigswitch:150``,
``fattree:10`` (250 hosts) and ``fattree:4,19`` (152 hosts, 4:1 less core than
hosts: many path choices collide).

Per (topology, scheduler) the test pins the number of decision points and the
sha256 of every coflow's CCT and every flow's finish time written as exact
``float.hex()`` strings, so any change of a decision, of an event time or of a
single ulp of a float fails it.  The pins were computed with the code of commit
a255d54, before the event-core changes; run this file as a script
(``python tests/test_decisions_pinned.py``) to print the current values in the
format of ``PINNED``.

Measured: about 15 s for all 24 runs here.
"""

import dataclasses
import hashlib
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from rapier_app.core.workload import port_mapping, read_trace, trace_to_coflows  # noqa: E402
from rapier_app.scheduling import make_scheduler  # noqa: E402
from rapier_app.sim import simulate  # noqa: E402
from topologies import build_topology  # noqa: E402
from trace_file import fb_trace  # noqa: E402

#: topology specs; a ``/D`` suffix divides every arrival time by D (a denser load:
#: more coflows compete, so Algorithm 1's order and the tie-breaks matter), an
#: ``@N`` suffix keeps only the first N coflows of the workload
TOPOLOGIES = ["bigswitch:150", "fattree:4,19", "bigswitch:150/20", "fattree:10/20@60"]
#: ``name:key=value`` passes a scheduler parameter.  ``rapier:wc_order=paper`` keeps
#: the decisions pinned at a255d54 (Algorithm 3 in the paper's order, the default
#: then); ``rapier`` (wc_order="pick" since issue 12's ee8b164+) was pinned after;
#: ``rapier-bssi:order=bssi`` is rapier-bssi's BSSI-only order (its default before
#: the ``order`` parameter).
SCHEDULERS = ["rapier", "rapier:wc_order=paper", "rapier-bssi:order=bssi", "rapier-bssi",
              "scheduling-only",
              "baseline", "routing-only", "fair"]
N_COFLOWS = 100
MAX_FLOWS = 400

_CACHE = {}


def workload(topology: str):
    """(topology, coflows) of the module docstring for ``topology``, built once."""
    if topology not in _CACHE:
        tr = _CACHE.get("trace")
        if tr is None:
            tr = _CACHE["trace"] = read_trace(fb_trace())
        spec, _, keep = topology.partition("@")
        name, _, div = spec.partition("/")
        topo = build_topology(name)
        cfs = trace_to_coflows(tr, port_mapping(tr.ports, topo, 0))
        cfs = [c for c in cfs if len(c.flows) <= MAX_FLOWS][:N_COFLOWS]
        if div:
            cfs = [dataclasses.replace(c, arrival_s=c.arrival_s / int(div)) for c in cfs]
        if keep:
            cfs = cfs[:int(keep)]
        _CACHE[topology] = topo, cfs
    return _CACHE[topology]


def fingerprint(res) -> str:
    """sha256 (hex) of the sorted (coflow id, CCT) and (flow id, finish time) pairs,
    times as exact ``float.hex()`` strings."""
    cct = sorted((r.coflow_id, float(r.cct_s).hex()) for r in res.coflows)
    fin = sorted((r.flow_id, float(r.finish_s).hex()) for r in res.flows)
    return hashlib.sha256(repr((cct, fin)).encode()).hexdigest()


def run(topology: str, scheduler: str):
    """Simulate ``scheduler`` on the workload; returns (events, fingerprint, mean CCT)."""
    topo, cfs = workload(topology)
    name, _, kv = scheduler.partition(":")
    kw = dict(x.split("=", 1) for x in kv.split(",")) if kv else {}
    res = simulate(topo, cfs, make_scheduler(name, topo, **kw))
    assert len(res.coflows) == len(cfs)
    return res.events, fingerprint(res), float(res.ccts.mean())


#: (topology, scheduler) -> (decision points, fingerprint), from commit a255d54.
PINNED = {}
PINNED[('bigswitch:150', 'rapier:wc_order=paper')] = (930, '7585ea67a819ad55450e222ed74a665c4c9e27cf346100341b3ba61f39e5576a')
PINNED[('bigswitch:150', 'rapier-bssi:order=bssi')] = (930, '7585ea67a819ad55450e222ed74a665c4c9e27cf346100341b3ba61f39e5576a')
PINNED[('bigswitch:150', 'scheduling-only')] = (1025, 'afea98316a9294c17ffd635954597fb0849f5de235a2659556972ae0e19dce1e')
PINNED[('bigswitch:150', 'baseline')] = (164, '3080108ace411bff779e3215c7958695ebce1b289a2709ec05e68c69e53d43a8')
PINNED[('bigswitch:150', 'routing-only')] = (164, '3080108ace411bff779e3215c7958695ebce1b289a2709ec05e68c69e53d43a8')
PINNED[('bigswitch:150', 'fair')] = (164, '3080108ace411bff779e3215c7958695ebce1b289a2709ec05e68c69e53d43a8')
PINNED[('fattree:4,19', 'rapier:wc_order=paper')] = (1352, '01bc03d8ac9c2939a82c915cd73a78379f0469f05d755ebe1a61bc958cd477ab')
PINNED[('fattree:4,19', 'rapier-bssi:order=bssi')] = (1418, '1eaaa67465e34653ec2bd2dfb02aa7d12a8ce396adb2598a3ddee0e67ee982eb')
PINNED[('fattree:4,19', 'scheduling-only')] = (1645, '375968537b77856e19344ad56f03efcd53d70534b0679bdc49e7ae337c9a8c9e')
PINNED[('fattree:4,19', 'baseline')] = (342, 'f1e122bc384b3e309c08c76cc33b6bbbf5286a6c2f59c40f98607b67ef9612e8')
PINNED[('fattree:4,19', 'routing-only')] = (305, '160c2df6583e417ff11ec045ca2eaf2ecaf25285f586f620dff68ff89525cd2b')
PINNED[('fattree:4,19', 'fair')] = (342, 'f1e122bc384b3e309c08c76cc33b6bbbf5286a6c2f59c40f98607b67ef9612e8')
PINNED[('bigswitch:150/20', 'rapier:wc_order=paper')] = (1653, 'd14779d27b6f1bee68bf7b0eb464c9256caa93a47cfd48dbd7b1310472364e6e')
PINNED[('bigswitch:150/20', 'rapier-bssi:order=bssi')] = (1834, '8c2b071f84e61e3869ca1ebf44a99772816217c32daa2ac702e43a0357c4981b')
PINNED[('bigswitch:150/20', 'scheduling-only')] = (1851, 'ca6f167f1069b5ea68eea5ad33d5e0c6272cd8a51c6c464e86ebb7826f4ed327')
PINNED[('bigswitch:150/20', 'baseline')] = (363, '0f27d3cb419b9cae634848aa71b7206a809b05ab7874d1ba9b272a5969f6ef33')
PINNED[('bigswitch:150/20', 'routing-only')] = (363, '0f27d3cb419b9cae634848aa71b7206a809b05ab7874d1ba9b272a5969f6ef33')
PINNED[('bigswitch:150/20', 'fair')] = (363, '0f27d3cb419b9cae634848aa71b7206a809b05ab7874d1ba9b272a5969f6ef33')
PINNED[('fattree:10/20@60', 'rapier:wc_order=paper')] = (276, 'da17f7384fec21b27c2c8692701f9cdef5ebbe6ecc523703068d8a658bb623e9')
PINNED[('fattree:10/20@60', 'rapier-bssi:order=bssi')] = (364, '6a7046c70f1a095194d6534f2d82434f928f31bd2fa2419159cda29b220b1129')
PINNED[('fattree:10/20@60', 'scheduling-only')] = (350, '6042990a1f645928fa68d08ee3697bb06b60eae3bbc8af0018aeee592d815308')
PINNED[('fattree:10/20@60', 'baseline')] = (192, '9188ddb6ac483995a236ca0be75cb3243858f69f6792db27606e5828c5d86e8d')
PINNED[('fattree:10/20@60', 'routing-only')] = (278, 'eed20c7ea62d923715f335d0d20a8b4764c14521ce95e646a886cc6e2b5931ec')
PINNED[('fattree:10/20@60', 'fair')] = (192, '9188ddb6ac483995a236ca0be75cb3243858f69f6792db27606e5828c5d86e8d')

PINNED[('bigswitch:150', 'rapier')] = (930, '7585ea67a819ad55450e222ed74a665c4c9e27cf346100341b3ba61f39e5576a')
PINNED[('fattree:4,19', 'rapier')] = (1456, 'd07fd5e5cc7cf69864c86125bca167be4eabfbd2609d8b21231c8583600e6b81')
PINNED[('bigswitch:150/20', 'rapier')] = (1842, 'b95742638fa650131d55e18a23e3a142c1066ab29e0327d53b1fffc1bb1a3903')
PINNED[('fattree:10/20@60', 'rapier')] = (347, '3bcf49db86fb38baa55a3f00fc4ad363fde7cc03fc37c91b35e9bd9ff64ad850')

# rapier-bssi with order="best" (issue 12, the lowest open-shop cost order among
# BSSI's, the greedy one and SEBF's; its BSSI-only pins above are now
# "rapier-bssi:order=bssi").  On two workloads its decisions are rapier's.
PINNED[('bigswitch:150', 'rapier-bssi')] = (930, '7585ea67a819ad55450e222ed74a665c4c9e27cf346100341b3ba61f39e5576a')
PINNED[('fattree:4,19', 'rapier-bssi')] = (1444, 'f87b7a62739368c4f7961b814cfddd4210c76707724c665afba046c7d690186a')
PINNED[('bigswitch:150/20', 'rapier-bssi')] = (1842, 'b95742638fa650131d55e18a23e3a142c1066ab29e0327d53b1fffc1bb1a3903')
PINNED[('fattree:10/20@60', 'rapier-bssi')] = (347, '3bcf49db86fb38baa55a3f00fc4ad363fde7cc03fc37c91b35e9bd9ff64ad850')


def test_workload_is_the_documented_subset():
    topo, cfs = workload("bigswitch:150")
    assert len(cfs) == 100 and sum(len(c.flows) for c in cfs) == 3370
    assert max(c.arrival_s for c in cfs) == pytest.approx(519.773)


@pytest.mark.parametrize("topology,scheduler",
                         [(t, s) for t in TOPOLOGIES for s in SCHEDULERS])
def test_decisions_bit_identical(topology, scheduler):
    events, fp, mean = run(topology, scheduler)
    want = PINNED[(topology, scheduler)]
    assert (events, fp) == want, f"mean CCT now {mean!r}"


if __name__ == "__main__":
    for t in TOPOLOGIES:
        for s in SCHEDULERS:
            ev, fp, _ = run(t, s)
            print(f"PINNED[{(t, s)!r}] = ({ev}, {fp!r})")
