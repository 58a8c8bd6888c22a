"""Derived per-run metrics for the report: CPU cost per transaction and per Gbit/s.

The samples of one workload process share exactly the same labels (layer, nodes, hosts,
workload, repetition, trial, ...), so they are matched on their full label set. Only
process CPU samples (``cpu_user_s``/``cpu_sys_s`` without ``cpu``/``netns``/``device``/
``cgroup`` labels) are used; host-wide collector samples are not.

The CPU counted is the whole lab's when the collectors measured it: the sum of
``cgroup_cpu_s`` over every cgroup of the trial's workload run (each node — client and
server — plus ``infra``, the layer's own daemons such as wireguard-go, the userspace
forwarder or the link emulator), so a layer whose datapath runs in a daemon is charged for
it. Without cgroup samples, or when the scenario runs CPU-bound neighbours in every cgroup
(``busy: true``), it falls back to the client process's own CPU.

* ``cpu_us_per_tx``      = CPU seconds / transactions, in CPU-microseconds
                           (transactions = the ``transactions`` sample, else tps * duration)
* ``cpu_cores_per_gbps`` = CPU seconds / (gigabits moved), i.e. cores busy per
                           Gbit/s (bits = 8 * the ``bytes`` sample, else goodput_bps * duration)

A duration comes from a ``duration_s`` sample, else a ``duration_s``/``duration`` label,
else the scenario (top-level ``duration`` or the workload's own ``duration`` option).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping

from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario
from vnetbench.units import parse_duration

TRIAL_LABELS: tuple[str, ...] = ("layer", "nodes", "hosts", "workload", "repetition", "trial", "aa")
PLACE_LABELS: tuple[str, ...] = ("cpu", "netns", "device", "cgroup")
_INPUTS = {"tps", "goodput_bps", "transactions", "bytes", "cpu_user_s", "cpu_sys_s",
           "duration_s"}


def trial_key(sample: Sample) -> tuple[str, ...]:
    return tuple(sample.labels.get(name, "") for name in TRIAL_LABELS)


def _parse(value: object, parse: Callable[[object], float] = parse_duration) -> float | None:
    try:
        return parse(value)
    except (ValueError, TypeError):
        return None


def _workload_entries(scenario: RecordedScenario, workload: str | None
                      ) -> Iterator[Mapping[str, object]]:
    """The options of the scenario's workload entries that are ``workload`` (``rr`` or the
    samples' ``probe-rr``; None: every entry), see ``RecordedScenario.workloads``."""
    for kind, options in scenario.workloads:
        if workload is None or kind == workload or workload.endswith(f"-{kind}"):
            yield options


def workload_option(scenario: RecordedScenario, workload: str | None, key: str,
                    parse: Callable[[object], float] = parse_duration) -> float | None:
    """The first value of option ``key`` a scenario gives ``workload`` (see
    ``_workload_entries``), read with ``parse`` (a duration by default); None if absent,
    swept (a list) or unreadable."""
    for options in _workload_entries(scenario, workload):
        if key in options:
            found = _parse(options[key], parse)
            if found is not None:
                return found
    return None


def scenario_duration(scenario: RecordedScenario, workload: str | None = None) -> float | None:
    """The measuring duration (s) a scenario gives ``workload`` (or all workloads), if any.

    Understands a top-level ``duration`` and workload entries written ``{rr: {duration: 5s}}``
    or ``{kind: rr, duration: 5s}``. Swept (list) durations give None.
    """
    found = workload_option(scenario, workload, "duration")
    if found is not None:
        return found
    if scenario.duration is not None:
        return _parse(scenario.duration)
    return None


def derive_cpu_costs(samples: Iterable[Sample], default_duration_s: float | None = None, *,
                     scenario: RecordedScenario | None = None) -> list[Sample]:
    """``cpu_us_per_tx`` and ``cpu_cores_per_gbps`` samples, one per process where computable."""
    busy = scenario is not None and scenario.busy  # neighbours' spinning is not the layer's cost
    groups: dict[frozenset[tuple[str, str]], dict[str, Sample]] = {}
    lab_cpu: dict[tuple[str, ...], float] = {}
    for s in samples:
        if s.metric in _INPUTS and not any(name in s.labels for name in PLACE_LABELS):
            groups.setdefault(frozenset(s.labels.items()), {})[s.metric] = s
        elif s.metric == "cgroup_cpu_s" and "cgroup" in s.labels and not busy:
            lab_cpu[trial_key(s)] = lab_cpu.get(trial_key(s), 0.0) + s.value
    out: list[Sample] = []
    for members in groups.values():
        if "cpu_user_s" not in members or "cpu_sys_s" not in members:
            continue
        ref = members["cpu_user_s"]
        cpu = lab_cpu.get(trial_key(ref), members["cpu_user_s"].value + members["cpu_sys_s"].value)
        labels = dict(ref.labels)
        duration = _duration(members, ref, default_duration_s, scenario)
        transactions = members["transactions"].value if "transactions" in members else (
            members["tps"].value * duration if "tps" in members and duration else None)
        if transactions is not None and transactions > 0:
            out.append(Sample("cpu_us_per_tx", cpu / transactions * 1e6, "us", labels,
                              ref.t_ns))
        gigabits = members["bytes"].value * 8 / 1e9 if "bytes" in members else (
            members["goodput_bps"].value * duration / 1e9
            if "goodput_bps" in members and duration else None)
        if gigabits is not None and gigabits > 0:
            out.append(Sample("cpu_cores_per_gbps", cpu / gigabits, "cores/(Gbit/s)", labels,
                              ref.t_ns))
    return out


def _duration(members: Mapping[str, Sample], ref: Sample, default: float | None,
              scenario: RecordedScenario | None) -> float | None:
    if "duration_s" in members:
        return members["duration_s"].value
    for name in ("duration_s", "duration"):
        if name in ref.labels:
            return _parse(ref.labels[name])
    if scenario is not None:
        found = scenario_duration(scenario, ref.labels.get("workload"))
        if found is not None:
            return found
    return default if default is not None and not math.isnan(default) else None
