"""The detectors: a core saturated by softirq, and drops in the same trials as TCP
retransmissions, found in collector samples (and not found where they are absent)."""

from __future__ import annotations

from vnetbench.results.detectors import drops_with_retransmits, softirq_saturation
from vnetbench.results.model import Sample
from vnetbench.results.warning_model import WarningKind


def core(layer: str, trial: str, cpu: str, softirq: float, idle: float,
         busy: float = 0.1) -> list[Sample]:
    labels = {"layer": layer, "workload": "oltp", "trial": trial, "cpu": cpu,
              "source": "proc_stat"}
    return [Sample("cpu_softirq_s", softirq, "s", labels, 0),
            Sample("cpu_idle_s", idle, "s", labels, 0),
            Sample("cpu_core_sys_s", busy, "s", labels, 0),
            Sample("cpu_softirq_s", softirq * 2, "s", {**labels, "cpu": "all"}, 0)]


def test_a_core_mostly_in_softirq_is_reported_once_per_layer_and_workload() -> None:
    samples = (core("vxlan", "1", "0", softirq=2.7, idle=0.2) + core("vxlan", "1", "1", 0.1, 2.8)
               + core("vxlan", "2", "0", 2.5, 0.4) + core("bridge", "3", "0", 0.6, 2.3))
    (warning,) = softirq_saturation(samples)
    assert warning.kind is WarningKind.SOFTIRQ_SATURATION
    assert warning.labels == {"layer": "vxlan", "workload": "oltp"}
    assert "90%" in warning.message and "2 trial(s)" in warning.message


def test_a_busy_but_unsaturated_core_is_not_reported() -> None:
    assert softirq_saturation(core("bridge", "1", "0", softirq=1.0, idle=0.1, busy=2.0)) == []


def drop(layer: str, trial: str, value: float, device: str = "vnb1234b0") -> Sample:
    return Sample("rx_drops", value, "packets", {"layer": layer, "trial": trial,
                                                 "device": device, "netns": "vnb1234-h0"}, 0)


def retrans(layer: str, trial: str, value: float) -> Sample:
    return Sample("tcp_retrans_segs", value, "count", {"layer": layer, "trial": trial}, 0)


def test_drops_and_retransmits_in_the_same_trial_are_reported() -> None:
    samples = [drop("bridge", "1", 12), retrans("bridge", "1", 30),
               drop("bridge", "2", 5), retrans("bridge", "3", 4),  # apart: not lined up
               drop("host", "4", 0), retrans("host", "4", 9)]
    (warning,) = drops_with_retransmits(samples)
    assert warning.labels == {"layer": "bridge"}
    assert "1 run(s)" in warning.message and "12 on vnb1234-h0/vnb1234b0" in warning.message


def test_a_sessions_rounds_are_runs_of_their_own() -> None:
    """A session's rotating rounds share their trial label: drops in round 2 and resends in
    round 5 are not "the same run" (they were, and the detector fired on them)."""
    def rounds(sample: Sample, pair: str) -> Sample:
        return Sample(sample.metric, sample.value, sample.unit,
                      {**sample.labels, "design": "rounds", "pair": pair}, 0)

    apart = [rounds(drop("bridge", "7", 12), "7.2"), rounds(retrans("bridge", "7", 30), "7.5")]
    assert drops_with_retransmits(apart) == []
    together = [rounds(drop("bridge", "7", 12), "7.3"), rounds(retrans("bridge", "7", 30), "7.3")]
    (warning,) = drops_with_retransmits(together)
    assert "1 run(s)" in warning.message


def test_no_drops_no_warning() -> None:
    assert drops_with_retransmits([retrans("bridge", "1", 3)]) == []
