"""Judging a finding about scaling: one layer's metric along the node sweep.

The paper's claims of this kind ("elapsed time falls as containers are added", "shorter,
but not linearly", "linear up to 16 nodes, degraded from the 20th") are judged on the curve
of medians per node count of one layer; the check's ``where`` must pin every other condition
(the samples must come from one configuration, ``configs``; several are refused, never
pooled):

    decreases / increases  Spearman's rank correlation of the metric with the node count,
                           with an exact permutation test (``rank_correlation_test``):
                           agrees when significant in that direction, contradicts when
                           significant in the other, else not comparable
    sublinear              "gets better, but not linearly": a direction AND a shape. The
                           metric must improve significantly along nodes (a time falls, a
                           rate rises) and the scaling efficiency (work per node-second:
                           1 / (elapsed x nodes) for a time, rate / nodes for a rate, flat
                           under linear scaling) must fall significantly. Agrees only with
                           both; contradicts when the metric gets significantly worse (a
                           slower curve is not "shorter") or the efficiency rises (better
                           than linear); else not comparable, saying which test was not
                           significant
    knee                   the knee after which the curve degrades and keeps degrading
                           (``report.knee.degrading_knee``: two or more worse steps after
                           it, 10 % worse at the end), in nodes per core (CPUs the nodes
                           could use, ``report.knee.node_cores``), so a 4-core testbed and a
                           2-core host compare; agrees when inside the published band,
                           contradicts when elsewhere; without such a knee, contradicts when
                           the curve, measured past the band, keeps getting better
                           significantly from the band's low edge on (rank correlation over
                           those trials), else not comparable (one noisy curve may hide one)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import median

from vnetbench.report.knee import degrading_knee, node_cores
from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario
from vnetbench.results.significance import ALPHA, rank_correlation_test
from vnetbench.results.stats import better_direction
from vnetbench.results.warning_model import EvidenceWarning, WarningKind
from vnetbench.studies.configs import configurations, matches, pin_hint
from vnetbench.studies.judgement import Judgement
from vnetbench.studies.model import Finding

CORES_LABEL = "cores"
"""Set on every sample by ``with_cores``: the CPUs its trial's nodes could run on."""


def with_cores(samples: Sequence[Sample], scenario: RecordedScenario,
               environment: Mapping[str, object]) -> list[Sample]:
    """``samples`` labelled with the CPUs their nodes could use (``report.knee.node_cores``)."""
    return [s.with_labels(**{CORES_LABEL: str(node_cores(s.labels, scenario, environment))})
            for s in samples]


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
              and s.labels.get("layer") == c.layer and matches(s.labels, c.where)
              and _number(s.labels.get("nodes")) is not None]
    where = f" where {c.where}" if c.where else ""
    if not chosen:
        return Judgement(finding, "not comparable",
                         f"the run has no {c.metric} of {c.workload} on {c.layer}{where}")
    configs = configurations(chosen, drop=("nodes",))
    if len(configs) > 1:
        return Judgement(finding, "not comparable", pin_hint(list(configs)))
    mine = chosen
    xs_all = [float(s.labels["nodes"]) for s in mine]
    points = sorted(set(xs_all))
    if len(points) < 3:
        return Judgement(finding, "not comparable",
                         f"the run measured {c.layer} at {len(points)} node count(s){where}; "
                         "a trend needs at least 3 (5 to be significant with one trial each)")
    meds = [median(s.value for s in mine if float(s.labels["nodes"]) == x) for x in points]
    cores = int(float(mine[0].labels.get(CORES_LABEL, "0") or 0))
    curve = _curve_text(points, meds, cores, mine[0].unit)
    ys = [s.value for s in mine]
    if c.expect == "knee":
        return _knee(finding, points, meds, cores, curve, mine[0].unit, (xs_all, ys))
    if c.expect == "sublinear":
        return _sublinear(finding, xs_all, ys, mine[0].unit, curve, len(points))
    rho, p = rank_correlation_test(xs_all, ys)
    stat = _stat(rho, p)
    trend = f"{curve} ({stat})"
    if math.isnan(rho) or p >= ALPHA:
        return Judgement(finding, "not comparable",
                         f"no significant trend along nodes ({stat}; {len(mine)} trials at "
                         f"{len(points)} node counts)", trend=trend)
    falls = rho < 0
    wanted_falls = c.expect == "decreases"
    if falls == wanted_falls:
        return Judgement(finding, "agrees", f"{c.metric} {c.expect} significantly as nodes "
                         "are added", trend=trend)
    return Judgement(finding, "contradicts",
                     f"{c.metric} {'decreases' if falls else 'increases'} significantly as "
                     f"nodes are added; the study found it {c.expect}", trend=trend)


