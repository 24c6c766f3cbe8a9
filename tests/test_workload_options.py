"""rapier_app.workload_options: the workload options shared by rapier-sim,
rapier-check, rapier-emulate and the benchmarks."""

import argparse

import pytest

from rapier_app.workload_options import (DEFAULT_SIZES, OPTIONS, UsageError,
                                         add_workload_options, check_workload_options,
                                         fill_workload_defaults, parse_synthetic,
                                         workload_from_args)


def _args(**kw):
    p = add_workload_options(argparse.ArgumentParser(), *(k for k in OPTIONS if k != "goodput"))
    return p.parse_args([x for k, v in kw.items() for x in (f"--{k.replace('_', '-')}", v)])


def test_options_are_declared_in_order_with_overrides_and_bare():
    p = argparse.ArgumentParser()
    add_workload_options(p, "limit", "topology", "seed", seed=dict(default=7))
    flags = [a.option_strings[0] for a in p._actions[1:]]
    assert flags == ["--limit", "--topology", "--seed"]
    assert vars(p.parse_args([])) == {"limit": None, "topology": None, "seed": 7}
    assert p.parse_args(["--limit", "3"]).limit == 3
    bare = add_workload_options(argparse.ArgumentParser(), "seed", "sizes", bare=True)
    assert [a.default for a in bare._actions[1:]] == [None, None]
    assert [a.help for a in bare._actions[1:]] == [None, None]
    with pytest.raises(KeyError, match="nope"):
        add_workload_options(argparse.ArgumentParser(), "nope")
    with pytest.raises(KeyError, match="seed"):  # an override of an undeclared option
        add_workload_options(argparse.ArgumentParser(), "limit", seed=dict(default=2))


def test_parse_synthetic_and_its_error():
    assert parse_synthetic("5,4,0.5") == (5, 4, 0.5)
    for bad in ("5,4", "a,4,1", "5,4,1,2"):
        with pytest.raises(UsageError, match="--synthetic: expected N,WIDTH,INTERARRIVAL_S"):
            parse_synthetic(bad)
    assert issubclass(UsageError, ValueError)


@pytest.mark.parametrize("kw,message", [
    ({}, "exactly one of --scenario, --trace, --synthetic"),
    ({"scenario": "fig1", "synthetic": "2,2,0"}, "exactly one"),
    ({"synthetic": "2,2,0", "topology": "fattree:4", "limit": "3"},
     "--limit: applies only to --trace"),
    ({"scenario": "fig1", "scale": "2"}, "--scale: applies only to --scenario testbed"),
    ({"scenario": "fig1", "topology": "fattree:4"}, "a --scenario brings its own topology"),
    ({"synthetic": "2,2,0"}, "--topology: required with --synthetic"),
])
def test_check_refuses_conflicts_naming_the_option(kw, message):
    with pytest.raises(UsageError, match=message):
        check_workload_options(_args(**kw))


def test_defaults_and_workload_built():
    a = _args(synthetic="3,2,0.5", topology="fattree:4", seed="1")
    check_workload_options(a)
    fill_workload_defaults(a)
    assert (a.sizes, a.placement, a.scale) == (DEFAULT_SIZES, "auto", 1.0)
    topo, cfs, desc = workload_from_args(a, 5)
    assert topo.name.startswith("fattree") and len(cfs) == 3
    assert all(len(c.flows) == 2 for c in cfs)
    assert desc == f"synthetic n=3 width=2 interarrival=0.5s sizes={DEFAULT_SIZES}"
    again = workload_from_args(a, 5)[1]
    assert [f.size_bytes for c in again for f in c.flows] == \
        [f.size_bytes for c in cfs for f in c.flows]
    topo, cfs, desc = workload_from_args(_args(scenario="fig1"), 1)
    assert desc == "scenario fig1" and cfs
