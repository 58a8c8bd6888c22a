"""Judging a study's findings against a run: published | ours (with interval) | verdict.

For each finding the run's samples of the check's workload and metric, on the layer and on
its baseline, filtered by ``where`` (the baseline's by ``baseline_where`` too), must come from
exactly one configuration (``configs``: every variant label pinned; two configurations never
meet in one ratio). They give a ratio of medians with its bootstrap interval, the baseline's
A/A noise floor and a permutation test (``results.stats``, the rule the report uses). Then:

    set by the lab  the check names a ``bound`` (the link's rate or delay, an offered bit
                    rate: ``bounds``) and both medians sit at it: the lab's own setting
                    decided the comparison; shown, never counted as agreement
    agrees          the difference is called (beyond 5 % and the noise floor, significant)
                    in the paper's direction; with a band, the point estimate lies inside
                    the band (its interval then necessarily reaches the band). For ``same``:
                    no difference beyond 5 %, with the ratio's interval inside x0.8-x1.25
                    (``EQUIVALENT``)
    contradicts     called in the other direction; with a band, the whole interval outside
                    it; ``same``: a called difference; ``lower``/``higher``: no difference
                    beyond 5 % with that narrow an interval
    not comparable  the finding needs what vnetbench or the machine lacks, the run has no
                    samples for it or several configurations match its filter, the layer ran
                    on an emulated CPU, the run could not resolve a difference of that size,
                    or the estimate lies outside the band while its interval reaches into it

Every reason names what decided it: the capability, the missing samples, the noise floor
(the A/A control moved more than the ratio), the significance test (p), the repetitions.
Each judgement carries the smallest ratio the run could resolve (``Judgement.resolvable``).

Nothing here is written by hand: a verdict comes from a rule and a run.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from statistics import median

from vnetbench.results.model import Sample
from vnetbench.results.stats import LayerRatio, better_direction, noise_floor, ratio_of_medians
from vnetbench.results.warning_model import EvidenceWarning
from vnetbench.studies.across import judge_across
from vnetbench.studies.bounds import LABEL_OF, at_bound
from vnetbench.studies.configs import configurations, matches, pin_hint
from vnetbench.studies.judgement import FACTOR, Judgement
from vnetbench.studies.model import Finding, HostFacts
from vnetbench.studies.trend import judge_trend

EQUIVALENT = 1.25
"""A "no difference" conclusion needs the ratio's 95 % interval inside [1/1.25, 1.25]: a
median within 5 % whose interval spans x0.2 to x4 says nothing either way."""
CONFIG_LABELS = ("hosts", "nodes")
"""Labels named in a reason, to say where the comparison was made."""

__all__ = ["EQUIVALENT", "FACTOR", "judge"]


def judge(finding: Finding, samples: Iterable[Sample], emulated: Collection[str] = (),
          warnings: Sequence[EvidenceWarning] = (), host: HostFacts | None = None
          ) -> Judgement:
    """The verdict on ``finding`` from a run's samples and warnings (``emulated``: layers
    run on an emulated CPU; ``host``: what the run's machine offered, ``HostFacts``). A trend
    along nodes counts nodes per core from the ``cores`` label (``trend.with_cores``)."""
    c = finding.check
    missing = finding.missing(host)
    if missing:
        return Judgement(finding, "not comparable", "; ".join(missing))
    if c.layer in emulated or (c.along is None and c.baseline in emulated):
        return Judgement(finding, "not comparable",
                         "emulated CPU (TCG guest): not comparable with KVM or native")
    if c.along is not None:
        return judge_trend(finding, list(samples), warnings)
    if c.across is not None:
        return judge_across(finding, list(samples))
    if c.expect == "warned":
        return _warned(finding, list(samples), warnings)
    return _compare(finding, list(samples))


def _compare(finding: Finding, samples: list[Sample]) -> Judgement:
    c = finding.check
    mine = [s for s in samples if s.metric == c.metric and s.labels.get("workload") == c.workload]
    layer = configurations((s for s in mine if s.labels.get("layer") == c.layer
                            and matches(s.labels, c.where)), drop=c.baseline_where)
    base = configurations((s for s in mine if s.labels.get("layer") == c.baseline
                           and matches(s.labels, {**c.where, **c.baseline_where})),
                          drop=c.baseline_where)
    paired = [k for k in layer if k in base]
    if not paired:
        where = {**c.where, **{f"baseline {k}": v for k, v in c.baseline_where.items()}}
        return Judgement(finding, "not comparable",
                         f"the run has no {c.metric} of {c.workload} on both {c.layer} and "
                         f"{c.baseline} in one configuration" + (f" where {where}" if where
                                                                  else ""))
    if len(layer) > 1:
        return Judgement(finding, "not comparable", pin_hint(list(layer)))
    key = paired[0]
    ratio = _layer_ratio(c.layer, c.baseline, layer[key], base[key])
    set_by = _set_by_lab(finding, layer[key], base[key])
    if set_by:
        return Judgement(finding, "set by the lab", set_by, ratio)
    return _rule(finding, ratio)


def _layer_ratio(layer: str, baseline: str, members: list[Sample],
                 base: list[Sample]) -> LayerRatio:
    """The ratio of medians of one configuration, with the baseline's A/A floor."""
    values = [s.value for s in members]
    base_values = [s.value for s in base]
    labels = {k: members[0].labels[k] for k in CONFIG_LABELS if k in members[0].labels}
    return LayerRatio(layer=layer, baseline=baseline, labels=labels, metric=members[0].metric,
                      unit=members[0].unit, median=median(values),
                      baseline_median=median(base_values),
                      ratio=ratio_of_medians(values, base_values),
                      direction=better_direction(members[0].metric, members[0].unit),
                      noise=noise_floor(base))


