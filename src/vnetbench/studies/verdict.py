"""Judging a study's findings against a run: published | ours (with interval) | verdict.

For each finding the run's samples of the check's workload and metric, on the layer and on
its baseline, filtered by ``where`` (the baseline's by ``baseline_where`` too), must come from
exactly one configuration (``configs``: every variant label pinned; two configurations never
meet in one ratio). They are judged as they were measured (``estimate``): pair by pair when
the run paired them (rounds, interleaved slices, trial blocks; two blocked non-host layers
through their blocks' host trials), with the A/A noise floor of the same workload, metric and
configuration (the baseline's own, else the host's, and the verdict says which).

The rules, in this order (each verdict names its rule, ``Judgement.rule``, and whether the
run could have produced the opposite verdict, ``Judgement.could_fail``):

    capability      the finding needs what vnetbench or the machine lacks, or its layer ran
                    on an emulated CPU: not comparable
    untestable      the pack says why the published claim cannot be tested here
    lab             the pack's ``construction`` (the layer shares the baseline's path, the
                    pack's own assumption forces the effect), or a claim of no difference
                    whose two sides both sit at a value the lab configured (``bounds``: a
                    rate, a delay, a jitter, a pace; both edges): "set by the lab", shown,
                    never counted as agreement
    band            a claim with the study's band of ratios: agrees when the estimate lies
                    inside the band and the interval, widened by the run's floor, is no wider
                    than the band (else the run could not have placed it outside);
                    contradicts when that interval lies wholly outside; else not comparable
    added           ``within``: the same rule on what the layer adds to the baseline, in the
                    metric's unit, against the study's band or resolution
    equivalence     ``same``: agrees when the interval widened by the floor lies inside the
                    finding's margin, contradicts when it lies wholly outside
    direction       ``lower``/``higher``: a difference called (beyond 5 % and the floor,
                    significant) in the study's direction agrees, in the other contradicts;
                    no difference (the interval widened by the floor inside the finding's
                    margin, 5 % by default) contradicts; else not comparable
    reaches         the layer's level (median, bootstrap interval) against the study's line
                    rate or the lab's pace times ``share``: agrees at or above, contradicts
                    wholly below
    detector        ``warned``: the run's detector on the layer's trials of that workload
                    (recomputed on them); not comparable without its evidence counters
    trend, rises-with  along a sweep (``trend``) or across a label's values (``across``)

A design whose pairs (or repetitions) can never reach p < 0.05 decides nothing: not
comparable. Every reason names what decided it: the capability, the missing samples, the
noise floor, the significance test, the repetitions. Each judgement carries the smallest
ratio the run could resolve (``Judgement.resolvable``).

Nothing here is written by hand: a verdict comes from a rule and a run.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Iterable, Sequence
from statistics import median

from vnetbench.results.detectors import detector_warnings, run_key
from vnetbench.results.model import PAIR_LABEL, Sample
from vnetbench.results.stats import LayerRatio, bootstrap_ci
from vnetbench.results.warning_model import EvidenceWarning
from vnetbench.scenario.model import BASELINE_LAYER
from vnetbench.studies.across import judge_across
from vnetbench.studies.bounds import LABEL_OF, at_bound
from vnetbench.studies.configs import Key, configurations, matches, pin_hint
from vnetbench.studies.estimate import CONFIG_LABELS, Estimate, estimate
from vnetbench.studies.judgement import FACTOR, Judgement, Verdict
from vnetbench.studies.model import Finding, HostFacts
from vnetbench.studies.trend import judge_trend

EVIDENCE = {"drops_with_retransmits": ("rx_drops", "tcp_retrans_segs"),
            "softirq_saturation": ("cpu_softirq_s",)}
"""The counters a detector needs on the layer's trials to have been able to fire."""

__all__ = ["FACTOR", "judge"]


