"""Per-node cgroups: CPU quota, cpuset and memory limits, and per-node CPU accounting.

Works with whichever hierarchy the host has: cgroup v1 (separate ``cpu``, ``cpuacct``,
``cpuset``, ``memory`` mounts under /sys/fs/cgroup) or the v2 unified hierarchy (when
/sys/fs/cgroup itself is cgroup2 with those controllers). Every directory is
``vnb<id>/n<j>`` under the controller's root, created by ``create`` and removed (children
first) by ``remove``; ``vnetbench clean`` removes ``vnb*`` directories of dead runs. Under v1 a
cgroup is made only in the hierarchies it uses: ``cpuacct`` always (CPU accounting, and every
process the run starts is found there), ``cpu``, ``memory`` and ``cpuset`` when a limit of
theirs is set, so a thousand nodes without limits cost a thousand directories, not four;
and a node without limits may leave even that until a process first joins it or its CPU
time is read (``create(..., lazy=True)``), so a build-only lab makes no cgroup at all.
A process joins a node's cgroups by writing its PID to each ``procs`` file before it enters
the node's namespace (``ip netns exec`` would hide /sys/fs/cgroup).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from vnetbench.errors import LabError
from vnetbench.lab.topology import Resources

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory")
CFS_PERIOD_US = 100_000


def cgroup_version(root: Path = CGROUP_ROOT) -> int:
    """2 when ``root`` is a cgroup2 mount with controllers, else 1."""
    return 2 if (root / "cgroup.controllers").exists() else 1


class NodeCgroup:
    """The cgroup directories of one node and how to join them.

    With ``make``, the directories are created only when first needed (a process joins the
    node, its CPU accounting is read): a node without limits that never runs a process (a
    build-only lab of a thousand nodes) costs no cgroup at all."""

    def __init__(self, dirs: tuple[Path, ...], version: int,
                 make: Callable[[], object] | None = None) -> None:
        self._dirs = dirs
        self.version = version
        self._make = make
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        made = "" if self._make is None else ", not made yet"
        return f"NodeCgroup({[str(d) for d in self._dirs]}, v{self.version}{made})"

    @property
    def dirs(self) -> tuple[Path, ...]:
        """The node's directories, created now if they were left for later."""
        if self._make is not None:
            with self._lock:
                if self._make is not None:
                    self._make()
                    self._make = None
        return self._dirs

    @property
    def procs_files(self) -> tuple[Path, ...]:
        return tuple(d / "cgroup.procs" for d in self.dirs)

    def cpu_usage_ns(self) -> int:
        """CPU time used by the node's processes so far (nanoseconds)."""
        for d in self.dirs:
            if self.version == 1 and (d / "cpuacct.usage").exists():
                return int((d / "cpuacct.usage").read_text())
            if self.version == 2 and (d / "cpu.stat").exists():
                for line in (d / "cpu.stat").read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) * 1000
        raise LabError(f"no CPU accounting file under {[str(d) for d in self.dirs]}")


def limit_files(resources: Resources, version: int) -> dict[str, str]:
    """Controller file -> value for these limits (pure; v1 names are ``ctrl/file``)."""
    files: dict[str, str] = {}
    if version == 1:
        if resources.cpus is not None:
            files["cpu/cpu.cfs_period_us"] = str(CFS_PERIOD_US)
            files["cpu/cpu.cfs_quota_us"] = str(int(resources.cpus * CFS_PERIOD_US))
        if resources.memory is not None:
            files["memory/memory.limit_in_bytes"] = str(resources.memory)
        if resources.cpuset is not None:
            files["cpuset/cpuset.cpus"] = resources.cpuset
    else:
        if resources.cpus is not None:
            files["cpu.max"] = f"{int(resources.cpus * CFS_PERIOD_US)} {CFS_PERIOD_US}"
        if resources.memory is not None:
            files["memory.max"] = str(resources.memory)
        if resources.cpuset is not None:
            files["cpuset.cpus"] = resources.cpuset
    return files


def v1_controllers(resources: Resources) -> tuple[str, ...]:
    """The v1 hierarchies a cgroup with these limits needs (accounting always)."""
    wanted = {"cpuacct"}
    if resources.cpus is not None:
        wanted.add("cpu")
    if resources.memory is not None:
        wanted.add("memory")
    if resources.cpuset is not None:
        wanted.add("cpuset")
    return tuple(c for c in V1_CONTROLLERS if c in wanted)


