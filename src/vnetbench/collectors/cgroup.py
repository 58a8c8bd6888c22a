"""cgroup CPU collector: CPU time consumed by cgroups between two snapshots.

Reads cgroup v1 ``cpuacct.usage`` (nanoseconds) or v2 ``cpu.stat`` (``usage_usec``,
``user_usec``, ``system_usec``) — the version is told by the file name — and reports
``cgroup_cpu_s`` (and, for v2, ``cgroup_cpu_user_s``/``cgroup_cpu_sys_s``) with label
``cgroup`` set to the name given for each path.
"""

from __future__ import annotations

from collections.abc import Mapping

from vnetbench.collectors.base import (
    Collector,
    Reader,
    Snapshot,
    counter_delta,
    now_ns,
    read_root,
    sample,
)
from vnetbench.errors import UnsupportedError
from vnetbench.results.model import Sample


def parse_cpuacct_usage(text: str) -> dict[str, int]:
    """cgroup v1 ``cpuacct.usage``: ``{"usage_ns": n}``."""
    return {"usage_ns": int(text.split()[0])}


def parse_cpu_stat(text: str) -> dict[str, int]:
    """cgroup v2 ``cpu.stat``: ``{"usage_usec": n, "user_usec": n, ...}`` (ns-scaled below)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def parse_cgroup_cpu(path: str, text: str) -> dict[str, int]:
    """Nanosecond counters ``usage_ns`` (+ ``user_ns``, ``system_ns`` for v2) from either file."""
    if path.endswith("cpuacct.usage"):
        return parse_cpuacct_usage(text)
    if path.endswith("cpu.stat"):
        stat = parse_cpu_stat(text)
        if "usage_usec" not in stat:
            raise UnsupportedError(f"{path} has no usage_usec line: is it a cgroup v2 cpu.stat?")
        out = {"usage_ns": stat["usage_usec"] * 1000}
        for key in ("user", "system"):
            if f"{key}_usec" in stat:
                out[f"{key}_ns"] = stat[f"{key}_usec"] * 1000
        return out
    raise UnsupportedError(f"{path}: expected a cgroup v1 cpuacct.usage or v2 cpu.stat file")


_METRICS = (("usage_ns", "cgroup_cpu_s"), ("user_ns", "cgroup_cpu_user_s"),
            ("system_ns", "cgroup_cpu_sys_s"))


class CgroupCpuCollector(Collector):
    """CPU seconds used by named cgroups (``{"lab": "/sys/fs/cgroup/vnetbench/cpu.stat"}``)."""

    name = "cgroup"

    def __init__(self, paths: Mapping[str, str], read: Reader = read_root) -> None:
        super().__init__(read)
        self.paths = dict(paths)

    def snapshot(self) -> Snapshot:
        t = now_ns()
        return Snapshot(t, {name: parse_cgroup_cpu(path, self.read(None, path))
                            for name, path in self.paths.items()})

    def delta(self, before: Snapshot, after: Snapshot,
              labels: Mapping[str, str] | None = None) -> list[Sample]:
        base = dict(labels or {})
        out: list[Sample] = []
        for name in sorted(after.counters):
            a, b = after.counters[name], before.counters.get(name)
            if b is None:
                continue
            for key, metric in _METRICS:
                if key in a and key in b:
                    out.append(sample(metric, counter_delta(b[key], a[key]) / 1e9, "s", base,
                                      after.t_ns, cgroup=name))
        return out