def _stat(rho: float, p: float) -> str:
    return f"rho={rho:+.2f}, p={p:.3f}" if not math.isnan(rho) else "no variation"


def _sublinear(finding: Finding, xs: Sequence[float], ys: Sequence[float], unit: str,
               curve: str, points: int) -> Judgement:
    """"Better with more nodes, but not linearly": the metric's direction along nodes, then
    the shape of the work per node-second."""
    c = finding.check
    lower_better = better_direction(c.metric, unit) != "higher"
    rho, p = rank_correlation_test(xs, ys)
    efficiency = [(1.0 / (y * x) if y > 0 else math.nan) if lower_better else y / x
                  for x, y in zip(xs, ys, strict=True)]
    rho_e, p_e = rank_correlation_test(xs, efficiency)
    trend = (f"{curve} ({c.metric} {_stat(rho, p)}; work per node-second {_stat(rho_e, p_e)})")
    better = "shorter" if lower_better else "higher"
    improves = not math.isnan(rho) and p < ALPHA and (rho < 0) == lower_better
    worsens = not math.isnan(rho) and p < ALPHA and not improves
    if worsens:
        return Judgement(finding, "contradicts", f"{c.metric} gets significantly "
                         f"{'longer' if lower_better else 'lower'} as nodes are added; the study "
                         f"found it {better}, though not linearly", trend=trend)
    shape = not math.isnan(rho_e) and p_e < ALPHA
    if shape and rho_e > 0:
        return Judgement(finding, "contradicts", "work per node-second rises significantly as "
                         "nodes are added: better than linear, where the study found less",
                         trend=trend)
    if not improves:
        return Judgement(finding, "not comparable", f"{c.metric} does not get significantly "
                         f"{better} along nodes ({_stat(rho, p)}; {len(ys)} trials at {points} "
                         "node counts), so the run cannot say it scales at all", trend=trend)
    if not shape:
        return Judgement(finding, "not comparable", f"{c.metric} gets {better} significantly, "
                         "but work per node-second shows no significant trend "
                         f"({_stat(rho_e, p_e)}): linear or not, the run cannot tell",
                         trend=trend)
    return Judgement(finding, "agrees", f"{c.metric} gets {better} significantly as nodes are "
                     "added and work per node-second falls significantly: better, but not "
                     "linearly", trend=trend)


def _knee(finding: Finding, points: Sequence[float], meds: Sequence[float], cores: int,
          curve: str, unit: str, trials: tuple[Sequence[float], Sequence[float]]
          ) -> Judgement:
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
        return _no_knee(finding, cores, curve, span, lower_better, trials)
    at = f"knee at {knee.x * cores:g} nodes = {knee.x:g} per core ({cpus}); {curve}"
    if low <= knee.x <= high:
        return Judgement(finding, "agrees",
                         f"the knee lies within the study's {low:g}-{high:g} nodes per core",
                         trend=at)
    return Judgement(finding, "contradicts",
                     f"the knee lies at {knee.x:g} nodes per core, outside the study's "
                     f"{low:g}-{high:g}", trend=at)


def _no_knee(finding: Finding, cores: int, curve: str, span: str, lower_better: bool,
             trials: tuple[Sequence[float], Sequence[float]]) -> Judgement:
    """No degrading knee: a contradiction when the curve was measured past the study's band
    and, from the band's low edge on, keeps getting better significantly (where the study
    found it degrading); else the run cannot tell (one noisy curve may hide a knee)."""
    assert finding.check.band is not None
    low, high = finding.check.band
    xs, ys = trials
    beyond = [(x / cores, y) for x, y in zip(xs, ys, strict=True) if x / cores >= low]
    reached = bool(beyond) and max(x for x, _ in beyond) > high
    rho, p = (rank_correlation_test([x for x, _ in beyond], [y for _, y in beyond])
              if len(beyond) >= 3 else (math.nan, 1.0))
    trend = f"no knee; {curve}"
    better = not math.isnan(rho) and p < ALPHA and (rho < 0) == lower_better
    if reached and better:
        return Judgement(finding, "contradicts",
                         f"no knee within {span}: from {low:g} per core on, past the study's "
                         f"{low:g}-{high:g}, the curve keeps getting better ({_stat(rho, p)} "
                         f"over {len(beyond)} trials), where the study found it degrading",
                         trend=trend)
    return Judgement(finding, "not comparable",
                     f"no knee after which the curve keeps degrading within {span}; the "
                     f"study's lies at {low:g}-{high:g} per core, and from {low:g} per core on "
                     f"the curve shows no significant improvement either ({_stat(rho, p)}, "
                     f"{len(beyond)} trials{'' if reached else ', not measured past the band'})",
                     trend=trend)


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None
