"""Every host reaches every other host on the three emulated topologies, through the
RAPIER controller's default forwarding (ECMP groups) on the userspace datapath."""

import pytest

from mininet_tests.runner import REST_PREFIX, Emulation
from mininet_tests.topos import TEST_TOPOLOGIES
from enforcement import client


@pytest.mark.parametrize("spec", TEST_TOPOLOGIES)
def test_pingall(ovs, spec):
    with Emulation(spec, scheduler="rapier", bw_mbps=None) as em:
        n = len(em.net.hosts)
        loss = em.net.pingAll(timeout=2)
        assert loss == 0.0, f"{spec}: {loss} % of {n * (n - 1)} pings lost"
        st, topo = client.request(em.rest, "GET", REST_PREFIX + "/topology")
        assert st == 200
        # the controller saw exactly the configured switches
        st, health = client.request(em.rest, "GET", REST_PREFIX + "/health")
        assert health["switches_connected"] == health["switches_configured"] == \
            len(em.definition.switches)
