"""An unpaired run (``pairing: off``, or sweep points without the baseline to pair with): a
lab per trial, every (point, layer) once a round in an order shuffled with the seed
(``design.plan_trials``), warm-up rounds unrecorded, then adaptive rounds for layers whose
figures still vary (``until_cv``, up to ``max_repeat``, within the budget)."""

from __future__ import annotations

import time
from collections.abc import Callable

from vnetbench.run.context import RunContext, converged, within_budget
from vnetbench.run.design import (
    plan_round,
    plan_trials,
)
from vnetbench.run.trial import (
    run_trial,
)
from vnetbench.scenario.sweep import ScenarioFile, SweepPoint


def run_unpaired(sf: ScenarioFile, layers_of: Callable[[SweepPoint], list[str]],
                  run: RunContext) -> None:
    """Every trial of ``sf`` in rounds (each layer once a round, seeded order), then adaptive
    rounds for configurations whose headline figures still vary, within the budget."""
    writer, outcome, controls, progress = run.writer, run.outcome, run.controls, run.progress
    collect, started = run.collect, run.started
    first = sf.points[0].scenario
    fixed = len(plan_trials(sf, layers_of))
    for rnd in range(first.warmup):
        for trial in plan_round(sf, layers_of, -1 - rnd, lambda _p, _l: True, 0):
            progress(f"[warmup {rnd + 1}/{first.warmup}] {trial.describe()}")
            run_trial(trial, writer, collect=False, keep=False, controls=controls)
    rnd = 0
    while True:
        def wanted(p: SweepPoint, layer: str, r: int = rnd) -> bool:
            s = p.scenario
            if r < s.repeat:
                return True
            return (s.until_cv is not None and r < s.max_repeat
                    and not converged(outcome.samples, p, layer, s.until_cv))

        trials = plan_round(sf, layers_of, rnd, wanted, outcome.trials_done)
        if not trials:
            break
        if rnd >= first.repeat and not within_budget(first, outcome, trials, started):
            progress(f"adaptive repetition stopped after round {rnd}: the next round "
                     f"would end after the {first.budget:g} s budget")
            break
        if rnd >= first.repeat:
            progress(f"adaptive round {rnd + 1}: {len(trials)} more trial(s) for the "
                     "configurations whose headline figures still vary")
        for trial in trials:
            writer.set_stage(f"trial {trial.index}: {trial.describe()}")
            t0 = time.monotonic()
            samples = run_trial(trial, writer, collect, controls=controls)
            writer.append_samples(samples)
            outcome.samples += samples
            outcome.trials_done += 1
            if any(s.metric == "trial_failed" for s in samples):
                outcome.trials_failed += 1
            elapsed = time.monotonic() - started
            total = max(fixed, outcome.trials_done + len(trials) - trials.index(trial) - 1)
            eta = elapsed / outcome.trials_done * (total - outcome.trials_done)
            progress(f"[{outcome.trials_done}/{total}] {trial.describe()}: "
                     f"{time.monotonic() - t0:.1f}s, ETA {eta:.0f}s")
        rnd += 1