def judge(finding: Finding, samples: Iterable[Sample], emulated: Collection[str] = (),
          warnings: Sequence[EvidenceWarning] = (), host: HostFacts | None = None
          ) -> Judgement:
    """The verdict on ``finding`` from a run's samples and warnings (``emulated``: layers
    run on an emulated CPU; ``host``: what the run's machine offered, ``HostFacts``). A trend
    along nodes counts nodes per core from the ``cores`` label (``trend.with_cores``)."""
    c = finding.check
    missing = finding.missing(host)
    if missing:
        return _ruled(Judgement(finding, "not comparable", "; ".join(missing)), "capability")
    if c.untestable:
        return _ruled(Judgement(finding, "not comparable", c.untestable), "untestable")
    if c.layer in emulated or (c.along is None and c.baseline in emulated):
        return _ruled(Judgement(finding, "not comparable",
                                "emulated CPU (TCG guest): not comparable with KVM or native"),
                      "capability")
    pool = list(samples)
    values = _swept(finding, pool)
    if len(values) > 1:
        return _at_each(finding, pool, values, emulated, warnings, host)
    if c.along is not None:
        j = _ruled(judge_trend(finding, pool, warnings), "trend")
    elif c.across is not None:
        j = _ruled(judge_across(finding, pool), "rises-with")
    elif c.expect == "warned":
        j = _warned(finding, pool)
    else:
        j = _compare(finding, pool)
    if c.construction and j.rule != "samples":
        measured = j.trend or (f"x{j.ratio.ratio.value:.2f}" if j.ratio is not None else "")
        return _ruled(dataclasses.replace(
            j, verdict="set by the lab", why=f"{c.construction} (the run measured "
            f"{measured or 'it'}: shown, not judged; by its rule: {j.verdict})"), "lab")
    return j


def _swept(finding: Finding, samples: Sequence[Sample]) -> list[dict[str, str]]:
    """The values of the sweep axes (labels ``<section>.<option>``) the finding's layer was
    measured at and its ``where`` leaves open: one finding, judged at each (``_at_each``)."""
    c = finding.check
    seen: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
    for s in samples:
        if s.labels.get("layer") != c.layer or s.labels.get("workload") != c.workload \
                or s.metric != c.metric or not matches(s.labels, c.where):
            continue
        axes = {k: v for k, v in s.labels.items() if "." in k and not k.startswith("lab.")
                and k not in c.where}
        seen.setdefault(tuple(sorted(axes.items())), axes)
    return list(seen.values())


def _at_each(finding: Finding, samples: list[Sample], values: list[dict[str, str]],
             emulated: Collection[str], warnings: Sequence[EvidenceWarning],
             host: HostFacts | None) -> Judgement:
    """A finding whose layer was measured at several values of a sweep (a full pack's data
    sizes, its stream counts), judged at each value and required to agree at every one: the
    verdict all values share (agrees, contradicts, ...), else not comparable, with each
    value's verdict."""
    c = finding.check
    parts = []
    for axes in sorted(values, key=lambda a: sorted(a.items())):
        pinned = finding.model_copy(update={"check": c.model_copy(
            update={"where": {**c.where, **axes}})})
        parts.append((axes, judge(pinned, samples, emulated, warnings, host)))
    verdicts = {j.verdict for _, j in parts}
    said = "; ".join(f"{', '.join(f'{k}={v}' for k, v in axes.items())}: {j.verdict} "
                     f"({j.why})" for axes, j in parts)
    first = parts[0][1]
    verdict: Verdict = first.verdict if len(verdicts) == 1 else "not comparable"
    why = f"judged at each of {len(parts)} swept values, every one required to agree: {said}"
    return _ruled(dataclasses.replace(first, verdict=verdict, why=why), first.rule or "samples")


def _ruled(j: Judgement, rule: str) -> Judgement:
    """``j`` naming its rule; it could have failed when data decided it either way."""
    could = rule not in ("lab", "capability", "untestable", "samples") and \
        j.verdict in ("agrees", "contradicts")
    return dataclasses.replace(j, rule=rule, could_fail=could)


def _compare(finding: Finding, samples: list[Sample]) -> Judgement:
    c = finding.check
    mine = [s for s in samples if s.metric == c.metric and s.labels.get("workload") == c.workload]
    base_where = {**c.where, **c.baseline_where}
    layer = configurations((s for s in mine if s.labels.get("layer") == c.layer
                            and matches(s.labels, c.where)), drop=c.baseline_where)
    base = configurations((s for s in mine if s.labels.get("layer") == c.baseline
                           and matches(s.labels, base_where)), drop=c.baseline_where)
    if c.expect == "reaches":
        return _reaches(finding, layer, base)
    paired = [k for k in layer if k in base]
    if not paired:
        where = {**c.where, **{f"baseline {k}": v for k, v in c.baseline_where.items()}}
        return _ruled(Judgement(finding, "not comparable",
                                f"the run has no {c.metric} of {c.workload} on both {c.layer} "
                                f"and {c.baseline} in one configuration"
                                + (f" where {where}" if where else "")), "samples")
    if len(layer) > 1:
        return _ruled(Judgement(finding, "not comparable", pin_hint(list(layer))), "samples")
    key = paired[0]
    host = configurations((s for s in mine if s.labels.get("layer") == BASELINE_LAYER
                           and matches(s.labels, base_where)), drop=c.baseline_where)
    est = estimate(c.layer, c.baseline, layer[key], base[key], host.get(key, []))
    r = est.ratio
    set_by = _set_by_lab(finding, layer[key], base[key])
    if set_by:
        return _ruled(Judgement(finding, "set by the lab", set_by, r,
                                floor_source=est.floor_source), "lab")
    return _rule(finding, est)


