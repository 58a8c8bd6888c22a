"""Unit tests of the typed evidence warnings."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetbench.results.contention import external_cpu
from vnetbench.results.model import Sample
from vnetbench.results.store import load_run
from vnetbench.results.warnings import (
    EvidenceWarning,
    WarningKind,
    check_external_cpu,
    check_noise,
    check_offloads,
    check_outliers,
    check_repetitions,
    check_samples,
    quality_warnings,
)

EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "evidence"
LABELS = {"layer": "vxlan", "metric": "rtt_p99_us", "workload": "rr"}


def test_noise() -> None:
    assert check_noise([100.0, 101.0, 99.0], LABELS) is None
    w = check_noise([100.0, 120.0, 80.0], LABELS, cv_target=0.05)
    assert w is not None and w.kind is WarningKind.NOISY_TRIAL
    assert "20.0%" in w.message and "layer=vxlan" in w.message and w.advice


def test_outliers() -> None:
    assert check_outliers([10.0, 10.1, 9.9, 10.0], LABELS) is None
    w = check_outliers([10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 30.0], LABELS)
    assert w is not None and w.kind is WarningKind.OUTLIERS and "1 of 7" in w.message
    assert "30" in w.message


def test_external_cpu() -> None:
    quiet = Sample("cpu_external_s", 0.4, "s", {"trial": "3"})
    busy = Sample("cpu_external_s", 5.0, "s", {"trial": "4"})
    assert check_external_cpu(quiet, duration_s=10.0) is None  # 0.04 cores
    w = check_external_cpu(busy, duration_s=10.0)
    assert w is not None and w.kind is WarningKind.EXTERNAL_CPU
    assert "0.50 cores" in w.message and w.labels == {"trial": "4"}
    assert check_external_cpu(busy, duration_s=0.0) is None


def test_repetitions() -> None:
    assert check_repetitions(4, LABELS) is None
    w = check_repetitions(3, LABELS, confidence=0.95)
    assert w is not None and w.kind is WarningKind.TOO_FEW_REPETITIONS
    assert "can never differ significantly" in w.message
    assert "repeat to 4" in w.advice and "needs repeat 3" in w.advice
    assert check_repetitions(4, LABELS, confidence=0.99) is not None  # 2/70 > 1%


def test_offloads() -> None:
    offloads: dict[str, dict[str, object]] = {
        "host": {"tso": "on", "gro": "on", "rx-checksumming": True},
        "bridge": {"tso": "on", "gro": "on", "rx-checksumming": "on [fixed]"},
        "vxlan": {"tso": "off", "gro": "on", "rx-checksumming": True},
    }
    (w,) = check_offloads(offloads)
    assert w.kind is WarningKind.OFFLOAD_MISMATCH and w.labels == {"layer": "vxlan"}
    assert "tso off (vs on on host)" in w.message
    assert check_offloads({"host": {"tso": "on"}}) == []


def test_roundtrip_and_str() -> None:
    w = check_repetitions(2, LABELS)
    assert w is not None
    assert EvidenceWarning.from_dict(w.to_dict()) == w
    assert str(w).startswith("too_few_repetitions:")
    plain = EvidenceWarning.from_dict("disk almost full")
    assert plain.kind is WarningKind.OTHER and plain.message == "disk almost full"
    assert EvidenceWarning.from_dict({"kind": "bogus", "message": "m"}).kind is WarningKind.OTHER


def test_check_samples_on_recorded_run() -> None:
    samples = [s for s in load_run(EVIDENCE / "run_layers").samples if "netns" not in s.labels]
    warnings = check_samples(samples)
    kinds = {(w.kind, w.labels.get("layer"), w.labels.get("metric")) for w in warnings}
    assert (WarningKind.OUTLIERS, "wireguard", "rtt_p99_us") in kinds
    assert (WarningKind.NOISY_TRIAL, "wireguard", "rtt_p99_us") in kinds
    assert not any(w.kind is WarningKind.TOO_FEW_REPETITIONS for w in warnings)
    few = check_samples([s for s in samples if int(s.labels["repetition"]) < 3])
    assert any(w.kind is WarningKind.TOO_FEW_REPETITIONS for w in few)


def test_external_cpu_from_collector_samples() -> None:
    lab = {"layer": "vxlan", "trial": "2"}
    samples = [
        Sample("cpu_busy_s", 9.0, "s", {**lab, "cpu": "all", "source": "proc_stat"}),
        Sample("cpu_busy_s", 4.0, "s", {**lab, "cpu": "0", "source": "proc_stat"}),
        Sample("cpu_softirq_s", 1.0, "s", {**lab, "cpu": "all", "source": "proc_stat"}),
        Sample("cpu_irq_s", 0.5, "s", {**lab, "cpu": "all", "source": "proc_stat"}),
        Sample("cgroup_cpu_s", 3.0, "s", {**lab, "cgroup": "n0"}),
        Sample("cgroup_cpu_s", 2.5, "s", {**lab, "cgroup": "n1"}),
    ]
    ext = external_cpu(samples)
    assert ext is not None and ext.metric == "cpu_external_s"
    assert ext.value == pytest.approx(2.0) and ext.labels == lab
    w = check_external_cpu(ext, duration_s=10.0)
    assert w is not None and "0.20 cores" in w.message
    assert external_cpu(samples[:4]) is None  # no cgroups: cannot tell lab from others


def _elapsed(benchmark: str, values: list[float]) -> list[Sample]:
    return [Sample("elapsed_s", v, "s", {"layer": "bridge", "nodes": "2", "workload": "hadoop",
                                         "benchmark": benchmark, "repetition": str(i)})
            for i, v in enumerate(values)]


def test_check_samples_never_pools_conditions() -> None:
    """Two Hadoop benchmarks are two conditions: their elapsed times are not one series."""
    samples = _elapsed("teragen", [10.0, 10.1, 9.9]) + _elapsed("terasort", [20.0, 20.2, 19.8])
    kinds = {w.kind for w in check_samples(samples)}
    assert WarningKind.NOISY_TRIAL not in kinds and WarningKind.OUTLIERS not in kinds
    pooled = check_samples(samples, group_by=("layer", "workload", "metric"))
    assert any(w.kind is WarningKind.NOISY_TRIAL for w in pooled)


def test_one_repetition_warning_per_repetition_count() -> None:
    samples = [Sample(metric, 1.0, "1", {"layer": layer, "workload": "rr", "repetition": "0"})
               for layer in ("host", "bridge", "vxlan") for metric in ("tps", "rtt_p50_us")]
    samples += [Sample("tps", 1.0, "1", {"layer": "nat", "workload": "rr", "repetition": r})
                for r in ("0", "1")]
    few = [w for w in check_samples(samples) if w.kind is WarningKind.TOO_FEW_REPETITIONS]
    assert len(few) == 2
    assert "and 5 other group(s): with 1 repetitions" in few[0].message
    assert "layer=nat" in few[1].message and "with 2 repetitions" in few[1].message


def test_quality_warnings_look_at_main_figures_only() -> None:
    lab = {"layer": "bridge", "workload": "hadoop", "repetition": "0"}
    noise = [Sample("hadoop_heap_bytes", float(v), "B", {**lab, "role": "namenode"})
             for v in (1, 100)]
    noise += [Sample("cpu_busy_s", float(v), "s", {**lab, "source": "proc_stat"})
              for v in (1, 100)]
    assert quality_warnings(noise) == []
    (few,) = quality_warnings(_elapsed("pi", [5.0]))
    assert few.kind is WarningKind.TOO_FEW_REPETITIONS and "benchmark=pi" in few.message


def test_throughput_modes_of_the_native_stream_are_told_apart_from_a_steady_one() -> None:
    from vnetbench.results.warnings import throughput_mode_warnings

    def trial(t: int, goodput: float, low: float, high: float,
              layer: str = "host") -> list[Sample]:
        labels = {"layer": layer, "workload": "stream", "trial": str(t), "repetition": str(t)}
        return [Sample("goodput_bps", goodput, "bit/s", labels),
                Sample("goodput_min_interval_bps", low, "bit/s", labels),
                Sample("goodput_max_interval_bps", high, "bit/s", labels)]

    steady = [*trial(0, 20e9, 19e9, 21e9), *trial(1, 21e9, 20e9, 22e9)]
    assert throughput_mode_warnings(steady) == []
    switched = [*trial(0, 15e9, 10e9, 22e9), *trial(1, 21e9, 20e9, 22e9)]
    (w,) = throughput_mode_warnings(switched)
    assert w.kind is WarningKind.THROUGHPUT_MODES and "within 1 of 2 trial(s)" in w.message
    between = [*trial(0, 10e9, 9.8e9, 10.2e9), *trial(1, 22e9, 21.5e9, 22.5e9)]
    (w,) = throughput_mode_warnings(between)
    assert "within 0 of 2" in w.message and "x2.20 between trials" in w.message
    # a layer's own slow stream is not the machine's: only the baseline is judged
    assert throughput_mode_warnings([*steady, *trial(2, 3e9, 1e9, 5e9, "wireguard")]) == []
    # a trial without its fastest interval is left out, not paired with another trial's
    (w,) = throughput_mode_warnings([*switched, Sample(
        "goodput_min_interval_bps", 1e9, "bit/s",
        {"layer": "host", "workload": "stream", "trial": "9", "repetition": "9"})])
    assert "of 2 trial(s)" in w.message
