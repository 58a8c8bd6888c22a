"""A scenario's ``thresholds``: every layer's ratio to the baseline held to a limit, for CI.

    thresholds: {rr.rtt_p50_us: 1.5, stream.goodput_bps: 0.8}

``WORKLOAD.METRIC: LIMIT``, a ratio to the baseline layer (``host``): a *maximum* where lower
is better (latencies, CPU costs: at most x1.5 the baseline's round trip), a *minimum* where
higher is better (rates: at least x0.8 its goodput); ``results.stats.better_direction``
tells which. The rule, applied after the run (``judge_run``) to every layer but the baseline,
at every configuration the run measured (nodes, hosts, sweep axes) and every limit:

1. The ratio is the one the report's headline table gives at that configuration
   (``headline_table``: pair by pair in a paired design, latency percentiles from the
   merged histograms; the CPU costs derived as the report derives them).
2. A *breach* is a ratio past the limit in the metric's bad direction. Every breach fails
   the run (exit 1), one line each.
3. Each breach says how sure it is: *clear* when the ratio is past the limit by more than
   the run's A/A noise floor and its 95% interval lies wholly past the limit; otherwise
   *within the noise*: the run cannot tell it from a pass, it says so and why (the floor,
   the interval, a difference from the baseline itself not resolved) and still fails.
   Repeating more narrows the interval and the floor.
4. A ratio within its limit whose interval or noise floor reaches past it *passes*, with a
   note saying the margin is not resolved (``NOTE`` lines; they do not fail the run).
5. A layer measured on an emulated CPU (a TCG guest) is not judged (``NOTE``); a limit for
   which no layer has a ratio at all (nothing measured beside the baseline, a baseline of
   zeros) fails: a gate cannot pass by judging nothing.

What was judged is recorded in run.json under ``thresholds`` (``record_thresholds``) and
shown near the top of the report.
"""

from __future__ import annotations

import functools
import html
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vnetbench.results.histogram import HistogramRecord
from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario
from vnetbench.results.stats import LayerRatio, better_direction
from vnetbench.results.store import load_run, record_thresholds

BASELINE = "host"
RULE = ("a layer breaks a limit when its ratio to the baseline (as the report's headline "
        "table gives it, at each configuration) is past the limit in the metric's bad "
        "direction; every breach fails the run. A breach is clear when it is past the limit "
        "by more than the A/A noise floor and its 95% interval lies wholly past it, else it "
        "is within the noise (said, and still a failure). A ratio within its limit whose "
        "interval or noise floor reaches past it passes with a note.")


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class Judged:
    """One limit judged for one layer at one configuration."""

    key: str
    """``rr.rtt_p50_us``."""
    layer: str
    config: dict[str, str]
    limit: float
    direction: str
    """``lower`` (the limit is a maximum) or ``higher`` (a minimum)."""
    ratio: float
    low: float
    high: float
    floor: float
    verdict: str
    """The layer against the baseline itself (better, worse, same, not resolved, ...)."""
    outcome: str
    """``breach``, ``pass``, ``close`` (a pass by a margin the run does not resolve) or
    ``not judged``."""
    note: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome == "breach"

    def line(self) -> str:
        where = " ".join(f"{k}={v}" for k, v in self.config.items())
        if self.outcome == "not judged":
            return f"NOTE {self.key}: {self.layer} at {where}: not judged ({self.note})"
        bound = f"at most x{self.limit:g}" if self.direction == "lower" else \
            f"at least x{self.limit:g}"
        interval = (f" [{self.low:.3g}, {self.high:.3g}]" if math.isfinite(self.low)
                    else " (no interval)")
        head = f"{self.key}: {self.layer} x{self.ratio:.3g}{interval} at {where}"
        if self.outcome == "breach":
            side = "above" if self.direction == "lower" else "below"
            return f"FAIL {head} is {side} the limit ({bound} {BASELINE}): {self.note}"
        if self.outcome == "close":
            return f"NOTE {head} is within the limit ({bound}) by a margin not resolved: " \
                f"{self.note}"
        return f"ok   {head} is within the limit ({bound})"

    def to_dict(self) -> dict[str, object]:
        return {"key": self.key, "layer": self.layer, "config": dict(self.config),
                "limit": self.limit, "direction": self.direction,
                "ratio": _finite(self.ratio), "ci": [_finite(self.low), _finite(self.high)],
                "floor": _finite(self.floor), "verdict": self.verdict,
                "outcome": self.outcome, "note": self.note, "line": self.line()}


