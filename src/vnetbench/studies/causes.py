"""A contradiction's cause, tested: the pack's explanation beside the run's measurement that
supports it, or marked untested.

    cpu-saturated          the busiest core was busy >= 90 % of the layer's trials of the
                           workload (median over trials, ``cpu_busy_s`` / ``cpu_busy_s`` +
                           ``cpu_idle_s`` per core): a CPU-bound lab
    no-softirq-saturation  no core spent 80 % or more of a trial in softirq (the threshold
                           of the ``softirq_saturation`` detector): the effect the study
                           blamed on one saturated core cannot show here
    drops-retransmits      device drops and TCP retransmissions in the same trials

Without a measure the explanation is printed as untested; with one whose numbers do not
support it, as contradicted by the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from vnetbench.results.model import Sample
from vnetbench.studies.model import Finding

BUSY = 0.9
"""Share of a core's time busy above which the lab counts as CPU-bound."""
SOFTIRQ = 0.8
"""Share of a core's time in softirq the ``softirq_saturation`` detector flags."""


def explain(finding: Finding, samples: Sequence[Sample]) -> str:
    """The cause line of a contradiction of ``finding`` (empty when the pack gives none)."""
    cause = finding.cause
    if cause is None:
        return ""
    if cause.measure is None:
        return f"explanation (untested: the run measures nothing that would test it): {cause.text}"
    c = finding.check
    mine = [s for s in samples if s.labels.get("layer") == c.layer
            and s.labels.get("workload") == c.workload]
    measured, supports = MEASURES[cause.measure](mine)
    if not measured:
        return (f"explanation (untested: the run has no {cause.measure} evidence on "
                f"{c.layer}): {cause.text}")
    verdict = "supports it" if supports else "does NOT support it"
    return f"explanation: {cause.text}; measured on {c.layer}: {measured} ({verdict})"


def _per_core_shares(samples: Sequence[Sample], metric: str) -> list[float]:
    """Per trial, the largest share of one core's time spent in ``metric``."""
    per: dict[str, dict[str, dict[str, float]]] = {}
    for s in samples:
        cpu = s.labels.get("cpu")
        if cpu in (None, "all") or s.metric not in (metric, "cpu_busy_s", "cpu_idle_s"):
            continue
        per.setdefault(s.labels.get("trial", ""), {}).setdefault(cpu, {})[s.metric] = s.value
    shares = []
    for cores in per.values():
        best = [v[metric] / (v["cpu_busy_s"] + v["cpu_idle_s"]) for v in cores.values()
                if metric in v and v.get("cpu_busy_s", 0) + v.get("cpu_idle_s", 0) > 0]
        if best:
            shares.append(max(best))
    return shares


def _cpu_saturated(samples: Sequence[Sample]) -> tuple[str, bool]:
    shares = _per_core_shares(samples, "cpu_busy_s")
    if not shares:
        return "", False
    share = median(shares)
    return (f"busiest core {share:.0%} busy (median of {len(shares)} trials; "
            f"CPU-bound from {BUSY:.0%})", share >= BUSY)


def _no_softirq(samples: Sequence[Sample]) -> tuple[str, bool]:
    shares = _per_core_shares(samples, "cpu_softirq_s")
    if not shares:
        return "", False
    top = max(shares)
    return (f"at most {top:.0%} of a core in softirq in any of {len(shares)} trials "
            f"(saturation from {SOFTIRQ:.0%})", top < SOFTIRQ)


def _drops_retransmits(samples: Sequence[Sample]) -> tuple[str, bool]:
    drops: dict[str, float] = {}
    retrans: dict[str, float] = {}
    for s in samples:
        trial = s.labels.get("trial", "")
        if s.metric in ("rx_drops", "tx_drops"):
            drops[trial] = drops.get(trial, 0.0) + s.value
        elif s.metric == "tcp_retrans_segs":
            retrans[trial] = retrans.get(trial, 0.0) + s.value
    trials = set(drops) | set(retrans)
    if not trials:
        return "", False
    both = [t for t in trials if drops.get(t, 0) > 0 and retrans.get(t, 0) > 0]
    return (f"{len(both)} of {len(trials)} trials with both device drops and TCP "
            "retransmissions", bool(both))


MEASURES = {"cpu-saturated": _cpu_saturated, "no-softirq-saturation": _no_softirq,
            "drops-retransmits": _drops_retransmits}