def _set_by_lab(finding: Finding, members: list[Sample], base: list[Sample]) -> str:
    """Why the lab's own setting decided a claim of no difference (empty: it did not): both
    medians sit at the configured value (``bounds.at_bound``, both edges)."""
    bound = finding.check.bound
    if bound is None:
        return ""
    values = {s.labels.get(LABEL_OF[bound]) for s in (*members, *base)}
    if len(values) != 1 or None in values:
        return ""
    limit = float(values.pop() or "nan")
    ours, theirs = median(s.value for s in members), median(s.value for s in base)
    if not (at_bound(limit, ours) and at_bound(limit, theirs)):
        return ""
    c = finding.check
    unit = members[0].unit
    setting = {"link.rate": f"the link's rate, {limit / 1e6:g} Mbit/s",
               "link.delay": f"the round trip of the link's delay, {limit / 1e3:g} ms",
               "link.jitter": f"the link's jitter, {limit / 1e3:g} ms",
               "bitrate": f"the offered bit rate, {limit / 1e6:g} Mbit/s"}[bound]
    return (f"both {c.layer} ({ours:.4g} {unit}) and {c.baseline} ({theirs:.4g} {unit}) sit at "
            f"{setting}, which the pack sets: the lab's configuration, not the layer, decided "
            "this comparison")


def _warned(finding: Finding, samples: list[Sample]) -> Judgement:
    """The detector recomputed on the layer's trials of the check's workload: agrees when it
    fires, contradicts when its counters were there and it did not."""
    c = finding.check
    assert c.warning is not None
    mine = [s for s in samples if s.labels.get("layer") == c.layer
            and s.labels.get("workload") == c.workload and matches(s.labels, c.where)]
    if not mine:
        return _ruled(Judgement(finding, "not comparable",
                                f"the run has no {c.workload} samples on {c.layer}"), "samples")
    needed = EVIDENCE.get(c.warning, ())
    lacking = [m for m in needed if not any(s.metric == m for s in mine)]
    if lacking:
        return _ruled(Judgement(finding, "not comparable",
                                f"the run has no {', '.join(lacking)} counters on {c.layer}'s "
                                f"{c.workload} trials, so the detector could not fire"),
                      "samples")
    trials = len({run_key(s)[2] for s in mine})
    hits = [w for w in detector_warnings(mine) if w.kind.value == c.warning]
    if hits:
        return _ruled(Judgement(finding, "agrees", f"the detector, on {c.layer}'s {trials} "
                                f"{c.workload} run(s), says: {hits[0].message}"), "detector")
    return _ruled(Judgement(finding, "contradicts",
                            f"no {c.warning} on {c.layer}'s {trials} {c.workload} run(s): "
                            f"its counters ({', '.join(needed)}) were read and the detector "
                            "found none"), "detector")


