"""Starting, waiting for and stopping the QEMU guests of one lab (the ``vm`` backend's node
guests, or the guests that are the emulated hosts of a ``vmhost`` lab).

Every guest starts at once: QEMU runs in the namespace of its TAP devices, in a cgroup of the
run (whose CPU quota and cpuset bound its vCPUs), on the CPUs placement gives it, tracked by
PID; then each guest's agent is awaited in parallel. The accelerator is chosen once per run
(``accel``): KVM when a short boot test says it runs at speed, TCG otherwise.

A guest with a disk (``resources.disk``) gets a sparse raw file under the run's directory on
this host's disk (``DISK_WORK_ROOT/<run id>``, recorded in the run's state before it is made,
so teardown and ``vnetbench clean`` remove it), which its first boot commands format (ext4)
and mount at ``GUEST_DISK_MOUNT``.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from vnetbench.backends.base import Backend, BackendPlan, LabContext
from vnetbench.backends.vm.accel import choose_accel
from vnetbench.backends.vm.find import find_qemu
from vnetbench.backends.vm.guest_kernel import find_kernel
from vnetbench.backends.vm.qemu import Guest, GuestSpec, Nic
from vnetbench.host.cgroups import NodeCgroup
from vnetbench.host.state import DISK_WORK_ROOT
from vnetbench.lab.topology import Resources, Topology
from vnetbench.layers.base import AnyLayer

DEFAULT_MEMORY_MIB = 512
BOOT_TIMEOUT_S = {"kvm": 60.0, "tcg": 180.0}
SHUTDOWN_GRACE_S = 3.0
EMULATED_CPU = "emulated CPU (TCG): not comparable with KVM or native"
GUEST_DISK_MOUNT = "/var/tmp"
"""Where a guest's disk is mounted: the directory workloads keep a guest's files under."""
DISK_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("modprobe", "virtio_blk"), ("modprobe", "ext4"),
    ("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1",
     "/dev/vda"),
    ("mount", "-o", "noatime", "/dev/vda", GUEST_DISK_MOUNT))
"""A guest's first boot commands when it has a disk: format it and mount it."""


