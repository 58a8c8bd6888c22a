"""A paired run (``pairing: on``): each sweep point's sessions, its labs alive together and
every workload measured across them in alternation (``sessions``), then its paired trial
blocks (``design.plan_blocks``: a lab per trial, each layer's next to a baseline trial),
each design as ``design.paired_designs`` decided it."""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable

from vnetbench.backends.lab import Lab
from vnetbench.results.histogram import HistogramRecord
from vnetbench.results.model import Sample
from vnetbench.results.warning_model import EvidenceWarning, WarningKind
from vnetbench.run.context import RunContext, converged, within_budget
from vnetbench.run.design import (
    PointDesign,
    paired_designs,
    plan_blocks,
)
from vnetbench.run.sessions import PointSession, SessionOutcome
from vnetbench.run.startup import resume_gc
from vnetbench.run.trial import (
    effective_placement,
    open_trial_lab,
    record_lab,
    run_trial,
    skip_warning,
)
from vnetbench.run.unpaired import run_unpaired
from vnetbench.scenario.model import BASELINE_LAYER
from vnetbench.scenario.sweep import ScenarioFile, SweepPoint


def run_paired(sf: ScenarioFile, layers_of: Callable[[SweepPoint], list[str]],
                run: RunContext) -> None:
    """Each sweep point in the paired design (``paired_designs``): its interleavable
    workloads in one interleaved session (``sessions``), the others in paired trial blocks
    (``plan_blocks``); points without the baseline layer unpaired."""
    designs = paired_designs(sf, layers_of)
    run.writer.set_environment("pairing", [d.to_dict() for d in designs])
    total = sum(d.expected_seconds() for d in designs)
    for d in designs:
        run.progress(f"plan: {d.describe()}")
    run.progress(f"plan: about {total:.0f} s of measurement, and the labs' set-up")
    unpaired: list[SweepPoint] = []
    for i, d in enumerate(designs):
        if any(w.design == "unpaired" for w in d.workloads):
            unpaired.append(d.point)
            continue
        later = sum(x.expected_seconds() for x in designs[i + 1:])
        session = d.interleaved()
        for g, group in enumerate(d.groups if session else ()):
            def reserve(j: int, d: PointDesign = d, session: tuple[int, ...] = session,
                        g: int = g, later: float = later) -> float:
                """Fixed measuring time still to come after the ``j``-th workload of the
                point's ``g``-th session."""
                share = d.group_paths(g) / d.paths
                rest = share * sum(d.session_seconds(k) for k in session[j + 1:])
                after = sum(d.group_paths(h) for h in range(g + 1, len(d.groups))) / d.paths
                rest += after * sum(d.session_seconds(k) for k in session)
                blocks = d.expected_seconds() - sum(d.session_seconds(k) for k in session)
                return rest + blocks + later

            _run_session(d.point, list(group), session, run, d.rotating(), reserve)
        if d.blocked():
            _run_blocks(d.point, list(d.layers), d.blocked(), run)
    if unpaired:
        run_unpaired(dataclasses.replace(sf, points=tuple(unpaired)), layers_of, run)


def _run_session(point: SweepPoint, layers: list[str], workloads: tuple[int, ...],
                 run: RunContext, rotating: frozenset[int] = frozenset(),
                 reserve: Callable[[int], float] = lambda _j: 0.0) -> None:
    """The interleaved session of ``point``: its labs built once (``pairing.builds`` times,
    one after another, each build measuring its share of the rounds), each workload measured
    across them in alternation; every path's failure recorded as a failed trial."""
    s = point.scenario
    index = run.outcome.trials_done
    every = s.workload_options()
    problems: list[str] = []
    raw_dir = run.writer.raw_dir / f"trial-{index:04d}"
    raw_dir.mkdir(parents=True, exist_ok=True)
    placement, placement_note = effective_placement(s)
    recorded: set[str] = set()
    built: list[str] = []
    counted: list[str] = []

    builds = s.pairing.builds
    build = 0

    def on_lab(name: str, lab: Lab) -> None:
        built.append(name)
        resume_gc()
        run.controls.note_placement(s.platform.placement, lab.placement.describe(),
                                    placement_note)
        layer = lab.layer.name
        which = f"-build{build + 1}" if builds > 1 else ""
        facts = record_lab(lab, raw_dir, f"lab-{name.replace('/', '-')}{which}.json")
        if layer not in recorded:
            run.writer.add_lab_facts(layer, facts)
            recorded.add(layer)

    if run.controls.quiet is not None:
        run.controls.quiet.wait(index)
    session = PointSession(
        point, layers, [every[k] for k in workloads], index=index,
        rotating=frozenset(j for j, k in enumerate(workloads) if k in rotating),
        open_lab=lambda layer, k: open_trial_lab(s, layer, s.seed + index + k, problems, placement),
        progress=run.progress,
        idle=lambda: run.controls.idle_for(s.platform.idle_states),
        collect=run.collect,
        within_budget=lambda j, seconds: s.budget is None or (
            time.monotonic() - run.started + seconds + reserve(j) <= s.budget),
        realtime=run.controls.note_realtime if run.controls.realtime else None,
        capacities=run.capacities)
    def record(samples: list[Sample], histograms: list[HistogramRecord]) -> None:
        run.writer.append_samples(samples)
        run.writer.append_histograms(histograms)
        run.outcome.samples += samples
        if samples and not counted:  # every lab of the session measured: its "trials"
            counted.extend(built)
            run.outcome.trials_done += len(built)

    for build in range(builds):
        built.clear()
        counted.clear()
        run.writer.set_stage(f"session {index}: {session.where}"
                             + (f", build {build + 1} of {builds}" if builds > 1 else ""))
        _session_done(session, session.run(raw_dir, on_lab, record, build), problems, run,
                      record)
        problems.clear()