def _reaches(finding: Finding, layer: dict[Key, list[Sample]],
             base: dict[Key, list[Sample]]) -> Judgement:
    """The layer's level against the study's line rate or the lab's pace; not comparable
    when the baseline (native) falls short of it too: then the lab, not the layer, decides."""
    c = finding.check
    if not layer:
        return _ruled(Judgement(finding, "not comparable", f"the run has no {c.metric} of "
                                f"{c.workload} on {c.layer}" + (f" where {c.where}" if c.where
                                                                 else "")), "samples")
    if len(layer) > 1:
        return _ruled(Judgement(finding, "not comparable", pin_hint(list(layer))), "samples")
    key, members = next(iter(layer.items()))
    if c.level is not None:
        level, what = c.level, f"the study's {c.level / 1e6:g} M{members[0].unit}" \
            if c.level >= 1e6 else f"the study's {c.level:g} {members[0].unit}"
    else:
        assert c.level_bound is not None
        values = {s.labels.get(LABEL_OF[c.level_bound]) for s in members}
        if len(values) != 1 or None in values:
            return _ruled(Judgement(finding, "not comparable", f"the run's scenario sets no "
                                    f"single {c.level_bound} for {c.layer}'s {c.workload}"),
                          "samples")
        level = float(values.pop() or "nan")
        what = {"link.rate": "the link's rate", "bitrate": "the offered bit rate"}[
            c.level_bound] + f" {level / 1e6:g} Mbit/s"
    need = c.share * level
    values_of = _per_round(members)
    ci = bootstrap_ci(values_of)
    mid = median(values_of)
    unit = members[0].unit
    ours = f"{mid / level:.0%} of {what} [{ci.low / level:.0%}, {ci.high / level:.0%}]" \
        if not math.isnan(ci.low) else f"{mid / level:.0%} of {what}"
    if math.isnan(ci.low) or len(values_of) < 2:
        return _ruled(Judgement(finding, "not comparable", f"{ours}: {len(values_of)} value(s), "
                                "too few for an interval", trend=ours), "reaches")
    if ci.low >= need:
        return _ruled(Judgement(finding, "agrees", f"{c.layer} reaches {c.share:.0%} of {what}: "
                                f"its median {mid:.4g} {unit}, the interval's low end too",
                                trend=ours), "reaches")
    theirs = _per_round(base.get(key, []))
    base_ci = bootstrap_ci(theirs) if len(theirs) >= 2 else None
    if ci.high < need and base_ci is not None and base_ci.high < need:
        return _ruled(Judgement(finding, "not comparable", f"{c.layer} stays below "
                                f"{c.share:.0%} of {what} ({mid:.4g} {unit}), but so does "
                                f"{c.baseline} ({median(theirs):.4g} {unit}): the lab's own path "
                                "cannot carry it, so it does not tell the layer's cost",
                                trend=ours), "reaches")
    if ci.high < need:
        return _ruled(Judgement(finding, "contradicts", f"{c.layer} stays below {c.share:.0%} "
                                f"of {what}: its median {mid:.4g} {unit}, the whole interval "
                                "below", trend=ours), "reaches")
    return _ruled(Judgement(finding, "not comparable", f"{c.layer}'s interval straddles "
                            f"{c.share:.0%} of {what} ({mid:.4g} {unit}): the run could not tell",
                            trend=ours), "reaches")


def _per_round(members: Sequence[Sample]) -> list[float]:
    """One value per pair (round or block) when paired, else per trial."""
    groups: dict[str, list[float]] = {}
    for s in members:
        key = s.labels.get(PAIR_LABEL) or s.labels.get("trial", "") or str(s.t_ns)
        groups.setdefault(key, []).append(s.value)
    return [median(v) for v in groups.values()]


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


def widened(r: LayerRatio) -> tuple[float, float]:
    """The ratio's interval widened by the run's noise floor around the estimate: what the
    run cannot tell apart from its estimate (the estimate alone without either)."""
    value = r.ratio.value
    floor = 0.0 if math.isnan(r.floor) else r.floor
    low, high = value / (1.0 + floor), value * (1.0 + floor)
    ci = r.ratio.ci
    if not (math.isnan(ci.low) or math.isnan(ci.high)):
        low, high = min(low, ci.low), max(high, ci.high)
    return low, high


def _sides(finding: Finding) -> tuple[str, str]:
    """The two sides compared, named by their layers and, where the check picks the
    baseline's samples by other labels, those labels: ``userspace (cgroup=infra)``."""
    c = finding.check
    if not c.baseline_where:
        return c.layer, c.baseline
    mine = ", ".join(f"{k}={c.where.get(k, '')}" for k in c.baseline_where)
    theirs = ", ".join(f"{k}={v}" for k, v in c.baseline_where.items())
    return f"{c.layer} ({mine})", f"{c.baseline} ({theirs})"


def _floor_text(r: LayerRatio) -> str:
    return "no A/A floor" if math.isnan(r.floor) else f"floor {r.floor:.0%}"


