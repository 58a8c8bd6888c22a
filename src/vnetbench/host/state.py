"""What a run created, on disk, so that a killed run can be cleaned up.

Each live run owns ``/run/vnetbench/<short id>.json`` (tmpfs, like /run/netns) listing its
namespaces, cgroup prefix, address block, started processes (PID + start time, so a reused
PID is never killed), directories made on disk outside its work directory (a Hadoop
``data_root``) and its owner (PID + start time). Allocation of the short id and the
address block happens under an exclusive lock so two runs at once never collide, and the
chosen /16 never overlaps a route of the root namespace. ``vnetbench clean`` treats a state
file whose owner is gone, and any ``vnb*`` namespace no live run claims, as leftovers.
"""

from __future__ import annotations

import fcntl
import ipaddress
import json
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vnetbench.errors import AddressError
from vnetbench.host import rtnl
from vnetbench.host.netns import NETNS_DIR

STATE_DIR = Path("/run/vnetbench")
DISK_WORK_ROOT = Path("/var/tmp/vnetbench")
"""Per-run data too large for tmpfs (HDFS blocks): ``<root>/<short id>/``, removed by the
workload that made it, and by ``vnetbench clean`` after a killed run."""
CANDIDATE_NETS = [f"10.{b}" for b in range(200, 255)] + [f"172.{b}" for b in range(16, 32)]


DEAD_STATES = frozenset("ZXx")
"""/proc/PID/stat states of a process that has exited: a zombie (Z: dead, waiting for its
parent, or a late-reaping PID 1, to collect its status) and dead (X, x: being removed)."""


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks since boot) of ``pid`` (fields 3 and 22 of
    /proc/PID/stat; the command name in field 2 may hold spaces and parentheses)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0], int(fields[19])


def process_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (field 22 of /proc/PID/stat)."""
    stat = _proc_stat(pid)
    return None if stat is None else stat[1]


def process_alive(pid: int, start_time: int | None = None) -> bool:
    """Whether ``pid`` is a running process (started at ``start_time``, when given, so a
    reused PID is not taken for it). A zombie is not alive: a SIGKILLed run whose parent has
    not reaped it yet has stopped, and its leftovers are a dead run's."""
    stat = _proc_stat(pid)
    return (stat is not None and stat[0] not in DEAD_STATES
            and (start_time is None or stat[1] == start_time))


@dataclass
class RunState:
    short_id: str
    net: str
    owner_pid: int
    owner_start: int | None
    namespaces: list[str] = field(default_factory=list)
    cgroup_prefix: str = ""
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    work_dir: str = ""
    created_at: float = field(default_factory=time.time)
    data_dirs: list[str] = field(default_factory=list)
    """Directories a workload made for this run outside ``work_dir`` (Hadoop's
    ``<data_root>/<short id>``), recorded before they are made; ``clean`` removes them."""
    machines: list[dict[str, Any]] = field(default_factory=list)
    """The real machines of a lab over SSH (their specs), recorded before they are touched;
    ``clean`` runs the run's teardown scripts there."""

    @property
    def path(self) -> Path:
        return STATE_DIR / f"{self.short_id}.json"

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self)))
        tmp.replace(self.path)

    def add_process(self, pid: int) -> None:
        self.processes.append((pid, process_start_time(pid)))
        self.save()

    def add_data_dir(self, path: Path) -> None:
        """Record ``path`` (about to be made for this run) so ``clean`` removes it."""
        if str(path) not in self.data_dirs:
            self.data_dirs.append(str(path))
            self.save()

    def owns_data_dir(self, path: str) -> bool:
        """Whether ``path`` is one ``clean`` may remove: absolute, named after this run
        (the run id is one of its parts) and not a symlink."""
        p = Path(path)
        return (p.is_absolute() and self.short_id in p.parts and ".." not in p.parts
                and not p.is_symlink())

    def owner_alive(self) -> bool:
        return process_alive(self.owner_pid, self.owner_start)

    @staticmethod
    def load(path: Path) -> RunState:
        data = json.loads(path.read_text())
        data["processes"] = [tuple(p) for p in data.get("processes", [])]
        return RunState(**data)


def all_states() -> list[RunState]:
    if not STATE_DIR.is_dir():
        return []
    states = []
    for path in sorted(STATE_DIR.glob("*.json")):
        try:
            states.append(RunState.load(path))
        except (ValueError, TypeError, KeyError):
            continue
    return states


@contextmanager
def allocation_lock() -> Iterator[None]:
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(STATE_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def root_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 destination routed (any table) or addressed in this namespace (the root
    one when called from the main thread), the default route excluded; asked over
    rtnetlink, no ``ip`` process."""
    with rtnl.Rtnl() as sock:
        found = rtnl.ipv4_networks(sock)
    nets = []
    for address, prefix in found:
        try:
            nets.append(ipaddress.IPv4Network(f"{address}/{prefix}", strict=False))
        except ValueError:
            continue
    return nets


def choose_net(taken: set[str], routes: list[ipaddress.IPv4Network]) -> str:
    """First candidate /16 that no live run uses and no root route overlaps (pure)."""
    for net in CANDIDATE_NETS:
        block = ipaddress.ip_network(f"{net}.0.0/16")
        if net in taken:
            continue
        if any(block.overlaps(r) for r in routes):
            continue
        return net
    raise AddressError(
        "no free /16 for the lab: every candidate (10.200-254.0.0/16, 172.16-31.0.0/16) "
        "overlaps a route of this host or another running lab; stop other runs or "
        "`vnetbench clean` leftovers"
    )


def allocate(work_root: Path) -> RunState:
    """Pick an unused short id and address block and claim them with a state file."""
    with allocation_lock():
        live = [s for s in all_states() if s.owner_alive()]
        taken_ids = {s.short_id for s in all_states()}
        existing = {p.name for p in NETNS_DIR.iterdir()} if NETNS_DIR.is_dir() else set()
        for _ in range(1000):
            short = secrets.token_hex(2)
            if short not in taken_ids and not any(n.startswith(f"vnb{short}") for n in existing):
                break
        else:  # pragma: no cover - 65536 ids
            raise AddressError("no free run id")
        net = choose_net({s.net for s in live}, root_networks())
        pid = os.getpid()
        state = RunState(short, net, pid, process_start_time(pid),
                         work_dir=str(work_root / short))
        state.save()
        return state
