"""Judging a study's findings against a run: published | ours (with interval) | verdict.

For each finding the run's samples of the check's workload and metric, on the layer and on
its baseline (and the ``where`` labels), give a ratio of medians with its bootstrap interval,
A/A noise floor and permutation test (``results.stats``, the same rule the report uses).
Then:

    agrees          the difference is called (beyond 5 % and the noise floor, significant)
                    in the paper's direction, and inside the paper's band when it gives one;
                    for ``same``: no difference beyond 5 %, with the ratio's interval inside
                    x0.8-x1.25 (``EQUIVALENT``)
    contradicts     called in the other direction, outside the band, or (``same``) a called
                    difference; or (``lower``/``higher``) no difference beyond 5 % with that
                    narrow an interval
    not comparable  the finding needs what vnetbench cannot do yet, the run has no samples
                    for it, the layer ran on an emulated CPU, or the run could not resolve
                    a difference of that size; the reason is given

Nothing here is written by hand: a verdict comes from a rule and a run.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence

from vnetbench.results.model import Sample
from vnetbench.results.stats import LayerRatio, ratios_to_baseline
from vnetbench.results.warning_model import EvidenceWarning
from vnetbench.studies.judgement import Judgement
from vnetbench.studies.model import Finding
from vnetbench.studies.trend import judge_trend

FACTOR = 1.05
EQUIVALENT = 1.25
"""A "no difference" conclusion needs the ratio's 95 % interval inside [1/1.25, 1.25]: a
median within 5 % whose interval spans x0.2 to x4 says nothing either way."""
CONFIG_LABELS = ("hosts", "nodes")


def _chosen(samples: Iterable[Sample], finding: Finding) -> list[Sample]:
    c = finding.check
    return [s for s in samples
            if s.metric == c.metric and s.labels.get("workload") == c.workload
            and s.labels.get("layer") in (c.layer, c.baseline)
            and all(s.labels.get(k) == v for k, v in c.where.items())]


def judge(finding: Finding, samples: Iterable[Sample], emulated: Collection[str] = (),
          warnings: Sequence[EvidenceWarning] = ()) -> Judgement:
    """The verdict on ``finding`` from a run's samples and warnings (``emulated``: layers
    run on an emulated CPU). A trend along nodes counts nodes per core from the ``cores``
    label (``trend.with_cores``)."""
    c = finding.check
    missing = finding.missing()
    if missing:
        return Judgement(finding, "not comparable", "; ".join(missing))
    if c.layer in emulated or (c.along is None and c.baseline in emulated):
        return Judgement(finding, "not comparable",
                         "emulated CPU (TCG guest): not comparable with KVM or native")
    if c.along is not None:
        return judge_trend(finding, list(samples), warnings)
    if c.expect == "warned":
        return _warned(finding, list(samples), warnings)
    chosen = _chosen(samples, finding)
    ratios = ratios_to_baseline(chosen, baseline=c.baseline,
                                group_by=(*CONFIG_LABELS, "workload", "metric"))
    ratios = [r for r in ratios if r.layer == c.layer]
    if not ratios:
        return Judgement(finding, "not comparable",
                         f"the run has no {c.metric} of {c.workload} on both {c.layer} and "
                         f"{c.baseline}" + (f" where {c.where}" if c.where else ""))
    ratio = max(ratios, key=lambda r: (r.ratio.n, r.ratio.n_baseline))  # best covered config
    return _rule(finding, ratio)


def _warned(finding: Finding, samples: list[Sample],
            warnings: Sequence[EvidenceWarning]) -> Judgement:
    c = finding.check
    if not any(s.labels.get("layer") == c.layer and s.labels.get("workload") == c.workload
               for s in samples):
        return Judgement(finding, "not comparable",
                         f"the run has no {c.workload} samples on {c.layer}")
    hits = [w for w in warnings if w.kind.value == c.warning and w.labels.get("layer") == c.layer
            and w.labels.get("workload", c.workload) == c.workload]
    if hits:
        return Judgement(finding, "agrees", f"the run's detector says: {hits[0].message}")
    return Judgement(finding, "contradicts",
                     f"no {c.warning} on {c.layer} in this run (the detector found none)")


def _narrow(r: LayerRatio) -> bool:
    ci = r.ratio.ci
    if math.isnan(ci.low) or math.isnan(ci.high):
        return False
    return ci.low >= 1 / EQUIVALENT and ci.high <= EQUIVALENT


def _rule(finding: Finding, r: LayerRatio) -> Judgement:
    c = finding.check
    verdict = r.verdict(FACTOR)
    value = r.ratio.value
    if verdict == "unknown" or math.isnan(value):
        return Judgement(finding, "not comparable",
                         f"the ratio {c.layer}/{c.baseline} is undefined (a zero median)", r)
    direction = "lower" if value < 1.0 else "higher"
    at = ", ".join(f"{k}={r.labels[k]}" for k in CONFIG_LABELS if r.labels.get(k))
    where = f" ({at})" if at else ""
    if verdict == "not resolved":
        floor = "" if math.isnan(r.floor) else f"; noise floor {r.floor:.0%}"
        reason = ("too few repetitions to be significant" if not r.ratio.resolvable
                  else f"not significant (p={r.ratio.p_value:.3f}){floor}")
        return Judgement(finding, "not comparable",
                         f"the run could not resolve this difference{where}: {reason}", r)
    if verdict == "same" and not r.ratio.resolvable:
        return Judgement(finding, "not comparable",
                         f"the run could not resolve a difference{where}: too few repetitions "
                         "to be significant, so it cannot say there is none either", r)
    if verdict == "same" and not _narrow(r):
        return Judgement(finding, "not comparable",
                         f"the run could not tell whether they differ{where}: the ratio's "
                         f"interval is wider than x{1 / EQUIVALENT:.2f}-x{EQUIVALENT:.2f}", r)
    if c.expect == "same":
        if verdict == "same":
            return Judgement(finding, "agrees", f"no difference beyond 5%{where}", r)
        return Judgement(finding, "contradicts",
                         f"{c.layer} is {direction} than {c.baseline}{where}, significantly", r)
    if verdict == "same":
        return Judgement(finding, "contradicts",
                         f"no difference beyond 5%{where}; the study found {c.expect}", r)
    if direction != c.expect:
        return Judgement(finding, "contradicts", f"{c.layer} is {direction} than "
                         f"{c.baseline}{where}; the study found {c.expect}", r)
    if c.band is not None:
        low, high = c.band
        ci = r.ratio.ci
        lo_ci = value if math.isnan(ci.low) else ci.low
        hi_ci = value if math.isnan(ci.high) else ci.high
        if hi_ci < low or lo_ci > high:
            return Judgement(finding, "contradicts",
                             f"{c.expect} as the study found{where}, but outside its band "
                             f"[{low:.2f}, {high:.2f}]", r)
        return Judgement(finding, "agrees",
                         f"{c.expect}{where}, within the study's band [{low:.2f}, {high:.2f}]", r)
    return Judgement(finding, "agrees", f"{c.expect} than {c.baseline}{where}, significantly", r)