def _rule(finding: Finding, est: Estimate) -> Judgement:
    c = finding.check
    r = est.ratio
    at = ", ".join(f"{k}={r.labels[k]}" for k in CONFIG_LABELS if r.labels.get(k))
    where = f" ({at})" if at else ""
    rule = ("added" if c.expect == "within" else "band" if c.band is not None else
            "equivalence" if c.expect == "same" else "direction")

    def made(verdict: Verdict, why: str) -> Judgement:
        return _ruled(Judgement(finding, verdict, why, r, floor_source=est.floor_source), rule)

    if math.isnan(r.ratio.value) or r.ratio.value <= 0:
        return made("not comparable", f"the ratio {c.layer}/{c.baseline} is undefined (a zero "
                    f"median of {c.baseline})")
    if not r.ratio.resolvable or r.contended:
        return made("not comparable", f"the run could not resolve this{where}: "
                    f"{unresolved_reason(r)}")
    low, high = widened(r)
    if rule == "added":
        assert c.added is not None
        scale = r.baseline_median
        unit = {"us": "µs"}.get(r.unit, r.unit)

        def added(x: float) -> float:
            return scale * (x - 1.0)

        return _banded(made, (added(r.ratio.value), added(low), added(high)), c.added,
                       lambda v: f"{v:+.3g} {unit}", f"added over {c.baseline}{where}",
                       _floor_text(r), ratios=False)
    if rule == "band":
        assert c.band is not None
        return _banded(made, (r.ratio.value, low, high), c.band, lambda v: f"x{v:.2f}",
                       "/".join(_sides(finding)) + where, _floor_text(r), ratios=True)
    if rule == "equivalence":
        return _equivalent(made, r, low, high, c.margin or FACTOR, where)
    return _directional(made, finding, r, low, high, where)


Made = Callable[[Verdict, str], Judgement]


def _banded(made: Made, point: tuple[float, float, float], band: tuple[float, float],
            show: Callable[[float], str], what: str, floor: str, ratios: bool) -> Judgement:
    """The band rule on (estimate, widened low, widened high) in the band's own space (of
    ratios, compared in log; else of differences): an estimate inside agrees only when the
    widened interval is no wider than the band, so that it could have fallen outside."""
    value, low, high = point
    lo_band, hi_band = band

    def width(a: float, b: float) -> float:
        return math.log(b / a) if ratios else b - a

    span = f"[{show(lo_band)}, {show(hi_band)}]"
    interval = f"[{show(low)}, {show(high)}] with the run's {floor}"
    if lo_band <= value <= hi_band:
        if width(low, high) > width(lo_band, hi_band):
            return made("not comparable", f"{what}: the estimate {show(value)} lies inside the "
                        f"study's band {span}, but its interval {interval} is wider than the "
                        "band: the run could not have placed it outside")
        return made("agrees", f"{what}: the estimate {show(value)} inside the study's band "
                    f"{span} (interval {interval})")
    if high < lo_band or low > hi_band:
        return made("contradicts", f"{what}: the estimate {show(value)} and its whole interval "
                    f"{interval} lie outside the study's band {span}")
    return made("not comparable", f"{what}: the estimate {show(value)} lies outside the "
                f"study's band {span} while its interval {interval} reaches into it: the run "
                "could not tell")


def _equivalent(made: Made, r: LayerRatio, low: float, high: float, margin: float,
                where: str) -> Judgement:
    inside = f"[x{1 / margin:.2f}, x{margin:.2f}]"
    interval = f"[{low:.2f}, {high:.2f}] (the interval with the run's {_floor_text(r)})"
    if low >= 1 / margin and high <= margin:
        return made("agrees", f"no difference{where}: x{r.ratio.value:.2f}, {interval} inside "
                    f"the finding's margin {inside}")
    if high < 1 / margin or low > margin:
        return made("contradicts", f"a difference{where}: x{r.ratio.value:.2f}, {interval} "
                    f"wholly outside the finding's margin {inside}")
    return made("not comparable", f"the run could not tell{where}: x{r.ratio.value:.2f}, "
                f"{interval} reaches both inside and outside the finding's margin {inside}")


def _directional(made: Made, finding: Finding, r: LayerRatio, low: float, high: float,
                 where: str) -> Judgement:
    c = finding.check
    lhs, rhs = _sides(finding)
    verdict = r.verdict(FACTOR)
    direction = "lower" if r.ratio.value < 1.0 else "higher"
    if verdict in ("better", "worse"):
        if direction == c.expect:
            return made("agrees", f"{c.expect} than {rhs}{where}, significantly and "
                        f"beyond the noise floor (x{r.ratio.value:.2f}, {_floor_text(r)})")
        return made("contradicts", f"{lhs} is {direction} than {rhs}{where}, "
                    f"significantly and beyond the noise floor (x{r.ratio.value:.2f}, "
                    f"{_floor_text(r)}); the study found {c.expect}")
    margin = c.margin or FACTOR
    if low >= 1 / margin and high <= margin:
        return made("contradicts", f"no difference{where}: x{r.ratio.value:.2f}, the interval "
                    f"with the run's {_floor_text(r)} [{low:.2f}, {high:.2f}] inside "
                    f"x{1 / margin:.2f}-x{margin:.2f}; the study found {c.expect}")
    return made("not comparable", f"the run could not resolve this difference{where}: "
                f"{unresolved_reason(r)}")
