"""CPU collector: /proc/stat (per-core jiffies, context switches) and /proc/softirqs (NET_RX/TX).

Per core and for all cores (label ``cpu=all``) it reports CPU seconds spent in each state
between two snapshots: ``cpu_core_user_s``, ``cpu_core_sys_s``, ``cpu_nice_s``,
``cpu_irq_s``, ``cpu_softirq_s``, ``cpu_iowait_s``, ``cpu_steal_s``, ``cpu_idle_s`` and
``cpu_busy_s``; host-wide ``ctxt_switches``; per core and total ``net_rx_softirqs`` and
``net_tx_softirqs``. (``cpu_user_s``/``cpu_sys_s`` are left to the workloads' own rusage.)
Samples carry ``source=proc_stat``. With ``softnet``, also from /proc/net/softnet_stat per core
and total: ``softnet_dropped`` (packets dropped because a core's input backlog was full) and
``softnet_time_squeeze`` (times the receive softirq ran out of budget with work left and
handed it to ksoftirqd: a core saturated by softirq).
"""

from __future__ import annotations

import os
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
from vnetbench.results.model import Sample

STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
               "guest", "guest_nice")
_METRIC_OF_FIELD = {
    "user": "cpu_core_user_s", "nice": "cpu_nice_s", "system": "cpu_core_sys_s",
    "idle": "cpu_idle_s", "iowait": "cpu_iowait_s", "irq": "cpu_irq_s",
    "softirq": "cpu_softirq_s", "steal": "cpu_steal_s",
}
_BUSY = ("user", "nice", "system", "irq", "softirq", "steal")
SYSTEM = "system"
SOFTNET = "/proc/net/softnet_stat"
_SYSTEM_KEYS = {"ctxt", "processes", "procs_running", "procs_blocked", "btime", "intr", "softirq"}


def parse_proc_stat(text: str) -> dict[str, dict[str, int]]:
    """``{"cpu": {...}, "cpu0": {...}, ..., "system": {"ctxt", "intr", "processes", ...}}``.

    CPU values are jiffies (USER_HZ). Fields missing on old kernels are absent.
    """
    out: dict[str, dict[str, int]] = {SYSTEM: {}}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        head = parts[0]
        if head.startswith("cpu"):
            out[head] = {name: int(v) for name, v in zip(STAT_FIELDS, parts[1:], strict=False)}
        elif head in _SYSTEM_KEYS and len(parts) > 1:
            out[SYSTEM][head] = int(parts[1])
    return out


def parse_softnet(text: str) -> dict[str, dict[str, int]]:
    """``{"dropped": {"cpu0": n, ...}, "time_squeeze": {...}}`` from /proc/net/softnet_stat
    (one hexadecimal row per online core: processed, dropped, time_squeeze, ...; the core's
    number is the 13th column where the kernel writes it, else the row's position)."""
    out: dict[str, dict[str, int]] = {"dropped": {}, "time_squeeze": {}}
    for k, line in enumerate(text.splitlines()):
        parts = line.split()
        if len(parts) < 3:
            continue
        cpu = int(parts[12], 16) if len(parts) > 12 else k
        out["dropped"][f"cpu{cpu}"] = int(parts[1], 16)
        out["time_squeeze"][f"cpu{cpu}"] = int(parts[2], 16)
    return out


def parse_softirqs(text: str) -> dict[str, dict[str, int]]:
    """``{"NET_RX": {"cpu0": n, "cpu1": n}, ...}`` from /proc/softirqs."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return {}
    cpus = [c.lower() for c in lines[0].split()]
    out: dict[str, dict[str, int]] = {}
    for line in lines[1:]:
        name, _, rest = line.partition(":")
        values = rest.split()
        out[name.strip()] = {cpu: int(v) for cpu, v in zip(cpus, values, strict=False)}
    return out


class CpuCollector(Collector):
    """Host CPU time by state per core, context switches and network softirq counts."""

    name = "cpu"

    def __init__(self, read: Reader = read_root, *, clk_tck: int | None = None,
                 softnet: bool = False) -> None:
        super().__init__(read)
        self.clk_tck = clk_tck or os.sysconf("SC_CLK_TCK")
        self.softnet = softnet

    def snapshot(self) -> Snapshot:
        t = now_ns()
        counters = parse_proc_stat(self.read(None, "/proc/stat"))
        for name, per_cpu in parse_softirqs(self.read(None, "/proc/softirqs")).items():
            if name in {"NET_RX", "NET_TX"}:
                counters[f"softirq:{name}"] = per_cpu
        if self.softnet:
            try:
                for name, per_cpu in parse_softnet(self.read(None, SOFTNET)).items():
                    counters[f"softnet:{name}"] = per_cpu
            except (OSError, ValueError):
                pass  # no softnet_stat (or an unreadable one): the other counters stand
        return Snapshot(t, counters)

    def delta(self, before: Snapshot, after: Snapshot,
              labels: Mapping[str, str] | None = None) -> list[Sample]:
        base = {**(labels or {}), "source": "proc_stat"}
        t = after.t_ns
        out: list[Sample] = []
        cpus = sorted((k for k in after.counters if k.startswith("cpu")),
                      key=lambda c: -1 if c == "cpu" else int(c[3:]))
        for cpu in cpus:
            if cpu not in before.counters:
                continue
            label = "all" if cpu == "cpu" else cpu[3:]
            b, a = before.counters[cpu], after.counters[cpu]
            deltas = {f: counter_delta(b[f], a[f]) for f in a if f in b}
            for field_name, metric in _METRIC_OF_FIELD.items():
                if field_name in deltas:
                    out.append(sample(metric, deltas[field_name] / self.clk_tck, "s", base, t,
                                      cpu=label))
            busy = sum(deltas.get(f, 0) for f in _BUSY)
            out.append(sample("cpu_busy_s", busy / self.clk_tck, "s", base, t, cpu=label))
        sb, sa = before.counters.get(SYSTEM, {}), after.counters.get(SYSTEM, {})
        if "ctxt" in sa and "ctxt" in sb:
            out.append(sample("ctxt_switches", counter_delta(sb["ctxt"], sa["ctxt"]), "count",
                              base, t))
        for name, metric in (("softirq:NET_RX", "net_rx_softirqs"),
                             ("softirq:NET_TX", "net_tx_softirqs"),
                             ("softnet:dropped", "softnet_dropped"),
                             ("softnet:time_squeeze", "softnet_time_squeeze")):
            b_irq = before.counters.get(name, {})
            a_irq = after.counters.get(name, {})
            total = 0
            for cpu, value in a_irq.items():
                if cpu in b_irq:
                    d = counter_delta(b_irq[cpu], value)
                    total += d
                    out.append(sample(metric, d, "count", base, t, cpu=cpu[3:]))
            if a_irq:
                out.append(sample(metric, total, "count", base, t, cpu="all"))
        return out
