"""Running a scenario: trials in interleaved seeded order, each on a freshly built lab.

A trial is (sweep point, layer, repetition). Within each repetition round every (point,
layer) pair runs once, in an order shuffled with the scenario's seed, so slow drift of the
machine spreads over all layers instead of masquerading as one layer's cost. Each trial:
build the lab, snapshot the collectors, run the workloads (each: prepare, run, cleanup),
snapshot again, tear down, append the trial's samples to ``samples.jsonl`` (flushed), and
report progress with an ETA. A failing trial is recorded (warning + ``trial_failed``
sample, with the stage that failed) and the run goes on; Ctrl-C or SIGTERM stops after
tearing down the current lab and marks the run incomplete, keeping every finished trial.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vnetbench.errors import ScenarioError, UnsupportedError, VnetbenchError
from vnetbench.lab import Lab, Terminated, check_layer_supported, open_lab
from vnetbench.layers.registry import get_layer
from vnetbench.results.model import Sample
from vnetbench.results.store import RunStatus, RunWriter
from vnetbench.scenario import ScenarioFile, SweepPoint
from vnetbench.sysinfo import fingerprint
from vnetbench.trial_evidence import TrialEvidence
from vnetbench.workloads.registry import create_workload

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Trial:
    index: int
    point: SweepPoint
    layer: str
    repetition: int

    def labels(self) -> dict[str, str]:
        s = self.point.scenario
        return {"layer": self.layer, "nodes": str(s.nodes), "hosts": str(s.hosts),
                "repetition": str(self.repetition), "trial": str(self.index), **self.point.axes}

    def describe(self) -> str:
        s = self.point.scenario
        shown = {"hosts": str(s.hosts), "nodes": str(s.nodes), **self.point.axes}
        axes = " ".join(f"{k}={v}" for k, v in shown.items())
        return f"{self.layer} {axes} rep {self.repetition}"


def plan_trials(sf: ScenarioFile, layers_of: Callable[[SweepPoint], list[str]]) -> list[Trial]:
    """Every trial of the scenario, interleaved: each round shuffled with the seed."""
    rounds = max(p.scenario.repeat for p in sf.points)
    seed = sf.points[0].scenario.seed
    trials: list[Trial] = []
    for rep in range(rounds):
        pairs = [(p, layer) for p in sf.points for layer in layers_of(p)
                 if rep < p.scenario.repeat]
        random.Random(seed * 1_000_003 + rep).shuffle(pairs)
        for point, layer in pairs:
            trials.append(Trial(len(trials), point, layer, rep))
    return trials


@dataclass
class RunOutcome:
    run_dir: Path
    status: RunStatus
    trials_done: int
    trials_failed: int
    samples: list[Sample] = field(default_factory=list)


def stderr_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def supported_layers(sf: ScenarioFile, progress: Progress
                     ) -> tuple[Callable[[SweepPoint], list[str]], list[dict[str, Any]]]:
    """Layers per point, and warnings for skipped ones.

    An unsupported layer is a ScenarioError naming the file, unless the scenario says
    ``skip_unsupported``; then it is skipped with a warning.
    """
    verdict: dict[str, str | None] = {}
    warnings: list[dict[str, Any]] = []
    for point in sf.points:
        for name in point.scenario.layers:
            if name in verdict:
                continue
            try:
                check_layer_supported(get_layer(name))
                verdict[name] = None
            except UnsupportedError as exc:
                if not point.scenario.skip_unsupported:
                    raise ScenarioError(f"{sf.path}: layers: {exc}") from None
                verdict[name] = str(exc)
                progress(f"skipping layer {name}: {exc}")
                warnings.append({"kind": "other", "message": f"layer {name} skipped",
                                 "advice": str(exc), "labels": {"layer": name}})
    return (lambda p: [name for name in p.scenario.layers if verdict.get(name) is None]), warnings


def run_scenario(sf: ScenarioFile, out_dir: Path, progress: Progress = stderr_progress,
                 collect: bool = True) -> RunOutcome:
    layers_of, skipped = supported_layers(sf, progress)
    writer = RunWriter.create(out_dir, {"file": sf.path, **sf.raw}, fingerprint())
    for warning in skipped:
        writer.add_warning(warning)
    trials = plan_trials(sf, layers_of)
    outcome = RunOutcome(out_dir, RunStatus.RUNNING, 0, 0)
    started = time.monotonic()
    status = RunStatus.COMPLETE
    try:
        for trial in trials:
            writer.set_stage(f"trial {trial.index}: {trial.describe()}")
            t0 = time.monotonic()
            samples = run_trial(trial, writer, collect)
            writer.append_samples(samples)
            outcome.samples += samples
            outcome.trials_done += 1
            if any(s.metric == "trial_failed" for s in samples):
                outcome.trials_failed += 1
            elapsed = time.monotonic() - started
            eta = elapsed / outcome.trials_done * (len(trials) - outcome.trials_done)
            progress(f"[{outcome.trials_done}/{len(trials)}] {trial.describe()}: "
                     f"{time.monotonic() - t0:.1f}s, ETA {eta:.0f}s")
    except (KeyboardInterrupt, Terminated):
        status = RunStatus.INCOMPLETE
        progress(f"interrupted: kept {outcome.trials_done} finished trial(s) in {out_dir}")
        writer.close(status)
        outcome.status = status
        raise
    if outcome.trials_failed:
        status = RunStatus.FAILED
    writer.close(status, failing_stage="trials" if outcome.trials_failed else None)
    outcome.status = status
    return outcome


def run_trial(trial: Trial, writer: RunWriter, collect: bool) -> list[Sample]:
    """Build, measure, tear down; failures become a ``trial_failed`` sample + warning."""
    s = trial.point.scenario
    labels = trial.labels()
    samples: list[Sample] = []
    stage = "build"
    raw_dir = writer.raw_dir / f"trial-{trial.index:04d}"
    raw_dir.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    try:
        with open_lab(trial.layer, s.hosts, s.nodes, link=s.link.shape(),
                      resources=s.resources.resources(),
                      layer_options=s.layer_options.get(trial.layer, {}),
                      seed=s.seed + trial.index, on_teardown_problem=problems.append) as lab:
            samples.append(Sample("lab_build_s", lab.build_seconds, "s", dict(labels)))
            _record_lab(lab, raw_dir)
            if s.busy:
                for node in lab.nodes:
                    node.start_busy(s.busy_duty)
            for kind, options in s.workload_options():
                stage = f"workload {kind}"
                wl_labels = {**labels, "workload": kind}
                evidence = TrialEvidence(lab) if collect else None
                if evidence:
                    evidence.before()
                samples += _run_workload(lab, kind, options, raw_dir, wl_labels)
                if evidence:
                    samples += evidence.after(wl_labels)
            stage = "teardown"
    except (KeyboardInterrupt, Terminated):
        raise
    except VnetbenchError as exc:
        samples.append(Sample("trial_failed", 1.0, "count", {**labels, "stage": stage}))
        writer.add_warning({"kind": "other", "message": f"trial {trial.index} "
                            f"({trial.describe()}) failed at {stage}: {exc}",
                            "advice": "see raw/ for the tools' output", "labels": labels})
        print(f"vnetbench: trial {trial.index} failed at {stage}: {exc}", file=sys.stderr)
    for problem in problems:
        writer.add_warning({"kind": "other", "message": f"teardown: {problem}",
                            "advice": "run `vnetbench clean`", "labels": labels})
    return samples


def _run_workload(lab: Lab, kind: str, options: Any, raw_dir: Path,
                  labels: dict[str, str]) -> list[Sample]:
    workload = create_workload(kind, options)
    workload.prepare(lab)
    try:
        return [sample.with_labels(**labels) for sample in workload.run(lab, raw_dir)]
    finally:
        workload.cleanup(lab)


def _record_lab(lab: Lab, raw_dir: Path) -> None:
    import json

    info = {"run_id": lab.run_id, "layer": lab.layer.name, "sysctls": lab.sysctls,
            "interfaces": lab.interfaces(), "build_seconds": lab.build_seconds,
            "nodes": [{"name": n.name, "netns": n.netns, "ip": n.ip, "host": n.host}
                      for n in lab.nodes]}
    (raw_dir / "lab.json").write_text(json.dumps(info, indent=2))
