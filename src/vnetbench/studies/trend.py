"""Judging a finding about scaling: one layer's metric along the node sweep.

The paper's claims of this kind ("elapsed time falls as containers are added", "not
linear", "linear up to 16 nodes, degraded from the 20th") are judged on the curve of
medians per node count of one layer (the check's ``where`` pins the benchmark and any other
swept axis):

    decreases / increases  Spearman's rank correlation of the metric with the node count,
                           with an exact permutation test (``rank_correlation_test``):
                           agrees when significant in that direction, contradicts when
                           significant in the other, else not comparable
    sublinear              the same test on the scaling efficiency (work per node-second:
                           1 / (elapsed x nodes) for a time, rate / nodes for a rate), which
                           stays flat under linear scaling: agrees when it falls
                           significantly, contradicts when it rises (super-linear)
    knee                   the knee after which the curve degrades and keeps degrading
                           (``report.knee.degrading_knee``: two or more worse steps after
                           it, 10 % worse at the end), in nodes per core (CPUs the nodes
                           could use, ``report.knee.node_cores``), so a 4-core testbed and a
                           2-core host compare; agrees when inside the published band,
                           contradicts when elsewhere; without such a knee, not comparable
                           (a curve measured once per point cannot show that there is none)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import median
from typing import Any

from vnetbench.report.knee import degrading_knee, node_cores
from vnetbench.results.model import Sample
from vnetbench.results.significance import ALPHA, rank_correlation_test
from vnetbench.results.stats import better_direction
from vnetbench.results.warning_model import EvidenceWarning, WarningKind
from vnetbench.studies.judgement import Judgement
from vnetbench.studies.model import Finding

PER_SAMPLE = frozenset({"trial", "repetition", "aa", "nodes", "layer", "workload", "t",
                        "interval", "role", "node", "kind"})
"""Labels that vary within one configuration (not a swept condition)."""


CORES_LABEL = "cores"
"""Set on every sample by ``with_cores``: the CPUs its trial's nodes could run on."""


def with_cores(samples: Sequence[Sample], scenario: Mapping[str, Any],
               environment: Mapping[str, Any]) -> list[Sample]:
    """``samples`` labelled with the CPUs their nodes could use (``report.knee.node_cores``)."""
    return [s.with_labels(**{CORES_LABEL: str(node_cores(s.labels, scenario, environment))})
            for s in samples]


def _configs(samples: Sequence[Sample], finding: Finding) -> dict[tuple[tuple[str, str], ...],
                                                                   list[Sample]]:
    """The curve's samples, split by every other condition the run varied."""
    pinned = set(finding.check.where)
    out: dict[tuple[tuple[str, str], ...], list[Sample]] = {}
    for s in samples:
        key = tuple(sorted((k, v) for k, v in s.labels.items()
                           if k not in PER_SAMPLE and k not in pinned))
        out.setdefault(key, []).append(s)
    return out


def _curve_text(xs: Sequence[float], meds: Sequence[float], cores: int, unit: str) -> str:
    per = f" ({xs[0] / cores:g}-{xs[-1] / cores:g} per core)" if cores else ""
    return (f"{xs[0]:g}-{xs[-1]:g} nodes{per}: {meds[0]:.3g} -> {meds[-1]:.3g}"
            f"{(' ' + unit) if unit else ''}")


def disturbed(finding: Finding, warnings: Sequence[EvidenceWarning]) -> list[str]:
    """Node counts of the curve whose trial ran beside busy processes outside the lab (an
    ``external_cpu`` warning): with one trial per node count, one disturbed trial bends the
    curve, so the run cannot say what the curve is."""
    c = finding.check
    return sorted({w.labels.get("nodes", "?") for w in warnings
                   if w.kind is WarningKind.EXTERNAL_CPU and w.labels.get("layer") == c.layer
                   and w.labels.get("workload") == c.workload
                   and all(w.labels.get(k, v) == v for k, v in c.where.items())},
                  key=lambda n: _number(n) or 0.0)


def judge_trend(finding: Finding, samples: Sequence[Sample],
                warnings: Sequence[EvidenceWarning] = ()) -> Judgement:
    """The verdict on a finding ``along: nodes`` (samples labelled by ``with_cores``); not
    comparable when a trial of the curve was disturbed (``disturbed``)."""
    judgement = _judge_curve(finding, samples)
    busy = disturbed(finding, warnings)
    if not busy or judgement.verdict == "not comparable":
        return judgement
    return Judgement(finding, "not comparable",
                     f"processes outside the lab used the CPU during the trials at "
                     f"{', '.join(busy)} nodes (external_cpu warnings), so this curve may not "
                     f"repeat; undisturbed, the rule would say: {judgement.verdict}, "
                     f"{judgement.why}", trend=judgement.trend)