class CgroupSet:
    """The cgroups of one run: ``vnb<id>`` with a child per node."""

    def __init__(self, prefix: str, root: Path = CGROUP_ROOT) -> None:
        self.prefix = prefix
        self.root = root
        self.version = cgroup_version(root)
        self._made: set[Path] = set()
        self._lock = threading.Lock()
        """Held while a run directory is made and set up (nodes' cgroups are made on a
        thread while the daemons' one may be made on another)."""

    def run_dirs(self, resources: Resources | None = None) -> list[Path]:
        """The run's directory in each hierarchy a cgroup with ``resources`` uses (None:
        every hierarchy the run may use)."""
        if self.version == 2:
            return [self.root / self.prefix]
        wanted = V1_CONTROLLERS if resources is None else v1_controllers(resources)
        return [self.root / c / self.prefix for c in wanted if (self.root / c).is_dir()]

    def create(self, name: str, resources: Resources, *, lazy: bool = False) -> NodeCgroup:
        """Cgroups ``vnb<id>/<name>`` in the hierarchies they use, with these limits; with
        ``lazy``, made when the node first needs them (see ``NodeCgroup``)."""
        if lazy:
            dirs = tuple(run_dir / name for run_dir in self.run_dirs(resources))
            return NodeCgroup(dirs, self.version,
                              make=lambda: self._make_node(name, resources))
        return NodeCgroup(self._make_node(name, resources), self.version)

    def _make_node(self, name: str, resources: Resources) -> tuple[Path, ...]:
        """Make the node's directories (and the run's, once) and write its limits."""
        dirs: list[Path] = []
        for run_dir in self.run_dirs(resources):
            with self._lock:
                if run_dir not in self._made:
                    self._mkdir(run_dir)
                    if self.version == 2:
                        self._enable_v2_controllers(run_dir)
                    if run_dir.parent.name == "cpuset" or (self.version == 2 and
                                                           resources.cpuset):
                        self._inherit_cpuset(run_dir)
                    self._made.add(run_dir)
            node_dir = run_dir / name
            self._mkdir(node_dir)
            if run_dir.parent.name == "cpuset":
                self._inherit_cpuset(node_dir)
            dirs.append(node_dir)
        for key, value in limit_files(resources, self.version).items():
            if self.version == 1:
                ctrl, _, fname = key.partition("/")
                target = self.root / ctrl / self.prefix / name / fname
            else:
                target = self.root / self.prefix / name / key
            try:
                target.write_text(value)
            except OSError as exc:
                raise LabError(f"cannot set {target} = {value}: {exc.strerror}") from exc
        return tuple(dirs)

    def all_run_dirs(self) -> list[Path]:
        """The run's directory in every mounted hierarchy where one exists (a container
        engine makes its containers' cgroups in all of them: devices, pids, freezer, ...)."""
        return [base / self.prefix for base in hierarchies(self.root)
                if (base / self.prefix).is_dir()]

    def kill_all(self) -> list[str]:
        """Kill every process still in the run's cgroups (a cgroup is exactly "what this run
        started", even a child the lab never got to track); what could not be killed."""
        return [f"process {pid} in {run_dir} survived SIGKILL"
                for run_dir in self.all_run_dirs()
                for pid in kill_tree(run_dir)]

    def remove(self) -> list[str]:
        """Remove the run's whole ``vnb<id>`` tree in every hierarchy (children first, so a
        cgroup made after the list was read is not missed); returns what could not be."""
        failed = []
        for run_dir in self.all_run_dirs():
            remove_tree(run_dir)
            if run_dir.exists():
                left = [str(p) for p in [*run_dir.glob("*/"), run_dir] if p.is_dir()]
                failed.append(f"cgroup {', '.join(left)} could not be removed (tasks left?)")
        return failed

    def _mkdir(self, path: Path) -> None:
        try:
            path.mkdir()
        except FileExistsError:
            pass
        except OSError as exc:
            raise LabError(f"cannot create cgroup {path}: {exc.strerror}") from exc

    @staticmethod
    def _inherit_cpuset(path: Path) -> None:
        """A v1 cpuset cgroup takes no task until cpus and mems are set: copy the parent's."""
        for fname in ("cpuset.cpus", "cpuset.mems"):
            target = path / fname
            if target.exists() and not target.read_text().strip():
                target.write_text((path.parent / fname).read_text().strip() or "0")

    @staticmethod
    def _enable_v2_controllers(run_dir: Path) -> None:
        available = set((run_dir.parent / "cgroup.controllers").read_text().split())
        wanted = [c for c in ("cpu", "memory", "cpuset") if c in available]
        for path in (run_dir.parent, run_dir):
            control = path / "cgroup.subtree_control"
            try:
                control.write_text(" ".join(f"+{c}" for c in wanted))
            except OSError:
                continue


def hierarchies(root: Path = CGROUP_ROOT) -> list[Path]:
    """The root of every mounted cgroup hierarchy (v2: ``root`` itself; v1: each controller's
    mount under it, named or unified ones included)."""
    if cgroup_version(root) == 2:
        return [root]
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())


def leftover_cgroups(prefix_filter: str = "vnb", root: Path = CGROUP_ROOT) -> list[Path]:
    """Every ``vnb*`` run directory in any hierarchy (for ``vnetbench clean``)."""
    found = []
    for base in hierarchies(root):
        found += [p for p in base.iterdir() if p.is_dir() and p.name.startswith(prefix_filter)]
    return found


def pids_in_tree(path: Path) -> list[int]:
    """Every process in the cgroup ``path`` or its children."""
    pids: list[int] = []
    for dirpath, _, _ in os.walk(path):
        try:
            with open(os.path.join(dirpath, "cgroup.procs")) as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            continue
    return pids


def kill_tree(path: Path, timeout: float = 3.0) -> list[int]:
    """SIGKILL every process in the cgroup tree and wait until it is empty; the survivors."""
    deadline = time.monotonic() + timeout
    while True:
        pids = pids_in_tree(path)
        if not pids or time.monotonic() > deadline:
            return pids
        for pid in pids:
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def remove_tree(path: Path) -> None:
    """rmdir a cgroup directory and its child cgroups (children first)."""
    for dirpath, dirnames, _ in os.walk(path, topdown=False):
        for d in dirnames:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(dirpath, d))
    with contextlib.suppress(OSError):
        path.rmdir()