def _set_by_lab(finding: Finding, members: list[Sample], base: list[Sample]) -> str:
    """Why the lab's own setting decided the comparison (empty: it did not)."""
    bound = finding.check.bound
    if bound is None:
        return ""
    values = {s.labels.get(LABEL_OF[bound]) for s in (*members, *base)}
    if len(values) != 1 or None in values:
        return ""
    limit = float(values.pop() or "nan")
    ours, theirs = median(s.value for s in members), median(s.value for s in base)
    if not (at_bound(bound, limit, ours) and at_bound(bound, limit, theirs)):
        return ""
    c = finding.check
    unit = members[0].unit
    setting = {"link.rate": f"the link's rate, {limit / 1e6:g} Mbit/s",
               "link.delay": f"the round trip of the link's delay, {limit / 1e3:g} ms",
               "bitrate": f"the offered bit rate, {limit / 1e6:g} Mbit/s"}[bound]
    return (f"both {c.layer} ({ours:.4g} {unit}) and {c.baseline} ({theirs:.4g} {unit}) sit at "
            f"{setting}, which the pack sets: the lab's configuration, not the layer, decided "
            "this comparison")


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


def unresolved_reason(r: LayerRatio) -> str:
    """What kept the run from calling ``r``'s difference: the repetitions, the noise floor
    (significant, but the A/A control moved as much), or the significance test."""
    ratio = r.ratio
    if r.contended:
        return (f"a tail measured while other work used {r.contention:.0%} of the machine's "
                "CPU: the wait for a CPU, not the layer")
    if not ratio.resolvable:
        return (f"too few repetitions to be significant ({ratio.n} against {ratio.n_baseline}: "
                "a permutation test cannot reach p < 0.05)")
    floor = r.floor
    needed = max(FACTOR, 1.0 + (0.0 if math.isnan(floor) else floor))
    inside_floor = not math.isnan(floor) and not ratio.beyond(needed)
    if ratio.significant and inside_floor:
        return (f"within the run's noise floor: the baseline's A/A control moved {floor:.0%}, "
                f"so only ratios beyond x{1 / needed:.2f} / x{needed:.2f} are resolved "
                f"(significant alone, p={ratio.p_value:.3f})")
    text = f"not significant (p={ratio.p_value:.3f})"
    if inside_floor:
        text += f" and within the run's noise floor ({floor:.0%})"
    return text


def _rule(finding: Finding, r: LayerRatio) -> Judgement:
    c = finding.check
    verdict = r.verdict(FACTOR)
    value = r.ratio.value
    if verdict == "unknown" or math.isnan(value):
        return Judgement(finding, "not comparable",
                         f"the ratio {c.layer}/{c.baseline} is undefined (a zero median of "
                         f"{c.baseline})", r)
    direction = "lower" if value < 1.0 else "higher"
    at = ", ".join(f"{k}={r.labels[k]}" for k in CONFIG_LABELS if r.labels.get(k))
    where = f" ({at})" if at else ""
    if verdict == "not resolved":
        return Judgement(finding, "not comparable", f"the run could not resolve this "
                         f"difference{where}: {unresolved_reason(r)}", r)
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
            return Judgement(finding, "agrees", f"no difference beyond 5%{where}, the "
                             f"interval inside x{1 / EQUIVALENT:.2f}-x{EQUIVALENT:.2f}", r)
        return Judgement(finding, "contradicts",
                         f"{c.layer} is {direction} than {c.baseline}{where}, significantly "
                         "and beyond the noise floor", r)
    if verdict == "same":
        return Judgement(finding, "contradicts",
                         f"no difference beyond 5%{where}, the interval inside "
                         f"x{1 / EQUIVALENT:.2f}-x{EQUIVALENT:.2f}; the study found {c.expect}",
                         r)
    if direction != c.expect:
        return Judgement(finding, "contradicts", f"{c.layer} is {direction} than "
                         f"{c.baseline}{where}, significantly; the study found {c.expect}", r)
    if c.band is not None:
        return _banded(finding, r, where)
    return Judgement(finding, "agrees", f"{c.expect} than {c.baseline}{where}, significantly "
                     "and beyond the noise floor", r)


def _banded(finding: Finding, r: LayerRatio, where: str) -> Judgement:
    """A called difference in the paper's direction against the paper's band: agrees when
    the point estimate is inside it, contradicts when the whole interval is outside it, else
    the run cannot tell."""
    c = finding.check
    assert c.band is not None
    low, high = c.band
    value = r.ratio.value
    ci = r.ratio.ci
    lo_ci = value if math.isnan(ci.low) else ci.low
    hi_ci = value if math.isnan(ci.high) else ci.high
    band = f"[{low:.2f}, {high:.2f}]"
    if low <= value <= high:
        return Judgement(finding, "agrees", f"{c.expect}{where}, the estimate x{value:.2f} "
                         f"inside the study's band {band}", r)
    if hi_ci < low or lo_ci > high:
        return Judgement(finding, "contradicts",
                         f"{c.expect} as the study found{where}, but the whole interval "
                         f"[{lo_ci:.2f}, {hi_ci:.2f}] lies outside its band {band}", r)
    return Judgement(finding, "not comparable",
                     f"{c.expect} as the study found{where}, but the estimate x{value:.2f} lies "
                     f"outside its band {band} while the interval [{lo_ci:.2f}, {hi_ci:.2f}] "
                     "reaches into it: the run cannot tell", r)