def _judge_curve(finding: Finding, samples: Sequence[Sample]) -> Judgement:
    c = finding.check
    chosen = [s for s in samples
              if s.metric == c.metric and s.labels.get("workload") == c.workload
              and s.labels.get("layer") == c.layer
              and all(s.labels.get(k) == v for k, v in c.where.items())
              and _number(s.labels.get("nodes")) is not None]
    where = f" where {c.where}" if c.where else ""
    if not chosen:
        return Judgement(finding, "not comparable",
                         f"the run has no {c.metric} of {c.workload} on {c.layer}{where}")
    configs = _configs(chosen, finding)
    mine = max(configs.values(), key=lambda g: (len({s.labels['nodes'] for s in g}), len(g)))
    xs_all = [float(s.labels["nodes"]) for s in mine]
    points = sorted(set(xs_all))
    if len(points) < 3:
        return Judgement(finding, "not comparable",
                         f"the run measured {c.layer} at {len(points)} node count(s){where}; "
                         "a trend needs at least 3 (5 to be significant with one trial each)")
    meds = [median(s.value for s in mine if float(s.labels["nodes"]) == x) for x in points]
    cores = int(float(mine[0].labels.get(CORES_LABEL, "0") or 0))
    curve = _curve_text(points, meds, cores, mine[0].unit)
    if c.expect == "knee":
        return _knee(finding, points, meds, cores, curve, mine[0].unit)
    ys = [s.value for s in mine]
    if c.expect == "sublinear":
        lower_better = better_direction(c.metric, mine[0].unit) != "higher"
        ys = [(1.0 / (y * x) if y > 0 else math.nan) if lower_better else y / x
              for x, y in zip(xs_all, ys, strict=True)]
    rho, p = rank_correlation_test(xs_all, ys)
    stat = f"rho={rho:+.2f}, p={p:.3f}" if not math.isnan(rho) else "no variation"
    trend = f"{curve} ({stat})"
    if math.isnan(rho) or p >= ALPHA:
        return Judgement(finding, "not comparable",
                         f"no significant trend along nodes ({stat}; {len(mine)} trials at "
                         f"{len(points)} node counts)", trend=trend)
    falls = rho < 0
    if c.expect == "sublinear":
        if falls:
            return Judgement(finding, "agrees", "work per node-second falls significantly as "
                             "nodes are added: scaling is not linear", trend=trend)
        return Judgement(finding, "contradicts", "work per node-second rises significantly "
                         "as nodes are added (better than linear)", trend=trend)
    wanted_falls = c.expect == "decreases"
    if falls == wanted_falls:
        return Judgement(finding, "agrees", f"{c.metric} {c.expect} significantly as nodes "
                         "are added", trend=trend)
    return Judgement(finding, "contradicts",
                     f"{c.metric} {'decreases' if falls else 'increases'} significantly as "
                     f"nodes are added; the study found it {c.expect}", trend=trend)


def _knee(finding: Finding, points: Sequence[float], meds: Sequence[float], cores: int,
          curve: str, unit: str) -> Judgement:
    band = finding.check.band
    assert band is not None  # Check requires it for expect: knee
    low, high = band
    if not cores:
        return Judgement(finding, "not comparable", "the run does not record its CPU count",
                         trend=curve)
    per_core = [x / cores for x in points]
    lower_better = better_direction(finding.check.metric, unit) != "higher"
    knee = degrading_knee(per_core, meds, lower_is_better=lower_better)
    cpus = f"{cores} CPU{'s' if cores > 1 else ''}"
    span = f"{per_core[0]:g}-{per_core[-1]:g} nodes per core ({cpus})"
    if knee is None:
        return Judgement(finding, "not comparable",
                         f"no knee after which the curve keeps degrading within {span}; the "
                         f"study's lies at {low:g}-{high:g} per core", trend=f"no knee; {curve}")
    at = f"knee at {knee.x * cores:g} nodes = {knee.x:g} per core ({cpus}); {curve}"
    if low <= knee.x <= high:
        return Judgement(finding, "agrees",
                         f"the knee lies within the study's {low:g}-{high:g} nodes per core",
                         trend=at)
    return Judgement(finding, "contradicts",
                     f"the knee lies at {knee.x:g} nodes per core, outside the study's "
                     f"{low:g}-{high:g}", trend=at)


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None
