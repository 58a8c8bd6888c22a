"""The bounds the scenario schema puts on MTUs and VNIs are the kernel's own: in a private
namespace, the kernel takes a veth, a bridge and a VXLAN device at the smallest and largest
value a scenario may give and refuses one past each (so a scenario ``plan`` accepts is one
``run`` can build, and the schema refuses no value the kernel would take)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from vnetbench.layers.base import MAX_MTU, MIN_MTU, VXLAN_OVERHEAD
from vnetbench.layers.vxlan import MAX_VNI, VxlanOptions

pytestmark = pytest.mark.root


@pytest.fixture
def netns() -> Iterator[str]:
    name = f"vnbt-bounds-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "add", "u0", "type", "veth", "peer", "name",
                        "u1"], check=True)
        subprocess.run(["ip", "-n", name, "addr", "add", "10.9.0.1/24", "dev", "u0"], check=True)
        subprocess.run(["ip", "-n", name, "link", "set", "u0", "up"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=True)


def _takes(ns: str, *args: str) -> bool:
    return subprocess.run(["ip", "-n", ns, "link", "add", *args], capture_output=True,
                          check=False).returncode == 0


def test_the_kernel_takes_exactly_the_mtus_a_scenario_may_give(netns: str) -> None:
    for kind in ("bridge", "veth"):
        assert _takes(netns, f"{kind}-lo", "mtu", str(MIN_MTU), "type", kind)
        assert _takes(netns, f"{kind}-hi", "mtu", str(MAX_MTU), "type", kind)
        assert not _takes(netns, f"{kind}-x1", "mtu", str(MIN_MTU - 1), "type", kind)
        assert not _takes(netns, f"{kind}-x2", "mtu", str(MAX_MTU + 1), "type", kind)
    floor = next(m.ge for m in VxlanOptions.model_fields["underlay_mtu"].metadata
                 if hasattr(m, "ge"))
    smallest = floor - VXLAN_OVERHEAD
    assert smallest == MIN_MTU
    assert _takes(netns, "vx-lo", "mtu", str(smallest), "type", "vxlan", "id", "1", "local",
                  "10.9.0.1", "dev", "u0", "dstport", "4789")
    assert not _takes(netns, "vx-x", "mtu", str(smallest - 1), "type", "vxlan", "id", "2",
                      "local", "10.9.0.1", "dev", "u0", "dstport", "4789")


def test_the_kernel_takes_exactly_the_vnis_a_scenario_may_give(netns: str) -> None:
    for vni in (0, MAX_VNI):
        assert _takes(netns, f"vx{vni}", "type", "vxlan", "id", str(vni), "local", "10.9.0.1",
                      "dev", "u0", "dstport", str(4789 + (vni > 0)))
    assert not _takes(netns, "vx-x", "type", "vxlan", "id", str(MAX_VNI + 1), "local",
                      "10.9.0.1", "dev", "u0", "dstport", "4791")