def _session_done(session: PointSession, result: SessionOutcome, problems: list[str],
                  run: RunContext, record: Callable[[list[Sample], list[HistogramRecord]], None]
                  ) -> None:
    """Record one build of a session's failures, skips and teardown problems."""
    labels = session.base_labels()
    failed = [Sample("trial_failed", 1.0, "count", {**labels, "layer": layer, "stage": "session"})
              for layer, _ in result.failed]
    for layer, why in result.failed:
        run.writer.add_warning(EvidenceWarning(
            WarningKind.OTHER, f"{layer} at {session.where}: {why}",
            "see raw/ for the tools' output", {**labels, "layer": layer}))
        print(f"vnetbench: {layer} at {session.where}: {why}", file=sys.stderr)
    for layer, why in result.skipped:
        skip_warning(run.writer, why.split(":", 1)[0], layer, why.split(": ", 1)[-1],
                      {**labels, "layer": layer})
    for problem in problems:
        run.writer.add_warning(EvidenceWarning(WarningKind.OTHER, f"teardown: {problem}",
                                               "run `vnetbench clean`", labels))
    record(failed, [])
    run.outcome.trials_failed += len({layer for layer, _ in result.failed})


def _run_blocks(point: SweepPoint, layers: list[str], workloads: tuple[int, ...],
                run: RunContext) -> None:
    """Paired trial blocks of ``point`` (``plan_blocks``): warmup, ``repeat`` rounds, then
    adaptive rounds for layers whose figures still vary, within the budget."""
    s = point.scenario
    for rnd in range(s.warmup):
        for trial in plan_blocks(point, layers, -1 - rnd, 0, workloads):
            run.progress(f"[warmup {rnd + 1}/{s.warmup}] {trial.describe()}")
            run_trial(trial, run.writer, collect=False, keep=False, controls=run.controls)
    planned = len(plan_blocks(point, layers, 0, 0, workloads)) * s.repeat
    done = 0
    rnd = 0
    while True:
        wanted = layers
        if rnd >= s.repeat:
            wanted = [layer for layer in layers if layer == BASELINE_LAYER or (
                s.until_cv is not None and rnd < s.max_repeat
                and not converged(run.outcome.samples, point, layer, s.until_cv))]
            if len(wanted) < 2:
                break
        trials = plan_blocks(point, wanted, rnd, run.outcome.trials_done, workloads)
        if rnd >= s.repeat:
            if not within_budget(s, run.outcome, trials, run.started):
                run.progress(f"adaptive repetition stopped after round {rnd}: the next round "
                             f"would end after the {s.budget:g} s budget")
                break
            planned += len(trials)
            run.progress(f"adaptive round {rnd + 1}: {len(trials)} more trial(s)")
        for trial in trials:
            run.writer.set_stage(f"trial {trial.index}: {trial.describe()}")
            t0 = time.monotonic()
            samples = run_trial(trial, run.writer, run.collect, controls=run.controls)
            run.writer.append_samples(samples)
            run.outcome.samples += samples
            run.outcome.trials_done += 1
            done += 1
            if any(x.metric == "trial_failed" for x in samples):
                run.outcome.trials_failed += 1
            run.progress(f"[{done}/{planned}] {trial.describe()}: "
                         f"{time.monotonic() - t0:.1f}s")
        rnd += 1
