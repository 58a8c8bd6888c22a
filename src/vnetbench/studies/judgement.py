"""A finding judged against a run: the verdict, why, and what the run measured (a ratio
to the baseline with its interval, or a trend along a sweep) as the "ours" column, with the
smallest ratio the run could have resolved.

Verdicts: ``agrees``, ``contradicts``, ``not comparable`` and ``set by the lab`` (the lab's
own configuration held both sides at one value: shown, never counted as agreement)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from vnetbench.results.stats import LayerRatio
from vnetbench.studies.model import Finding

RULES: dict[str, str] = {
    "band": "the study's band of ratios decides: agrees with the estimate inside it, "
            "contradicts with the interval (widened by the run's floor) wholly outside it",
    "equivalence": "no difference: agrees with the interval (widened by the floor) inside "
                   "the finding's margin, contradicts with it wholly outside",
    "direction": "a difference called (beyond 5% and the floor, significant) in the study's "
                 "direction agrees, in the other contradicts; no difference (the interval "
                 "inside the finding's margin) contradicts",
    "added": "what the layer adds to the baseline (in the metric's unit) against the "
             "study's band or resolution, as the band rule",
    "reaches": "the layer's level against the study's line rate or pace: agrees with its "
               "interval at or above the share asked, contradicts with it wholly below",
    "detector": "the run's detector on the layer's trials of the workload",
    "trend": "the curve along the sweep (rank correlation, shape, knee)",
    "rises-with": "rank correlation of the layer's cost with a property across values",
    "lab": "the lab's own setting or construction decides (never agreement)",
    "capability": "the finding needs what vnetbench or this machine lacks",
    "samples": "the run has no (or several) configurations to compare",
    "untestable": "the published claim cannot be tested here",
}
"""The rules a verdict names (``Judgement.rule``)."""

Verdict = Literal["agrees", "contradicts", "not comparable", "set by the lab"]
VERDICTS: tuple[Verdict, ...] = ("agrees", "contradicts", "not comparable", "set by the lab")

FACTOR = 1.05
"""A difference smaller than 5% is never called (the rule of the report's tables)."""

LATENCY_UNITS = {"us": "µs", "µs": "µs", "ms": "ms"}


@dataclass(frozen=True)
class Judgement:
    """One finding judged against one run."""

    finding: Finding
    verdict: Verdict
    why: str
    ratio: LayerRatio | None = None
    trend: str = ""
    """What a check along a sweep measured (``trend.judge_trend``), for the "ours" column."""
    cause: str = ""
    """For a contradiction: the pack's explanation and whether the run's measurement supports
    it (``causes.explain``)."""
    rule: str = ""
    """The rule that decided the verdict (``RULES``)."""
    could_fail: bool = False
    """The run could have produced the opposite verdict by the same rule: agreement or
    contradiction decided by data the run resolved, not by the lab's construction, a missing
    capability or too little resolution."""
    floor_source: str = ""
    """Whose A/A control gave the noise floor (the baseline's own, the host's for another
    baseline, none)."""

    @property
    def ours(self) -> str:
        """``x0.62 [0.58, 0.66]`` (ratio layer/baseline and its interval; for a latency the
        added time, ``+5.2 µs``), the trend along a sweep, or a dash."""
        if self.trend:
            return self.trend
        if self.ratio is None or math.isnan(self.ratio.ratio.value):
            return "-"
        r = self.ratio.ratio
        interval = "" if math.isnan(r.ci.low) else f" [{r.ci.low:.2f}, {r.ci.high:.2f}]"
        unit = LATENCY_UNITS.get(self.ratio.unit)
        added = f", {self.ratio.added:+.3g} {unit}" if unit else ""
        return f"x{r.value:.2f}{interval}{added}"

    @property
    def resolvable(self) -> float:
        """The smallest ratio (above 1; its inverse below) the run could call for this
        finding: 5%, or the baseline's A/A noise floor when larger; nan without a ratio."""
        if self.ratio is None:
            return math.nan
        floor = self.ratio.floor
        return max(FACTOR, 1.0 + (0.0 if math.isnan(floor) else floor))

    @property
    def resolves(self) -> str:
        """``x1.42`` (what ``resolvable`` says, with the A/A floor it comes from), or ``-``."""
        value = self.resolvable
        if math.isnan(value):
            return "-"
        r = self.ratio
        assert r is not None
        whose = f" ({self.floor_source})" if self.floor_source else ""
        source = ("5% rule, no A/A control" if math.isnan(r.floor) else
                  f"A/A floor {r.floor:.0%}{whose}" if 1.0 + r.floor > FACTOR else
                  f"5% rule; A/A floor {r.floor:.0%}{whose}")
        return f"beyond x{1 / value:.2f} / x{value:.2f} ({source})"

    @property
    def published(self) -> str:
        """The published numbers in one line (``direct 68925 tps; overlay 33115 tps``)."""
        nums = [f"{p.what} {p.value:g}{(' ' + p.unit) if p.unit else ''}"
                for p in self.finding.published]
        return "; ".join(nums) if nums else (f'"{self.finding.quote}"' if self.finding.quote
                                             else "(stated in the text)")
