"""Contention: how much of the machine's CPU other work used while the baseline was measured.

Each interleaved slice records the machine's CPU time by state (``cpu_*_s``, ``cpu=all``,
``source=proc_stat``) and the CPU of the lab's own processes (``cgroup_cpu_s``: the server's
node, the layer's daemons, the client), all with the slice's time stamp. The machine's busy
time less the lab's and less interrupt and softirq time (the lab's packets, wherever the
kernel ran them; as ``warnings.external_cpu`` counts) is what the rest of the machine did;
as a share of the machine's CPU time it is the slice's *outside share* (``outside_shares``:
(layer, t_ns) -> share).

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
_LABS_KERNEL = ("cpu_irq_s", "cpu_softirq_s")
"""Interrupt and softirq time: mostly the lab's own packets, wherever the kernel ran them."""

SliceKey = tuple[str, int]
"""(layer, t_ns): one path's slice of one round."""


def outside_shares(samples: Iterable[Sample]) -> dict[SliceKey, float]:
    """Per interleaved slice, the share of the machine's CPU time spent outside the lab
    (clipped at 0: the counters are read a few microseconds apart)."""
    machine: dict[SliceKey, dict[str, float]] = {}
    lab: dict[SliceKey, float] = {}
    for s in samples:
        key = (s.labels.get("layer", ""), s.t_ns)
        if s.metric in (*_TOTAL, *_LABS_KERNEL) and s.labels.get("cpu") == "all" \
                and s.labels.get("source") == "proc_stat" and "pair" in s.labels:
            machine.setdefault(key, {})[s.metric] = s.value
        elif s.metric == "cgroup_cpu_s" and "cgroup" in s.labels and "pair" in s.labels:
            lab[key] = lab.get(key, 0.0) + s.value
    out: dict[SliceKey, float] = {}
    for key, states in machine.items():
        total = sum(states.get(m, 0.0) for m in _TOTAL)
        if total > 0 and key in lab:
            lab_cpu = lab[key] + sum(states.get(m, 0.0) for m in _LABS_KERNEL)
            out[key] = max(0.0, states.get("cpu_busy_s", 0.0) - lab_cpu) / total
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