def per_node_mib(size: int | None, nodes: int) -> int:
    """MiB a guest holding ``nodes`` nodes gets of a per-node ``size`` in bytes (0: none)."""
    return nodes * (size // 2**20) if size else 0


def disk_mib(resources: Resources, nodes: int = 1) -> int:
    """MiB of disk a guest holding ``nodes`` nodes gets (0: none)."""
    return per_node_mib(resources.disk, nodes)


def with_disk(commands: tuple[tuple[str, ...], ...], mib: int) -> tuple[tuple[str, ...], ...]:
    """A guest's boot commands, the disk's first when it has one."""
    return (*DISK_COMMANDS, *commands) if mib else commands


@dataclass(frozen=True)
class GuestPlan:
    """One guest: its name, the namespace of its TAPs, its NICs and what it runs at boot."""

    index: int
    name: str
    hostname: str
    netns: str
    nics: tuple[Nic, ...]
    vcpus: int
    memory_mib: int
    boot_commands: tuple[tuple[str, ...], ...]
    disk_mib: int = 0
    """MiB of the guest's own disk (0: none; its files then live in its memory)."""


@dataclass(frozen=True)
class VmPlan(BackendPlan):
    """The guests started once the TAPs exist."""

    guests: tuple[GuestPlan, ...] = ()

    def describe(self) -> list[str]:
        lines = ["== virtual machines (QEMU, started together once the TAPs exist)"]
        for g in self.guests:
            nics = ", ".join(f"{n.guest_name} {n.mac} on TAP {n.tap}" for n in g.nics)
            disk = f", a {g.disk_mib} MiB disk" if g.disk_mib else ""
            lines.append(f"    {g.name} ({g.hostname}) in {g.netns}: {g.vcpus} vCPU, "
                         f"{g.memory_mib} MiB{disk}, {nics}; at boot:")
            lines += [f"        {' '.join(cmd)}" for cmd in g.boot_commands]
        return lines


def guest_mac(topo: Topology, kind: int, index: int) -> str:
    """A locally administered MAC unique to the run, the kind of guest and its index."""
    sid = topo.names.short_id
    return f"52:{0x56 + kind:02x}:{sid[0:2]}:{sid[2:4]}:{index >> 8:02x}:{index & 0xff:02x}"


def disk_dir(lab: LabContext) -> Path:
    """Where the run's guest disks go on this host's disk, claimed in the run's state (the
    run's directory there when this is the first to make it) before it is made."""
    run_dir = DISK_WORK_ROOT / lab.topo.names.short_id
    lab.state.add_data_dir(run_dir if not run_dir.exists() else run_dir / "disks")
    return run_dir / "disks"


class GuestFleet:
    """The guests of one lab."""

    def __init__(self) -> None:
        self.guests: list[tuple[Guest, subprocess.Popen[bytes]]] = []
        self.accel: dict[str, str | bool] = {}
        self.boot_seconds: list[float] = []

    def start(self, lab: LabContext, plans: Sequence[GuestPlan],
              cgroup_of: Callable[[GuestPlan], NodeCgroup],
              cpus_of: Callable[[GuestPlan], tuple[int, ...] | None]) -> list[Guest]:
        """Start every guest of ``plans`` and wait until each agent answers."""
        choice = choose_accel()
        self.accel = {"accel": choice.accel, "why": choice.reason,
                      "emulated_cpu": choice.accel == "tcg"}
        kernel = find_kernel()
        started = time.monotonic()
        disks = disk_dir(lab) if any(g.disk_mib for g in plans) else None
        for g in plans:
            disk = disks / f"{g.name}.img" if disks is not None and g.disk_mib else None
            guest = Guest(GuestSpec(name=g.name, hostname=g.hostname, nics=g.nics,
                                    vcpus=g.vcpus, memory_mib=g.memory_mib, accel=choice.accel,
                                    work_dir=lab.work_dir / g.name,
                                    boot_commands=g.boot_commands, disk=disk,
                                    disk_mib=g.disk_mib), kernel)
            proc = lab.tracker.spawn(guest.qemu_argv(), netns=g.netns,
                                     log=lab.work_dir / f"{g.name}.log",
                                     cgroup_procs=cgroup_of(g).procs_files, cpus=cpus_of(g),
                                     where=g.netns)
            self.guests.append((guest, proc))
        timeout = BOOT_TIMEOUT_S[choice.accel]

        def ready(pair: tuple[Guest, subprocess.Popen[bytes]]) -> float:
            pair[0].wait_ready(pair[1], timeout)
            return time.monotonic() - started

        with ThreadPoolExecutor(max_workers=max(1, len(self.guests))) as pool:
            self.boot_seconds = list(pool.map(ready, self.guests))
        return [guest for guest, _ in self.guests]

    def facts(self) -> dict[str, object]:
        facts: dict[str, object] = {**self.accel,
                                    "boot_seconds": [round(s, 2) for s in self.boot_seconds]}
        if self.accel.get("emulated_cpu"):
            facts["caveat"] = EMULATED_CPU
        return {"vm": facts}

    def stop(self, lab: LabContext) -> list[str]:
        """Power every guest off (SIGKILL after a grace); problems met."""
        problems: list[str] = []

        def down(pair: tuple[Guest, subprocess.Popen[bytes]]) -> None:
            try:
                pair[0].shutdown(pair[1], SHUTDOWN_GRACE_S)
            except Exception as exc:
                problems.append(f"stopping vm guest {pair[0].spec.name}: {exc}")

        if self.guests:
            with ThreadPoolExecutor(max_workers=len(self.guests)) as pool:
                list(pool.map(down, self.guests))
        for _, proc in self.guests:
            lab.tracker.stop(proc)
        return problems


class FleetBackend(Backend):
    """What the backends made of QEMU guests share: the checks, the fleet, its facts and
    its stop."""

    def __init__(self) -> None:
        self.fleet = GuestFleet()

    @classmethod
    def check(cls, layer: AnyLayer) -> None:
        find_qemu()  # MissingToolError naming the setup step
        find_kernel()

    def facts(self) -> dict[str, object]:
        return self.fleet.facts()

    def stop(self, lab: LabContext) -> list[str]:
        return self.fleet.stop(lab)


def guest_limits(resources: Resources) -> Resources:
    """What of a node's resources its QEMU process's cgroup enforces (CPU; the memory is
    the guest's RAM)."""
    return Resources(cpus=resources.cpus, cpuset=resources.cpuset)