@dataclass
class ThresholdVerdict:
    """Every limit of a run judged (see the module docstring)."""

    limits: dict[str, float]
    judged: list[Judged] = field(default_factory=list)
    unjudged: dict[str, str] = field(default_factory=dict)
    """Limits no layer could be judged against, and why (each fails the run)."""

    @property
    def breaches(self) -> list[Judged]:
        return [j for j in self.judged if j.failed]

    @property
    def passed(self) -> bool:
        return not self.breaches and not self.unjudged

    def lines(self) -> list[str]:
        """One ``FAIL`` line per breach and per limit judged against nothing, then ``NOTE``
        lines (passes within the noise, layers not judged), then a summary line."""
        out = [j.line() for j in self.breaches]
        out += [f"FAIL {key}: {why}" for key, why in self.unjudged.items()]
        out += [j.line() for j in self.judged if j.outcome in ("close", "not judged")]
        within = sum(1 for j in self.judged if j.outcome in ("pass", "close"))
        clear = sum(1 for j in self.breaches if j.note.startswith("clear"))
        text = (f"thresholds {'passed' if self.passed else 'FAILED'}: {len(self.limits)} "
                f"limit(s), {len(self.judged)} layer ratio(s) judged: {len(self.breaches)} "
                f"breach(es) ({clear} clear), {within} within their limit")
        if self.unjudged:
            text += f", {len(self.unjudged)} limit(s) judged against nothing"
        return [*out, text]

    def to_dict(self) -> dict[str, object]:
        return {"passed": self.passed, "limits": dict(self.limits), "rule": RULE,
                "breaches": len(self.breaches), "unjudged": dict(self.unjudged),
                "lines": self.lines(), "judged": [j.to_dict() for j in self.judged]}


def _judge_one(key: str, limit: float, direction: str, layer: str, config: dict[str, str],
               ratio_of: LayerRatio, factor: float) -> Judged:
    value = ratio_of.ratio.value
    low, high = ratio_of.ratio.ci.low, ratio_of.ratio.ci.high
    floor = ratio_of.floor
    verdict = ratio_of.verdict(factor)
    judged = functools.partial(Judged, key=key, layer=layer, config=config, limit=limit,
                               direction=direction, ratio=value, low=low, high=high,
                               floor=floor, verdict=verdict)
    if verdict == "emulated":
        return judged(outcome="not judged",
                      note="emulated CPU: its ratio to native is not comparable")
    if not math.isfinite(value) or value <= 0:
        return judged(outcome="breach",
                      note="no ratio (the layer's or the baseline's values are zero or "
                           "missing): the limit cannot be shown to hold")
    margin = 1.0 + (floor if math.isfinite(floor) else 0.0)
    has_interval = math.isfinite(low) and math.isfinite(high)
    if direction == "lower":
        past = value > limit
        past_by_floor = value > limit * margin
        interval_past = has_interval and low > limit
        reaches = value * margin > limit or (has_interval and high > limit)
    else:
        past = value < limit
        past_by_floor = value < limit / margin
        interval_past = has_interval and high < limit
        reaches = value / margin < limit or (has_interval and low < limit)
    floor_text = f"{floor:.1%}" if math.isfinite(floor) else "none measured"
    if past:
        # clear: past by more than the floor, and the interval wholly past (without an
        # interval, a measured floor must say it)
        if past_by_floor and (interval_past if has_interval else math.isfinite(floor)):
            parts = ([f"its 95% interval [{low:.3g}, {high:.3g}] lies wholly past the limit"]
                     if has_interval else [])
            parts.append(f"past it by more than the noise floor ({floor:.1%})"
                         if math.isfinite(floor) else "the run measured no noise floor")
            return judged(outcome="breach", note="clear: " + ", ".join(parts))
        why = []
        if not past_by_floor:
            why.append(f"past it by less than the noise floor ({floor_text})")
        if not has_interval and not math.isfinite(floor):
            why.append("no interval and no noise floor to tell")
        if has_interval and not interval_past:
            why.append(f"its 95% interval [{low:.3g}, {high:.3g}] reaches back over it")
        if verdict in ("not resolved", "same"):
            why.append(f"its difference from {BASELINE} itself is {verdict}")
        return judged(outcome="breach",
                      note="within the noise: " + "; ".join(why) + ". The run cannot tell "
                      "this from a pass; counted as a breach (repeat more to settle it)")
    if reaches:
        lower = direction == "lower"
        floor_reaches = value * margin > limit if lower else value / margin < limit
        interval_reaches = has_interval and (high > limit if lower else low < limit)
        why = [f"the noise floor ({floor_text}) reaches past the limit"] if floor_reaches else []
        if interval_reaches:
            why.append(f"its 95% interval [{low:.3g}, {high:.3g}] reaches past it")
        return judged(outcome="close", note="; ".join(why))
    return judged(outcome="pass")


