"""Contention: how much of the machine's CPU other work used while the baseline was measured.

Each interleaved slice records the machine's CPU time by state (``cpu_*_s``, ``cpu=all``,
``source=proc_stat``) and the CPU of the lab's own processes (``cgroup_cpu_s``: the server's
node, the layer's daemons, the client), all with the slice's time stamp. The machine's busy
time less the lab's and less interrupt and softirq time (the lab's packets, wherever the
kernel ran them) is what the rest of the machine did (``external_cpu``, which the per-trial
warning measures too); as a share of the machine's CPU time it is the slice's *outside
share* (``outside_shares``: (layer, t_ns) -> share).

Why it matters: when other work keeps a CPU busy, a round trip's tail (p99) is how long the
client or the server waited for that CPU, which depends on how the scheduler interleaves them
with the neighbour, not on the layer. Measured on this project's 2-core VM with a busy loop on
one CPU (``benchmarks/pairing.py``): the paths' p50s, rates and CPU costs kept their direction,
while userspace's crr p99 at 2 hosts went from x2.1 worse (quiet) to x0.46 better (busy) in
every busy run, with the A/A pair agreeing (8.8 % floor). So a tail percentile is not judged
where the baseline's slices ran with more than ``CONTENDED_SHARE`` of the machine busy outside
the lab (``tail_contention``); medians, rates and CPU per unit of work still are. Quiet runs
here show 0-3 %, the busy loop 25-33 %.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence

from vnetbench.results.metrics import percentile_of
from vnetbench.results.model import Sample

CONTENDED_SHARE = 0.10
"""Share of the machine's CPU time used outside the lab above which tails are not judged."""
TAIL_PERCENTILE = 90.0
"""Latency percentiles from this one up are tails."""
_TOTAL = ("cpu_busy_s", "cpu_idle_s", "cpu_iowait_s")

SliceKey = tuple[str, int]
"""(layer, t_ns): one path's slice of one round."""


def external_cpu(samples: Iterable[Sample]) -> Sample | None:
    """``cpu_external_s`` of one trial from its collector samples, or None if not computable.

    Host-wide busy CPU (``cpu_busy_s`` with ``cpu=all``, from the CPU collector) minus the
    lab's own cgroups (sum of ``cgroup_cpu_s``) minus interrupt and softirq time (network
    processing done on the lab's behalf). What remains ran outside the lab. Feed the result
    to ``warnings.check_external_cpu``; ``outside_shares`` takes it per slice.
    """
    busy: Sample | None = None
    lab = irq = 0.0
    have_cgroups = False
    for s in samples:
        if s.labels.get("cpu") == "all" and s.metric == "cpu_busy_s":
            busy = s
        elif s.labels.get("cpu") == "all" and s.metric in {"cpu_softirq_s", "cpu_irq_s"}:
            irq += s.value
        elif s.metric == "cgroup_cpu_s":
            lab += s.value
            have_cgroups = True
    if busy is None or not have_cgroups:
        return None
    labels = {k: v for k, v in busy.labels.items() if k not in {"cpu", "source"}}
    return Sample("cpu_external_s", max(0.0, busy.value - lab - irq), "s", labels, busy.t_ns)


def outside_shares(samples: Iterable[Sample]) -> dict[SliceKey, float]:
    """Per interleaved slice, the share of the machine's CPU time spent outside the lab
    (``external_cpu`` of the slice's samples over the machine's CPU time in it)."""
    slices: dict[SliceKey, list[Sample]] = {}
    for s in samples:
        if "pair" not in s.labels:
            continue
        machine = (s.labels.get("cpu") == "all" and s.labels.get("source") == "proc_stat"
                   and s.metric in (*_TOTAL, "cpu_irq_s", "cpu_softirq_s"))
        if machine or (s.metric == "cgroup_cpu_s" and "cgroup" in s.labels):
            slices.setdefault((s.labels.get("layer", ""), s.t_ns), []).append(s)
    out: dict[SliceKey, float] = {}
    for key, members in slices.items():
        outside = external_cpu(members)
        total = sum(s.value for s in members if s.metric in _TOTAL)
        if outside is not None and total > 0:
            out[key] = outside.value / total
    return out


def is_tail(metric: str) -> bool:
    parsed = percentile_of(metric)
    return parsed is not None and parsed[1] >= TAIL_PERCENTILE


def tail_contention(metric: str, base: Sequence[Sample],
                    shares: Mapping[SliceKey, float] | None) -> float:
    """For a tail percentile, the median outside share of the baseline's slices ``base``
    (nan for other metrics, or when the slices recorded no CPU)."""
    if not shares or not is_tail(metric):
        return math.nan
    found = [shares[k] for k in ((s.labels.get("layer", ""), s.t_ns) for s in base) if k in shares]
    return statistics.median(found) if found else math.nan


def contended(share: float) -> bool:
    return not math.isnan(share) and share > CONTENDED_SHARE
