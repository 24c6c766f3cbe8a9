"""The shared candidate-path cache (rapier_app/scheduling/pathcache.py)."""

import numpy as np
import pytest

from rapier_app.scheduling import make_scheduler
from rapier_app.scheduling.pathcache import pad_rows, pair_paths, path_link_tuple
from topologies import fat_tree


def test_pad_rows_pads_with_the_sentinel_by_hand():
    M = pad_rows([[1, 2], [3]], 9)
    assert M.dtype == np.int64
    assert M.tolist() == [[1, 2], [3, 9]]
    assert pad_rows([[4]], 7, width=3).tolist() == [[4, 7, 7]]
    with pytest.raises(ValueError, match="rows: empty"):
        pad_rows([], 9)
    with pytest.raises(ValueError, match="more than width 1"):
        pad_rows([[1, 2]], 9, width=1)


def test_pair_paths_of_two_pods_on_a_k4_fat_tree():
    topo = fat_tree(4)
    src, dst = topo.hosts[0], topo.hosts[-1]  # different pods: 4 core paths
    pp = pair_paths(topo, src, dst)
    assert pair_paths(topo, src, dst) is pp  # one entry per topology and pair
    assert len(pp.paths) == 4 and pp.mat.shape == (4, 6)
    assert pp.padded.tolist() == pp.mat.tolist()  # equal lengths: nothing padded
    for p, row, tup in zip(pp.paths, pp.mat, pp.links):
        assert row.tolist() == topo.path_links(p).tolist() == list(tup)
        assert path_link_tuple(topo, p) == tup
    # every path starts on the host's uplink and ends on dst's downlink: the only
    # links all four cross
    first = topo.link_ids[(src, pp.paths[0][1])]
    last = topo.link_ids[(pp.paths[0][-2], dst)]
    assert pp.common == sorted([first, last])
    assert len(pair_paths(topo, src, dst, 2).paths) == 2


def test_schedulers_on_one_topology_share_the_candidate_lists():
    topo = fat_tree(4)
    a, b = make_scheduler("rapier", topo), make_scheduler("baseline", topo)
    src, dst = topo.hosts[0], topo.hosts[5]
    pp = pair_paths(topo, src, dst)

    class _F:  # the two fields candidates() reads
        pass
    fl = _F()
    fl.src, fl.dst = src, dst
    assert a.candidates(fl) is pp.paths and b.candidates(fl) is pp.paths


@pytest.mark.parametrize("spec", ["fattree:4", "fattree:6", "fattree:4,19", "vl2:4,4",
                                  "leafspine:4,3,2", "bigswitch:5", "fig1"])
def test_generated_paths_are_the_topologys_candidate_paths(spec):
    """The pair cache's paths, generated from the switch graph's hop distances
    (``_Fabric``), are ``candidate_paths``' in the same order, with their
    ``path_links`` rows, for every host pair (and capped at 2)."""
    from topologies import build_topology

    topo = build_topology(spec)
    ref = build_topology(spec)  # a twin whose pairs go through candidate_paths
    hosts = topo.hosts
    for src in hosts:
        for dst in hosts:
            for k in (None, 2):
                pp = pair_paths(topo, src, dst, k)
                want = ref.candidate_paths(src, dst, k)
                assert pp.paths == want, (spec, src, dst)
                assert [a.tolist() for a in pp.arrays] == \
                    [ref.path_links(p).tolist() for p in want]
                if pp.mat is not None:
                    assert pp.mat.tolist() == [ref.path_links(p).tolist() for p in want]
                    assert pp.padded.tolist() == pp.mat.tolist()


def test_generated_paths_raise_as_candidate_paths():
    from topologies.base import TopologyError

    topo = fat_tree(4)
    with pytest.raises(TopologyError, match="unknown host 'nope'"):
        pair_paths(topo, topo.hosts[0], "nope")
    with pytest.raises(TopologyError, match="unknown host"):
        pair_paths(topo, "e_0_0", topo.hosts[0])  # a switch is no host
