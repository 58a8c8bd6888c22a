"""Plans of the ``vm`` and ``vmhost`` backends (pure: nothing boots): TAPs where veths would
be, the guests' boot commands, and the split of a layer's plan between this host and the
guests that are its hosts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from vnetbench.backends.catalog import LAYERS, get_layer
from vnetbench.backends.lab_plan import make_plan
from vnetbench.backends.vm.fleet import DISK_COMMANDS, GUEST_DISK_MOUNT, VmPlan
from vnetbench.backends.vm.hosts import HOST_MEMORY_MIB, split_plan
from vnetbench.backends.vm.layers import VMHOST_BASES as BASES
from vnetbench.backends.vm.qemu import GuestSpec, QemuFiles, qemu_command, validate
from vnetbench.errors import LabError
from vnetbench.lab.plan import IpBatch
from vnetbench.lab.topology import Addresses, Names, Resources, Topology
from vnetbench.layers.base import PlanContext
from vnetbench.layers.registry import NAMESPACE_LAYERS

TOPO = Topology(hosts=2, nodes=4, names=Names("abcd"), addresses=Addresses("10.210"))
CTX = PlanContext(run_dir=Path("/run/vnetbench/work/abcd"))


def plan(layer: str, topo: Topology = TOPO):  # type: ignore[no-untyped-def]
    lay = get_layer(layer)
    return make_plan(topo, lay, lay.options(), CTX, seed=1)


def test_every_layer_that_wires_nodes_through_node_link_has_a_vm_twin() -> None:
    vm = {name for name, cls in LAYERS.items() if cls.backend == "vm"}
    assert vm == {"vm-bridge", "vm-nat", "vm-routed", "vm-vxlan", "vm-wireguard",
                  "vm-userspace"}
    assert vm == {f"vm-{n}" for n, cls in NAMESPACE_LAYERS.items() if cls.supports_vm_nodes}
    for name in vm:
        assert LAYERS[name].twin == name.removeprefix("vm-")
        assert LAYERS[name].summary.endswith(NAMESPACE_LAYERS[LAYERS[name].twin].summary)
        assert not LAYERS[name].supports_vm_nodes
    assert {f"vmhost-{b}" for b in BASES} <= set(LAYERS)


@pytest.mark.parametrize("layer", ["vm-bridge", "vm-routed", "vm-vxlan", "vm-nat"])
def test_vm_nodes_are_guests_on_taps_with_no_namespace_of_their_own(layer: str) -> None:
    lab = plan(layer)
    assert not any(ns.startswith("vnbabcd-n") for ns in lab.kernel.namespaces)
    text = lab.kernel.render()
    assert "type veth" not in text.split("== host links")[1]  # no node veths
    assert isinstance(lab.backend, VmPlan) and len(lab.backend.guests) == 4
    for p, g in zip(lab.placements, lab.backend.guests, strict=True):
        assert p.tap is not None and f"tuntap add dev {p.tap} mode tap" in text
        assert g.nics[0].tap == p.tap and g.nics[0].guest_name == p.ifname
        assert g.netns == TOPO.names.host_ns(p.host)  # QEMU runs where its TAP is
        assert any(cmd[:3] == ("ip", "addr", "add") and cmd[3].startswith(p.ip)
                   for cmd in g.boot_commands)
    assert len({g.nics[0].mac for g in lab.backend.guests}) == 4


def test_vm_size_comes_from_the_nodes_resources() -> None:
    topo = Topology(hosts=1, nodes=2, names=Names("abcd"), addresses=Addresses("10.210"),
                    resources=Resources(cpus=1.5, memory=1024 * 2**20))
    lab = plan("vm-bridge", topo)
    assert isinstance(lab.backend, VmPlan)
    assert {(g.vcpus, g.memory_mib) for g in lab.backend.guests} == {(2, 1024)}


def test_a_guest_disk_is_formatted_and_mounted_first_and_given_to_qemu(tmp_path: Path) -> None:
    disk = 512 * 2**20
    topo = Topology(hosts=1, nodes=2, names=Names("abcd"), addresses=Addresses("10.210"),
                    resources=Resources(memory=1024 * 2**20, disk=disk))
    vm = plan("vm-bridge", topo)
    assert isinstance(vm.backend, VmPlan)
    for g in vm.backend.guests:
        assert g.disk_mib == 512
        assert g.boot_commands[:len(DISK_COMMANDS)] == DISK_COMMANDS
        assert DISK_COMMANDS[-1][-1] == GUEST_DISK_MOUNT == "/var/tmp"
    assert "a 512 MiB disk" in "\n".join(vm.backend.describe())
    # a vmhost guest gets its nodes' share of disk and memory
    host = plan("vmhost-bridge", topo)
    assert isinstance(host.backend, VmPlan)
    [g] = host.backend.guests
    assert (g.disk_mib, g.memory_mib) == (1024, HOST_MEMORY_MIB + 2048)
    # without one, nothing is formatted
    bare = plan("vm-bridge")
    assert isinstance(bare.backend, VmPlan)
    assert all(g.disk_mib == 0 and g.boot_commands[0][0] != "modprobe"
               for g in bare.backend.guests)
    spec = GuestSpec("vnbabcd-v0", "n0", (), 1, 1024, "tcg", tmp_path, disk=tmp_path / "d.img",
                     disk_mib=512)
    files = QemuFiles(tmp_path / "k", tmp_path / "i", tmp_path / "c", tmp_path / "p", 5000)
    argv = qemu_command(spec, files, "qemu-system-x86_64")
    assert f"file={tmp_path / 'd.img'},format=raw,if=none,id=disk0" in argv[argv.index("-drive") + 1]
    assert "virtio-blk-pci,drive=disk0" in argv
    with pytest.raises(ValueError, match="at least 64 MiB"):
        validate(replace(spec, disk_mib=16))
    assert "-drive" not in qemu_command(replace(spec, disk=None), files, "qemu-system-x86_64")


def test_vmhost_keeps_only_the_switch_here_and_sends_each_hosts_part_to_its_guest() -> None:
    lab = plan("vmhost-bridge")
    assert lab.kernel.namespaces == ("vnbabcd-sw",)
    local = [a for a in lab.kernel.actions() if isinstance(a, IpBatch)]
    assert all(a.netns in (None, "vnbabcd-sw") for a in local)
    assert "tuntap add dev vnbabcds0 mode tap" in lab.kernel.render()
    assert isinstance(lab.backend, VmPlan)
    g0 = lab.backend.guests[0]
    assert g0.netns == "vnbabcd-sw" and g0.nics[0].guest_name == TOPO.names.underlay(0)
    cmds = [" ".join(c) for c in g0.boot_commands]
    # node namespaces of host 0 only (nodes 0 and 2), created before they are used
    assert "ip netns add vnbabcd-n0" in cmds and "ip netns add vnbabcd-n2" in cmds
    assert "ip netns add vnbabcd-n1" not in cmds
    first_use = next(i for i, c in enumerate(cmds) if c.startswith("ip -n vnbabcd-n0 "))
    assert cmds.index("ip netns add vnbabcd-n0") < first_use
    assert any(c.startswith("ip link add vnbabcdb0 ") for c in cmds)  # the host's bridge
    assert any(c.startswith("ip netns exec vnbabcd-n0 sysctl") for c in cmds)


def test_vmhost_refuses_a_layer_whose_host_part_is_more_than_links() -> None:
    lay = get_layer("wireguard")
    kernel = make_plan(TOPO, lay, lay.options(), CTX).kernel
    with pytest.raises(LabError, match="cannot run inside a VM host"):
        split_plan(TOPO, "wireguard", kernel)