def judge(samples: Sequence[Sample], histograms: Sequence[HistogramRecord],
          limits: Mapping[str, float], *, scenario: RecordedScenario | None = None,
          environment: Mapping[str, object] | None = None, factor: float = 1.05
          ) -> ThresholdVerdict:
    """Every limit against every layer at every configuration of the samples."""
    from vnetbench.report.tables import (
        Column,
        all_configs,
        emulated_layers,
        headline_pool,
        headline_table,
    )
    from vnetbench.results.derive import derive_cpu_costs

    result = ThresholdVerdict(dict(limits))
    if not limits:
        return result
    pool = list(samples)
    pool += derive_cpu_costs(pool, scenario=scenario)
    metrics = tuple(sorted({key.partition(".")[2] for key in limits}))
    emulated = emulated_layers(environment or {})
    chosen = headline_pool(pool, metrics)
    found: dict[str, int] = dict.fromkeys(limits, 0)
    for config in all_configs(chosen, metrics):
        table = headline_table(chosen, baseline=BASELINE, factor=factor, metrics=metrics,
                               config=config, histograms=histograms, emulated=emulated)
        if table is None:
            continue
        for key, limit in limits.items():
            kind, _, metric = key.partition(".")
            direction = better_direction(metric) or "lower"
            column = Column(kind, metric)
            for layer in table.layers:
                cell = table.cells.get((layer, column))
                if layer == BASELINE or cell is None or cell.ratio is None:
                    continue
                found[key] += 1
                result.judged.append(_judge_one(key, limit, direction, layer,
                                                dict(table.config), cell.ratio, factor))
    for key, count in found.items():
        if not count:
            kind, _, metric = key.partition(".")
            result.unjudged[key] = (f"no layer has a {metric} of {kind} beside {BASELINE}'s in "
                                    "this run (not measured, or every trial of it failed): "
                                    "the limit was judged against nothing")
    return result


def judge_run(run_dir: str | os.PathLike[str]) -> ThresholdVerdict:
    """Judge the run's scenario's ``thresholds`` and record the verdict in its run.json."""
    run = load_run(Path(run_dir))
    recorded = run.meta.recorded
    flat = _flat(recorded.thresholds)
    verdict = judge(run.samples, run.histograms, flat, scenario=recorded,
                    environment=run.meta.environment)
    record_thresholds(run_dir, verdict.to_dict())
    return verdict


def _flat(limits: Mapping[str, Any]) -> dict[str, float]:
    """The scenario's thresholds as written (nested or dotted) as ``{rr.rtt_p50_us: 1.5}``."""
    out: dict[str, float] = {}
    for key, value in limits.items():
        if isinstance(value, Mapping):
            out.update({f"{key}.{metric}": float(v) for metric, v in value.items()})
        else:
            out[str(key)] = float(value)
    return out


def thresholds_html(recorded: Mapping[str, Any]) -> str:
    """The report's section for a run's recorded verdict (run.json ``thresholds``)."""
    lines = [str(line) for line in recorded.get("lines", [])]
    passed = bool(recorded.get("passed"))
    items = "".join(
        f'<li class="{"fail" if line.startswith("FAIL") else "note"}">{html.escape(line)}</li>'
        for line in lines[:-1])
    summary = html.escape(lines[-1]) if lines else ""
    return (f'<section id="thresholds"><h2>Thresholds</h2>'
            f'<p class="{"ok" if passed else "why"}"><strong>{summary}</strong></p>'
            + (f"<ul>{items}</ul>" if items else "")
            + f'<p class="lead">Rule: {html.escape(str(recorded.get("rule", RULE)))}</p>'
            "</section>")
