"""Detectors over a run's collector samples: what the studies saw behind a slow layer.

- ``softirq_saturation``: during a workload one core spent most of its time in softirq
  (study 003: ksoftirqd pinned one core at 100 % on the overlay network, so throughput stopped
  growing with threads). Per trial and workload: a core whose ``cpu_softirq_s`` is at least
  ``SATURATED`` of that core's time (the sum of its CPU states).
- ``drops_with_retransmits``: packet drops on the lab's devices and TCP retransmissions in
  the same trials (study 001's hypothesis: bridge/veth buffer drops cause TCP resends). Per
  layer: the trials with both, the devices that dropped.

Each finding becomes a warning (kind, message, advice) with the layer and workload labels.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from vnetbench.results.model import Sample
from vnetbench.results.warning_model import EvidenceWarning, WarningKind

SATURATED = 0.8
"""Share of a core's time in softirq that counts as saturated."""
CORE_STATES = ("cpu_core_user_s", "cpu_nice_s", "cpu_core_sys_s", "cpu_idle_s",
               "cpu_iowait_s", "cpu_irq_s", "cpu_softirq_s", "cpu_steal_s")
DROPS = ("rx_drops", "tx_drops")


def run_key(s: Sample) -> tuple[str, str, str]:
    """(layer, workload, run): a run is a trial, or one round of a session's rotating
    workload (its ``pair``): a session's rounds share their trial label, and counters of
    different rounds never meet in one run."""
    run = s.labels.get("trial", "")
    if s.labels.get("design") == "rounds" and s.labels.get("pair"):
        run = f"{run}/{s.labels['pair']}"
    return (s.labels.get("layer", ""), s.labels.get("workload", ""), run)


def softirq_saturation(samples: Iterable[Sample], threshold: float = SATURATED
                       ) -> list[EvidenceWarning]:
    """A warning per layer and workload whose trials saw a core saturated by softirq."""
    time: dict[tuple[tuple[str, str, str], str], float] = defaultdict(float)
    soft: dict[tuple[tuple[str, str, str], str], float] = {}
    for s in samples:
        cpu = s.labels.get("cpu")
        if s.metric not in CORE_STATES or cpu in (None, "all"):
            continue
        key = (run_key(s), str(cpu))
        time[key] += s.value
        if s.metric == "cpu_softirq_s":
            soft[key] = soft.get(key, 0.0) + s.value
    hits: dict[tuple[str, str], list[tuple[str, str, float]]] = defaultdict(list)
    for (trial, cpu), total in time.items():
        share = soft.get((trial, cpu), 0.0) / total if total > 0 else 0.0
        if share >= threshold:
            hits[(trial[0], trial[1])].append((trial[2], cpu, share))
    out = []
    for (layer, workload), found in sorted(hits.items()):
        trials = sorted({t for t, _, _ in found})
        worst = max(found, key=lambda f: f[2])
        out.append(EvidenceWarning(
            WarningKind.SOFTIRQ_SATURATION,
            f"layer={layer} workload={workload}: one core spent {worst[2]:.0%} of its time in "
            f"softirq (cpu {worst[1]}, trial {worst[0]}; {len(trials)} trial(s) at "
            f"{threshold:.0%} or more): packet processing on that core, not the application, "
            "bounds this layer here",
            "spread the load over cores (RPS/RFS, more queues) or compare at a lower rate; "
            "the per-core softirq samples are in samples.jsonl (cpu_softirq_s, label cpu)",
            {"layer": layer, "workload": workload}))
    return out


def drops_with_retransmits(samples: Iterable[Sample]) -> list[EvidenceWarning]:
    """A warning per layer whose trials had both device drops and TCP retransmissions."""
    drops: dict[tuple[str, str, str], float] = defaultdict(float)
    devices: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    retrans: dict[tuple[str, str, str], float] = defaultdict(float)
    for s in samples:
        key = run_key(s)
        if s.metric in DROPS and s.value > 0:
            drops[key] += s.value
            devices[key].add(f"{s.labels.get('netns', '?')}/{s.labels.get('device', '?')}")
        elif s.metric == "tcp_retrans_segs" and s.value > 0:
            retrans[key] += s.value
    by_layer: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for key in drops:
        if key in retrans:
            by_layer[key[0]].append(key)
    out = []
    for layer, keys in sorted(by_layer.items()):
        trials = sorted({k[2] for k in keys})
        devs = sorted(set().union(*(devices[k] for k in keys)))
        total_drops = sum(drops[k] for k in keys)
        total_retrans = sum(retrans[k] for k in keys)
        out.append(EvidenceWarning(
            WarningKind.DROPS_WITH_RETRANSMITS,
            f"layer={layer}: {len(trials)} run(s) had both packet drops ({total_drops:g} on "
            f"{', '.join(devs[:4])}{' ...' if len(devs) > 4 else ''}) and TCP retransmissions "
            f"({total_retrans:g}): drops in the layer's devices can explain resends",
            "compare the layer's queue lengths and buffer sizes with the native path's; the "
            "per-device counters are in samples.jsonl (rx_drops, tx_drops, label device)",
            {"layer": layer}))
    return out


def detector_warnings(samples: Iterable[Sample]) -> list[EvidenceWarning]:
    pool = list(samples)
    return [*softirq_saturation(pool), *drops_with_retransmits(pool)]
