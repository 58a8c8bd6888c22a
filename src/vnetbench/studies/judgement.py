"""A finding judged against a run: the verdict, why, and what the run measured (a ratio
to the baseline with its interval, or a trend along a sweep) as the "ours" column."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from vnetbench.results.stats import LayerRatio
from vnetbench.studies.model import Finding

Verdict = Literal["agrees", "contradicts", "not comparable"]


@dataclass(frozen=True)
class Judgement:
    """One finding judged against one run."""

    finding: Finding
    verdict: Verdict
    why: str
    ratio: LayerRatio | None = None
    trend: str = ""
    """What a check along a sweep measured (``verdict.judge_trend``), for the "ours" column."""

    @property
    def ours(self) -> str:
        """``x0.62 [0.58, 0.66]`` (ratio layer/baseline and its interval), the trend along a
        sweep, or a dash."""
        if self.trend:
            return self.trend
        if self.ratio is None or math.isnan(self.ratio.ratio.value):
            return "-"
        r = self.ratio.ratio
        interval = "" if math.isnan(r.ci.low) else f" [{r.ci.low:.2f}, {r.ci.high:.2f}]"
        return f"x{r.value:.2f}{interval}"

    @property
    def published(self) -> str:
        """The published numbers in one line (``direct 68925 tps; overlay 33115 tps``)."""
        nums = [f"{p.what} {p.value:g}{(' ' + p.unit) if p.unit else ''}"
                for p in self.finding.published]
        return "; ".join(nums) if nums else (f'"{self.finding.quote}"' if self.finding.quote
                                             else "(stated in the text)")
