"""What every part of a run writes to and reports through (``RunContext``), what it returns
(``RunOutcome``), and the two rules of adaptive repetition both designs share: a layer's
figures have converged, and another round still fits the budget."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from vnetbench.results.metrics import QUALITY_METRICS
from vnetbench.results.model import Sample
from vnetbench.results.store import RunStatus, RunWriter
from vnetbench.run.capacity import Capacities
from vnetbench.run.design import Trial
from vnetbench.run.platform import PlatformControls
from vnetbench.scenario.model import Scenario
from vnetbench.scenario.sweep import SweepPoint

Progress = Callable[[str], None]


@dataclass
class RunOutcome:
    run_dir: Path
    status: RunStatus
    trials_done: int
    trials_failed: int
    samples: list[Sample] = field(default_factory=list)


@dataclass
class RunContext:
    """What every part of a run writes to and reports through."""

    writer: RunWriter
    outcome: RunOutcome
    controls: PlatformControls
    progress: Progress
    collect: bool
    started: float
    capacities: Capacities = field(default_factory=Capacities)
    """The baseline's capacities found so far (a load offered as a share of one)."""


def converged(samples: list[Sample], point: SweepPoint, layer: str, target: float) -> bool:
    """True when every main figure of (point, layer) varies less than ``target`` (CV), each
    under its own conditions (every Hadoop benchmark, every media stream on its own)."""
    from vnetbench.results.stats import coefficient_of_variation, condition_keys, group_samples

    mine = [s for s in samples if s.metric in QUALITY_METRICS and s.labels.get("layer") == layer
            and all(s.labels.get(k) == v for k, v in point.axes.items())]
    if not mine:
        return True
    groups = group_samples(mine, condition_keys(mine)).values()
    return all(len(g) >= 2 and coefficient_of_variation([s.value for s in g]) < target
               for g in groups)


def within_budget(s: Scenario, outcome: RunOutcome, trials: list[Trial],
                   started: float) -> bool:
    """Whether an adaptive round of ``trials`` would end within the scenario's budget."""
    if s.budget is None or not outcome.trials_done:
        return True
    elapsed = time.monotonic() - started
    per_trial = elapsed / outcome.trials_done
    return elapsed + per_trial * len(trials) <= s.budget
