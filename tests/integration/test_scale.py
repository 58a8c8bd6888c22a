"""Labs at cluster scale: 256 nodes on ``bridge`` (one host: past the 250 nodes a /24 holds,
so its subnet grows to a /23), ``routed`` and ``vxlan`` (two hosts) are built, the first node
pings the last, and teardown leaves nothing of the run behind."""

from __future__ import annotations

import ipaddress

import pytest

from vnetbench.backends.lab import open_lab
from vnetbench.host.cgroups import hierarchies
from vnetbench.host.netns import NETNS_DIR
from vnetbench.lab.spec import LabSpec

from ..conftest import lab_leftovers

pytestmark = pytest.mark.root

NODES = 256


@pytest.mark.parametrize(("layer", "hosts"), [("bridge", 1), ("routed", 2), ("vxlan", 2)])
def test_256_nodes_reach_across_and_leave_nothing(layer: str, hosts: int) -> None:
    with open_lab(LabSpec(layer, hosts=hosts, nodes=NODES)) as lab:
        first, last = lab.nodes[0], lab.nodes[-1]
        assert len(lab.nodes) == NODES and len({n.ip for n in lab.nodes}) == NODES
        if hosts == 1:  # slot 255 lives in the host subnet's second /24
            subnet = ipaddress.ip_network(lab.topo.addresses.host_subnet(0))
            assert subnet.prefixlen == 23 and ipaddress.ip_address(last.ip) in subnet
            assert ipaddress.ip_address(last.ip) not in ipaddress.ip_network(
                f"{subnet.network_address}/24")
        else:
            assert first.host != last.host
        out = first.run(["ping", "-n", "-c", "2", "-i", "0.2", "-W", "2", last.ip], timeout=15,
                        check=False)
        assert out.returncode == 0, out.stdout + out.stderr
        assert " 0% packet loss" in out.stdout
        run_id, namespaces = lab.run_id, lab.namespaces()
    assert len(namespaces) == NODES + hosts + 1
    assert not [ns for ns in namespaces if (NETNS_DIR / ns).exists()]
    assert not [x for x in lab_leftovers() if f"vnb{run_id}" in x]
    assert not [h for h in hierarchies() if (h / f"vnb{run_id}").exists()]
