"""Judging a finding that one property of a workload predicts a layer's cost: across the
values of one label (study 001's NPB kernels), does the layer's slowdown rise with, say, the
kernel's packet rate?

    rises-with  one point per value of ``across`` measured on both the layer and the
                baseline: x = the baseline's median of ``predictor`` (divided, trial by
                trial, by ``predictor_per``: messages per second), y = the layer's ratio to
                the baseline of ``metric`` (the slowdown) as the run measured it (pair by
                pair where paired, ``estimate``). Spearman's rank correlation
                with its exact permutation test (``rank_correlation_test``): agrees when
                significantly positive, contradicts when significantly negative, else not
                comparable (with 4 points it never can be: p >= 2/24)

Each point must come from one configuration (``configs``); the ``where`` labels pin the rest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import median

from vnetbench.results.model import Sample
from vnetbench.results.significance import ALPHA, rank_correlation_test
from vnetbench.studies.configs import configurations, matches, pin_hint
from vnetbench.studies.estimate import estimate
from vnetbench.studies.judgement import Judgement
from vnetbench.studies.model import Finding


def judge_across(finding: Finding, samples: Sequence[Sample]) -> Judgement:
    """The verdict on a ``rises-with`` finding."""
    c = finding.check
    assert c.across is not None and c.predictor is not None
    mine = [s for s in samples if s.labels.get("workload") == c.workload
            and matches(s.labels, c.where) and c.across in s.labels]
    points: list[tuple[str, float, float]] = []
    for value in sorted({s.labels[c.across] for s in mine}):
        at = [s for s in mine if s.labels[c.across] == value]
        layer = [s for s in at if s.labels.get("layer") == c.layer and s.metric == c.metric]
        base = [s for s in at if s.labels.get("layer") == c.baseline and s.metric == c.metric]
        for group in (layer, base):
            configs = configurations(group)
            if len(configs) > 1:
                return Judgement(finding, "not comparable",
                                 f"{c.across}={value}: {pin_hint(list(configs))}")
        x = _predictor(at, finding)
        if not layer or not base or math.isnan(x) or median(s.value for s in base) <= 0:
            continue
        ratio = estimate(c.layer, c.baseline, layer, base).ratio.ratio.value
        if math.isfinite(ratio):
            points.append((value, x, ratio))
    if len(points) < 3:
        return Judgement(finding, "not comparable",
                         f"the run has {len(points)} {c.across} value(s) with {c.metric} on "
                         f"both {c.layer} and {c.baseline} and {c.predictor} on {c.baseline}; "
                         "the test needs at least 3 (5 to be significant)")
    points.sort(key=lambda p: p[1])
    rho, p = rank_correlation_test([x for _, x, _ in points], [y for _, _, y in points])
    stat = f"rho={rho:+.2f}, p={p:.3f}" if not math.isnan(rho) else "no variation"
    per = f"/{c.predictor_per}" if c.predictor_per else ""
    trend = (f"{len(points)} {c.across}s by {c.predictor}{per} on {c.baseline}: "
             + ", ".join(f"{v} {x:.3g} x{y:.2f}" for v, x, y in points) + f" ({stat})")
    if math.isnan(rho) or p >= ALPHA:
        return Judgement(finding, "not comparable", f"no significant relation between "
                         f"{c.predictor}{per} and the {c.layer}/{c.baseline} ratio across "
                         f"{len(points)} {c.across}s ({stat})", trend=trend)
    if rho > 0:
        return Judgement(finding, "agrees", f"the {c.layer}/{c.baseline} ratio of {c.metric} "
                         f"rises significantly with {c.predictor}{per}", trend=trend)
    return Judgement(finding, "contradicts", f"the {c.layer}/{c.baseline} ratio of {c.metric} "
                     f"falls significantly as {c.predictor}{per} rises; the study found it "
                     "rises", trend=trend)


def _predictor(at: Sequence[Sample], finding: Finding) -> float:
    """The baseline's median of the predictor (per trial, divided by ``predictor_per``)."""
    c = finding.check
    base = [s for s in at if s.labels.get("layer") == c.baseline]
    top = {s.labels.get("trial", ""): s.value for s in base if s.metric == c.predictor}
    if c.predictor_per is None:
        values = list(top.values())
    else:
        below = {s.labels.get("trial", ""): s.value for s in base
                 if s.metric == c.predictor_per}
        values = [v / below[t] for t, v in top.items() if below.get(t, 0) > 0]
    return median(values) if values else math.nan
