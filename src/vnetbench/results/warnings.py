"""Typed warnings about the quality of the evidence, each with a kind, a message and advice.

A warning never stops a run; it is stored in ``run.json`` and shown in the report so that a
reader knows which numbers to trust less and what to do about it (pin CPUs, repeat more, ...).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence

from vnetbench.results.contention import TAIL_PERCENTILE, contended, outside_shares
from vnetbench.results.metrics import QUALITY_METRICS
from vnetbench.results.model import PAIR_LABEL, Sample
from vnetbench.results.significance import can_be_significant, min_p_value
from vnetbench.results.stats import (
    AA_LABEL,
    OUTLIER_THRESHOLD,
    coefficient_of_variation,
    condition_keys,
    group_samples,
    noise_floor,
    outlier_indices,
    paired_noise_floor,
)
from vnetbench.results.warning_model import EvidenceWarning as EvidenceWarning
from vnetbench.results.warning_model import WarningKind as WarningKind


def _where(labels: Mapping[str, str]) -> str:
    keys = ("workload", "layer", "nodes", "hosts", "metric", "repetition", "trial")
    parts = [f"{k}={labels[k]}" for k in keys if labels.get(k)]
    parts += [f"{k}={v}" for k, v in sorted(labels.items()) if v and k not in keys]
    return " ".join(parts) if parts else "this group"


def check_noise(values: Sequence[float], labels: Mapping[str, str],
                cv_target: float = 0.05) -> EvidenceWarning | None:
    """Warn when the coefficient of variation of repeated measurements exceeds ``cv_target``."""
    cv = coefficient_of_variation(values)
    if math.isnan(cv) or cv <= cv_target:
        return None
    return EvidenceWarning(
        WarningKind.NOISY_TRIAL,
        f"{_where(labels)}: coefficient of variation {cv:.1%} exceeds the target "
        f"{cv_target:.1%} over {len(values)} measurements",
        "pin the lab to isolated CPUs, stop other work on the host, lengthen trials or "
        "add repetitions",
        dict(labels),
    )


def check_outliers(values: Sequence[float], labels: Mapping[str, str],
                   threshold: float = OUTLIER_THRESHOLD) -> EvidenceWarning | None:
    """Warn when some values have a modified z-score beyond ``threshold`` (Iglewicz-Hoaglin)."""
    idx = outlier_indices(values, threshold)
    if not idx:
        return None
    shown = ", ".join(f"{values[i]:.4g}" for i in idx[:5])
    return EvidenceWarning(
        WarningKind.OUTLIERS,
        f"{_where(labels)}: {len(idx)} of {len(values)} values are outliers "
        f"(modified z-score > {threshold}): {shown}",
        "medians are used so the headline is robust, but look at the raw output of those "
        "trials for a transient disturbance",
        dict(labels),
    )


def check_external_cpu(sample: Sample, duration_s: float,
                       threshold_cores: float = 0.10) -> EvidenceWarning | None:
    """Warn when CPU time spent outside the lab during a trial exceeds ``threshold_cores``.

    ``sample`` carries the CPU seconds consumed by everything outside the lab's cgroup
    during the trial (e.g. metric ``cpu_external_s``); divided by the trial duration this
    is the number of cores taken from the machine by others.
    """
    if duration_s <= 0.0:
        return None
    cores = sample.value / duration_s
    if cores <= threshold_cores:
        return None
    return EvidenceWarning(
        WarningKind.EXTERNAL_CPU,
        f"{_where(sample.labels)}: processes outside the lab used {cores:.2f} cores "
        f"({sample.value:.2f} CPU-s over {duration_s:.1f} s) during the trial",
        "stop other workloads on the host (or move them to other CPUs) and re-run this trial",
        dict(sample.labels),
    )


def check_repetitions(n: int, labels: Mapping[str, str], confidence: float = 0.95,
                      groups: int = 1) -> EvidenceWarning | None:
    """Warn when ``n`` repetitions are too few for two such groups ever to differ
    significantly (the permutation test: 3 vs 3 never can, 4 vs 4 can).

    ``groups`` > 1: ``labels`` names the first of that many groups measured ``n`` times.
    """
    if can_be_significant(n, n, 1.0 - confidence):
        return None
    need = next(k for k in range(n, 64) if can_be_significant(k, k, 1.0 - confidence))
    others = f" and {groups - 1} other group(s)" if groups > 1 else ""
    return EvidenceWarning(
        WarningKind.TOO_FEW_REPETITIONS,
        f"{_where(labels)}{others}: with {n} repetitions two groups can never differ "
        f"significantly (smallest p-value {min_p_value(n, n):.2g}); such differences are "
        "reported as not resolved, and `compare` cannot judge them",
        f"set repeat to {need} or more (a layer against a baseline measured as A/A groups, "
        f"twice as often, needs repeat {_with_aa(1.0 - confidence)})",
        dict(labels),
    )


def _with_aa(alpha: float) -> int:
    """Smallest repeat r at which r trials of a layer can differ from 2r of the baseline."""
    return next(r for r in range(1, 64) if can_be_significant(r, 2 * r, alpha))


def control_warnings(controls: Mapping[str, object]) -> list[EvidenceWarning]:
    """One warning per platform control asked for that did not take effect (run.json's
    ``environment.controls``)."""
    out: list[EvidenceWarning] = []
    advice = {
        "idle_states": "run as root on a machine with /dev/cpu_dma_latency, or expect "
                       "round trips to include CPU wake-ups",
        "governor": "set the cpufreq governor to performance by hand",
        "placement": "check that the CPUs in platform.cpus are usable (taskset -p $$)",
        "quiet": "stop other work on the machine, or raise platform.quiet.wait",
    }
    for name, status in controls.items():
        if not isinstance(status, Mapping) or not status.get("requested"):
            continue
        if status.get("effective") or "no cpufreq" in str(status.get("detail", "")):
            continue
        out.append(EvidenceWarning(
            WarningKind.PLATFORM, f"platform control {name} did not hold: "
            f"{status.get('detail', '')}", advice.get(name, ""), {"control": name}))
    return out


def check_offloads(offloads: Mapping[str, Mapping[str, object]],
                   baseline: str = "host") -> list[EvidenceWarning]:
    """Warn for each offload (tso, gso, gro, checksum, ...) that differs between layers.

    ``offloads`` maps a layer to its interface's feature dict (``ethtool -k`` style,
    values ``on``/``off`` or booleans). Layers are compared with ``baseline`` when present,
    else with the first layer.
    """
    if len(offloads) < 2:
        return []
    ref_layer = baseline if baseline in offloads else next(iter(offloads))
    ref = {k: _on(v) for k, v in offloads[ref_layer].items()}
    out: list[EvidenceWarning] = []
    for layer, features in offloads.items():
        if layer == ref_layer:
            continue
        diffs = []
        for name in sorted(set(ref) | set(features)):
            mine = _on(features[name]) if name in features else None
            theirs = ref.get(name)
            if mine != theirs:
                diffs.append(f"{name} {_fmt(mine)} (vs {_fmt(theirs)} on {ref_layer})")
        if diffs:
            out.append(EvidenceWarning(
                WarningKind.OFFLOAD_MISMATCH,
                f"layer {layer}: offloads differ from {ref_layer}: " + "; ".join(diffs),
                "part of the measured difference may come from offloads rather than the "
                "layer itself; align them with ethtool -K to isolate the layer's cost",
                {"layer": layer},
            ))
    return out


def _on(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text.startswith("on") or text in {"true", "1", "yes"}:
        return True
    if text.startswith("off") or text in {"false", "0", "no"}:
        return False
    return None


def _fmt(value: bool | None) -> str:
    return "absent" if value is None else ("on" if value else "off")


def check_samples(samples: Iterable[Sample], *, group_by: Sequence[str] | None = None,
                  cv_target: float = 0.05, confidence: float = 0.95,
                  repetition_label: str = "repetition") -> list[EvidenceWarning]:
    """Noise and outlier warnings for every group of samples, and one too-few-repetitions
    warning per repetition count that falls short (naming the first such group).

    Groups are ``group_by``, by default every condition label (``condition_keys``): values
    measured under different conditions (two Hadoop benchmarks, two media streams) are
    never pooled.
    """
    samples = list(samples)
    keys = tuple(group_by) if group_by is not None else condition_keys(samples)
    out: list[EvidenceWarning] = []
    short: dict[int, list[dict[str, str]]] = {}
    for key, members in group_samples(samples, keys).items():
        labels = {k: v for k, v in zip(keys, key, strict=True) if v}
        values = [s.value for s in members]
        reps = {s.labels.get(repetition_label, "") for s in members}
        n_reps = len(reps) if reps != {""} else len(values)
        for warning in (check_noise(values, labels, cv_target),
                        check_outliers(values, labels)):
            if warning is not None:
                out.append(warning)
        if not can_be_significant(n_reps, n_reps, 1.0 - confidence):
            short.setdefault(n_reps, []).append(labels)
    for n_reps, groups in sorted(short.items()):
        warning = check_repetitions(n_reps, groups[0], confidence, groups=len(groups))
        if warning is not None:
            out.append(warning)
    return out


def quality_warnings(samples: Iterable[Sample], cv_target: float = 0.05,
                     confidence: float = 0.95) -> list[EvidenceWarning]:
    """``check_samples`` over a run's main figures (``QUALITY_METRICS`` of its workloads;
    collector samples, which carry ``source``, are left out)."""
    samples = list(samples)
    # a paired design is judged by its pairs (``paired_noise_warnings``), not by how much
    # its short slices or blocks vary one after another
    unpaired = [s for s in samples if PAIR_LABEL not in s.labels]
    return [*check_samples([s for s in unpaired if s.metric in QUALITY_METRICS
                            and "workload" in s.labels and "source" not in s.labels],
                           cv_target=cv_target, confidence=confidence),
            *baseline_drift_warnings(samples), *throughput_mode_warnings(unpaired),
            *paired_noise_warnings(samples, 2 * cv_target), *contention_warnings(samples)]


def contention_warnings(samples: Iterable[Sample], baseline: str = "host"
                        ) -> list[EvidenceWarning]:
    """One warning when other work used more than ``CONTENDED_SHARE`` of the machine's CPU
    while the baseline's interleaved slices ran (``contention``): where, and that the tails
    of those measurements are not judged."""
    samples = list(samples)
    shares = outside_shares(samples)
    seen: dict[tuple[str, str, str], dict[int, float]] = {}
    for s in samples:
        key = (s.labels.get("layer", ""), s.t_ns)
        if key[0] == baseline and key in shares and "workload" in s.labels:
            where = (s.labels["workload"], s.labels.get("hosts", ""), s.labels.get("nodes", ""))
            seen.setdefault(where, {})[s.t_ns] = shares[key]
    busy = {w: statistics.median(v.values()) for w, v in seen.items()
            if contended(statistics.median(v.values()))}
    if not busy:
        return []
    workloads = ", ".join(sorted({wl for wl, _, _ in busy}))
    hosts = " and ".join(sorted({h for _, h, _ in busy if h}, key=lambda h: (len(h), h)))
    places = f"{workloads} at {hosts} host(s)" if hosts else workloads
    low, high = min(busy.values()), max(busy.values())
    share = f"{low:.0%}" if round(low, 2) == round(high, 2) else f"{low:.0%}-{high:.0%}"
    return [EvidenceWarning(
        WarningKind.EXTERNAL_CPU,
        f"other work used {share} of the machine's CPU while the baseline was measured "
        f"({places}): tail latencies (p{TAIL_PERCENTILE:g} and above) then measure the wait "
        "for a CPU, not the layer, and are not judged; medians, rates and CPU costs are "
        "(paired, they hold under load)",
        "for tails, rerun with less load outside the lab", {})]


def paired_noise_warnings(samples: Iterable[Sample], limit: float,
                          baseline: str = "host") -> list[EvidenceWarning]:
    """Where a paired design's A/A floor (the smallest change its pairs resolve) is above
    ``limit``, one warning per workload naming the metrics: those cells are not resolved."""
    ours = [s for s in samples if s.labels.get("layer") == baseline and PAIR_LABEL in s.labels
            and AA_LABEL in s.labels]
    pool = [s for s in ours if s.metric in QUALITY_METRICS and not s.is_evidence]
    keys = condition_keys(pool)
    wide: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for key, members in group_samples(pool, keys).items():
        nf = paired_noise_floor(members)
        if nf is None or math.isnan(nf.floor) or nf.floor <= limit:
            continue
        labels = tuple((k, v) for k, v in zip(keys, key, strict=True) if v and k != "metric")
        wide.setdefault(labels, []).append(f"{members[0].metric} {nf.floor:.0%}")
    return [EvidenceWarning(
        WarningKind.NOISY_TRIAL,
        f"{_where(dict(labels))}: the paired A/A floor is above {limit:.0%} "
        f"({', '.join(sorted(found))}): even paths measured in the same seconds disagree "
        f"this much, so smaller differences are not resolved{_pauses(ours, labels)}",
        "the machine is very disturbed: more rounds (repeat) narrow the floor; so does "
        "less load outside the lab", dict(labels)) for labels, found in wide.items()]


PAUSED_SHARE = 0.005
"""A baseline that spent this share of its measured time in pauses is said to have."""


def paused_share(samples: Iterable[Sample], labels: Iterable[tuple[str, str]]) -> float:
    """The share of the measured time that slices matching ``labels`` spent in pauses
    (``paused_s``: round trips over a millisecond, ``workloads.probe.paired.PAUSE_US``); nan when no
    slice recorded them."""
    wanted = dict(labels)
    slices: dict[tuple[str, str], dict[str, float]] = {}
    for s in samples:
        if s.metric in ("paused_s", "transactions", "tps") and all(
                s.labels.get(k) == v for k, v in wanted.items()):
            key = (s.labels.get(PAIR_LABEL, ""), s.labels.get(AA_LABEL, ""))
            slices.setdefault(key, {})[s.metric] = s.value
    paused = measured = 0.0
    for v in slices.values():
        if "paused_s" in v and v.get("tps", 0.0) > 0.0:
            paused += v["paused_s"]
            measured += v.get("transactions", 0.0) / v["tps"]
    return paused / measured if measured > 0.0 else math.nan


def _pauses(samples: Sequence[Sample], labels: Iterable[tuple[str, str]]) -> str:
    share = paused_share(samples, labels)
    if math.isnan(share) or share < PAUSED_SHARE:
        return ""
    return (f"; round trips over a millisecond took {share:.1%} of the baseline's measured "
            "time: pauses (a hypervisor stopping the machine, other work taking the CPU) fall "
            "on whichever path is running, so rates and means resolve no better than they "
            "fall alike on its two paths")


MODE_RATIO = 1.5
"""A native stream whose fastest interval beats its slowest by this factor switched modes."""


def _baseline_groups(samples: Sequence[Sample], metric: str, baseline: str
                     ) -> dict[tuple[str, ...], list[Sample]]:
    pool = [s for s in samples if s.metric == metric and s.labels.get("layer") == baseline
            and not s.is_evidence]
    return group_samples(pool, condition_keys(pool))


def throughput_mode_warnings(samples: Iterable[Sample], baseline: str = "host"
                             ) -> list[EvidenceWarning]:
    """Warn when the native path's bulk throughput switched between modes: within a trial
    (fastest vs slowest interval) or between trials (fastest vs slowest trial), by
    ``MODE_RATIO`` or more. The machine, not a layer, made that difference; the A/A noise
    floor then keeps it from being charged to a layer."""
    samples = list(samples)
    out: list[EvidenceWarning] = []
    lows = _baseline_groups(samples, "goodput_min_interval_bps", baseline)
    highs = _baseline_groups(samples, "goodput_max_interval_bps", baseline)
    for key, members in _baseline_groups(samples, "goodput_bps", baseline).items():
        values = [s.value for s in members if s.value > 0]
        if len(values) < 2 and key not in lows:
            continue
        low_key = (*key[:-1], "goodput_min_interval_bps")
        high_key = (*key[:-1], "goodput_max_interval_bps")
        fastest = {s.labels.get("trial", ""): s.value for s in highs.get(high_key, [])}
        inner = [fastest[lo.labels.get("trial", "")] / lo.value
                 for lo in lows.get(low_key, [])
                 if lo.value > 0 and lo.labels.get("trial", "") in fastest]
        within = sum(1 for r in inner if r >= MODE_RATIO)
        between = max(values) / min(values) if values else 1.0
        if within == 0 and between < MODE_RATIO:
            continue
        labels = {k: v for k, v in members[0].labels.items()
                  if k not in {"repetition", "trial", AA_LABEL}}
        lo_all = min([s.value for s in lows.get(low_key, [])] + values)
        hi_all = max([s.value for s in highs.get(high_key, [])] + values)
        out.append(EvidenceWarning(
            WarningKind.THROUGHPUT_MODES,
            f"{_where(labels)}: the native path's bulk throughput switched between modes "
            f"({lo_all / 1e9:.3g}-{hi_all / 1e9:.3g} Gbit/s; within {within} of {len(inner)} "
            f"trial(s), x{between:.2f} between trials): this machine, not a layer, makes "
            "such differences",
            "stream ratios within the noise floor are reported as not resolved; for "
            "throughput figures use longer streams and more repetitions",
            labels))
    return out


def baseline_drift_warnings(samples: Iterable[Sample], baseline: str = "host"
                            ) -> list[EvidenceWarning]:
    """Warn where the A/A control failed: the baseline's two interleaved groups differ
    significantly, so the machine changed during the run."""
    pool = [s for s in samples if s.metric in QUALITY_METRICS and not s.is_evidence
            and s.labels.get("layer") == baseline and AA_LABEL in s.labels]
    out: list[EvidenceWarning] = []
    keys = condition_keys(pool)
    for key, members in group_samples(pool, keys).items():
        paired = all(PAIR_LABEL in s.labels for s in members)
        nf = paired_noise_floor(members) if paired else noise_floor(members)
        if nf is None or not nf.failed:
            continue
        labels = {k: v for k, v in zip(keys, key, strict=True) if v}
        out.append(EvidenceWarning(
            WarningKind.BASELINE_DRIFT,
            f"{_where(labels)}: the baseline differs from itself (A/A B/A "
            f"x{nf.ratio.value:.3f}, p={nf.ratio.p_value:.3f}): the machine drifted during the "
            "run, so differences of this size are not the layers'",
            "rerun on a quiet machine; check the quiet-machine record in run.json",
            labels))
    return out
