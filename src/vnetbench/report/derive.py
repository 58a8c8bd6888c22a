"""Derived per-trial metrics for the report: CPU cost per transaction and per Gbit/s.

Samples of one trial are matched on the trial's identity labels (layer, nodes, hosts,
workload, repetition, trial). Only host-process CPU samples without ``cpu``/``netns``/
``device`` labels are used (the workloads' own ``cpu_user_s``/``cpu_sys_s``).

* ``cpu_us_per_tx``      = (cpu_user_s + cpu_sys_s) / (tps * duration), in CPU-microseconds
* ``cpu_cores_per_gbps`` = (cpu_user_s + cpu_sys_s) / duration / (goodput_bps / 1e9)

The duration comes from a ``duration_s`` sample of the trial, else a ``duration_s`` or
``duration`` label, else the scenario's ``duration``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from vnetbench.results.model import Sample
from vnetbench.units import parse_duration

TRIAL_LABELS: tuple[str, ...] = ("layer", "nodes", "hosts", "workload", "repetition", "trial")
_PLACE_LABELS = ("cpu", "netns", "device", "cgroup")


def trial_key(sample: Sample) -> tuple[str, ...]:
    return tuple(sample.labels.get(name, "") for name in TRIAL_LABELS)


def scenario_duration(scenario: Mapping[str, Any]) -> float | None:
    value = scenario.get("duration")
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError:
        return None


def derive_cpu_costs(samples: Iterable[Sample], default_duration_s: float | None = None,
                     ) -> list[Sample]:
    """``cpu_us_per_tx`` and ``cpu_cores_per_gbps`` samples, one per trial where computable."""
    trials: dict[tuple[str, ...], dict[str, Sample]] = {}
    for s in samples:
        if any(name in s.labels for name in _PLACE_LABELS):
            continue
        if s.metric in {"tps", "goodput_bps", "cpu_user_s", "cpu_sys_s", "duration_s"}:
            trials.setdefault(trial_key(s), {})[s.metric] = s
    out: list[Sample] = []
    for members in trials.values():
        if "cpu_user_s" not in members or "cpu_sys_s" not in members:
            continue
        cpu = members["cpu_user_s"].value + members["cpu_sys_s"].value
        ref = members.get("tps") or members.get("goodput_bps")
        if ref is None:
            continue
        duration = _duration(members, ref, default_duration_s)
        if duration is None or duration <= 0:
            continue
        labels = {k: v for k, v in ref.labels.items()}
        if "tps" in members and members["tps"].value > 0:
            value = cpu / (members["tps"].value * duration) * 1e6
            out.append(Sample("cpu_us_per_tx", value, "us", labels, ref.t_ns))
        if "goodput_bps" in members and members["goodput_bps"].value > 0:
            value = cpu / duration / (members["goodput_bps"].value / 1e9)
            out.append(Sample("cpu_cores_per_gbps", value, "cores/(Gbit/s)", labels, ref.t_ns))
    return out


def _duration(members: Mapping[str, Sample], ref: Sample, default: float | None) -> float | None:
    if "duration_s" in members:
        return members["duration_s"].value
    for name in ("duration_s", "duration"):
        if name in ref.labels:
            try:
                return parse_duration(ref.labels[name])
            except ValueError:
                return None
    return default if default is not None and not math.isnan(default) else None
