"""Contention: a tail measured while other work kept the machine busy is not judged.

Simulated interleaved rounds: each slice carries the machine's CPU by state and the lab's
cgroup CPU with its time stamp, as the probe's paired client (``workloads.probe.paired``)
records them, and p50/p99 samples.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from vnetbench.results.contention import CONTENDED_SHARE, outside_shares
from vnetbench.results.model import AA_LABEL, DESIGN_LABEL, PAIR_LABEL, Sample
from vnetbench.results.stats import ratios_to_baseline
from vnetbench.results.warning_model import WarningKind
from vnetbench.results.warnings import contention_warnings

ROUNDS = 30
SLICE_S = 0.1
CORES = 2


def _slice(t_ns: int, labels: dict[str, str], outside: float, lab: float,
           rng: np.random.Generator, p50: float, p99: float) -> list[Sample]:
    """One path's slice: its latencies, the lab's CPU and the machine's, ``outside`` cores
    busy with other work (plus a little softirq, which counts as the lab's)."""
    total = CORES * SLICE_S
    softirq = 0.01 * total
    busy = (lab + outside) * SLICE_S + softirq
    cpu = {**labels, "cpu": "all", "source": "proc_stat"}
    return [
        Sample("rtt_p50_us", p50 * math.exp(rng.normal(0, 0.01)), "us", labels, t_ns),
        Sample("rtt_p99_us", p99 * math.exp(rng.normal(0, 0.03)), "us", labels, t_ns),
        Sample("cgroup_cpu_s", lab * SLICE_S * 0.6, "s", {**labels, "cgroup": "n0"}, t_ns),
        Sample("cgroup_cpu_s", lab * SLICE_S * 0.4, "s", {**labels, "cgroup": "n1"}, t_ns),
        Sample("cpu_busy_s", busy, "s", cpu, t_ns),
        Sample("cpu_softirq_s", softirq, "s", cpu, t_ns),
        Sample("cpu_irq_s", 0.0, "s", cpu, t_ns),
        Sample("cpu_idle_s", total - busy, "s", cpu, t_ns),
        Sample("cpu_iowait_s", 0.0, "s", cpu, t_ns),
    ]


def rounds(outside: float, seed: int = 3) -> list[Sample]:
    """Interleaved rounds of ``host`` (A/A) and ``userspace``, whose p50 and p99 are 2x
    native's, with ``outside`` cores of other work during every slice."""
    rng = np.random.default_rng(seed)
    clock = itertools.count(1_000_000_000, 100_000_000)
    out: list[Sample] = []
    for r in range(ROUNDS):
        common = {"nodes": "2", "hosts": "2", "workload": "crr", "repetition": str(r),
                  PAIR_LABEL: f"0.{r}", DESIGN_LABEL: "interleaved"}
        for layer, aa, factor in (("host", "a", 1.0), ("host", "b", 1.0), ("userspace", "", 2.0)):
            labels = {**common, "layer": layer, **({AA_LABEL: aa} if aa else {})}
            out += _slice(next(clock), labels, outside, 1.4, rng, 40.0 * factor, 150.0 * factor)
    return out


def verdicts(samples: list[Sample]) -> dict[str, str]:
    latencies = [s for s in samples if s.metric.startswith("rtt_")]
    return {r.metric: r.verdict()
            for r in ratios_to_baseline(latencies, shares=outside_shares(samples))}


def test_outside_share_is_the_machines_busy_time_less_the_labs_and_its_softirq() -> None:
    samples = rounds(outside=0.5)
    shares = outside_shares(samples)
    assert len(shares) == 3 * ROUNDS
    assert all(v == pytest.approx(0.5 / CORES) for v in shares.values())
    assert all(v == pytest.approx(0.0) for v in outside_shares(rounds(outside=0.0)).values())


def test_tails_are_judged_on_a_quiet_machine_and_not_under_contention() -> None:
    quiet = verdicts(rounds(outside=0.0))
    assert quiet == {"rtt_p50_us": "worse", "rtt_p99_us": "worse"}
    busy = verdicts(rounds(outside=0.6))
    assert busy == {"rtt_p50_us": "worse", "rtt_p99_us": "not resolved"}
    # just below the limit, the tail is judged
    below = verdicts(rounds(outside=CORES * CONTENDED_SHARE * 0.8))
    assert below["rtt_p99_us"] == "worse"


def test_one_warning_says_where_and_what_is_not_judged() -> None:
    assert contention_warnings(rounds(outside=0.0)) == []
    (warning,) = contention_warnings(rounds(outside=0.6))
    assert warning.kind is WarningKind.EXTERNAL_CPU
    assert "30% of the machine's CPU" in warning.message and "crr at 2 host(s)" in warning.message
    assert "not judged" in warning.message


def test_unpaired_samples_have_no_slices_and_are_judged_as_before() -> None:
    samples = [Sample(s.metric, s.value, s.unit,
                      {k: v for k, v in s.labels.items() if k not in (PAIR_LABEL, DESIGN_LABEL)},
                      s.t_ns) for s in rounds(outside=0.6)]
    assert outside_shares(samples) == {}
    assert contention_warnings(samples) == []


def test_the_headline_table_does_not_star_a_contended_tail() -> None:
    from vnetbench.report.tables import headline_table

    for outside, expected in ((0.0, "worse"), (0.6, "not resolved")):
        table = headline_table(rounds(outside=outside))
        assert table is not None
        cells = {col.metric: cell for (layer, col), cell in table.cells.items()
                 if layer == "userspace"}
        assert cells["rtt_p99_us"].verdict(table.factor) == expected
        assert cells["rtt_p50_us"].verdict(table.factor) == "worse"
