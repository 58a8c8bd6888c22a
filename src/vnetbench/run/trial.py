"""One trial: build its lab, measure its workloads, tear the lab down (``run_trial``), and
what the runner's sessions share with it: the lab of a layer (``open_trial_lab``), the
placement every lab of a scenario uses (``effective_placement``), the lab's recorded facts
and the warnings a trial leaves (a skipped workload, CPU used outside the lab).

A failure becomes a ``trial_failed`` sample and a warning naming the stage that failed
(build, a workload, teardown); the run goes on. Ctrl-C or SIGTERM tears the lab down and
propagates.
"""

from __future__ import annotations

import contextlib
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vnetbench.backends.lab import Lab, open_lab
from vnetbench.errors import VnetbenchError, WorkloadSkipped
from vnetbench.lab.placement import PlacementMode
from vnetbench.results.histogram import HistogramRecord
from vnetbench.results.model import Sample
from vnetbench.results.store import RunWriter
from vnetbench.results.warning_model import EvidenceWarning, WarningKind
from vnetbench.run.design import (
    Trial,
)
from vnetbench.run.platform import PlatformControls
from vnetbench.run.startup import resume_gc
from vnetbench.scenario.model import Scenario
from vnetbench.scenario.specs import lab_spec
from vnetbench.signals import Terminated
from vnetbench.workloads.labelled import labelled_run
from vnetbench.workloads.registry import create_workload

if TYPE_CHECKING:
    from vnetbench.run.evidence import TrialEvidence

def effective_placement(s: Scenario) -> tuple[PlacementMode, str]:
    """The placement a trial of ``s`` uses, and why it differs from the scenario's, if it does.

    ``resources.cpuset`` decides where it is set; applications run unpinned unless the
    scenario sets ``platform.placement`` itself."""
    if s.resources.cpuset is not None:
        return "off", "resources.cpuset decides"
    # applications (``WorkloadOptions.many_threaded``) would be capped at one core a node
    threaded = {kind for kind, opts in s.workload_options() if type(opts).many_threaded}
    if threaded and "placement" not in s.platform.model_fields_set:
        return "off", (f"{', '.join(sorted(threaded))} run unpinned (set "
                       "platform.placement to pin their nodes)")
    return s.platform.placement, ""


def run_trial(trial: Trial, writer: RunWriter, collect: bool, keep: bool = True,
              controls: PlatformControls | None = None) -> list[Sample]:
    """Build, measure, tear down; failures become a ``trial_failed`` sample + warning."""
    s = trial.point.scenario
    labels = trial.labels()
    samples: list[Sample] = []
    histograms: list[HistogramRecord] = []
    stage = "build"
    raw_dir = writer.raw_dir / (f"trial-{trial.index:04d}" if keep else "warmup")
    raw_dir.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    if controls is not None and controls.quiet is not None:
        controls.quiet.wait(trial.index, record=keep)
    placement, placement_note = effective_placement(s)
    try:
        with open_trial_lab(s, trial.layer, s.seed + trial.index, problems, placement) as lab:
            resume_gc()  # start-up is over (the command paused it: ``startup``)
            if controls is not None and keep:
                controls.note_placement(s.platform.placement, lab.placement.describe(),
                                        placement_note)
            samples.append(Sample("lab_build_s", lab.build_seconds, "s", dict(labels)))
            if s.workloads:  # facts explain measurements; a build-only run skips them
                facts = record_lab(lab, raw_dir)
                if keep:
                    writer.add_lab_facts(trial.layer, facts)
            if s.busy:
                for node in lab.nodes:
                    node.start_busy(s.busy_duty)
            for kind, options in trial.workload_options():
                stage = f"workload {kind}"
                wl_labels = {**labels, "workload": kind, **options.labels()}
                evidence = _evidence(lab) if collect else None
                if evidence:
                    evidence.before()
                t0 = time.monotonic()
                try:
                    with (controls.idle_for(s.platform.idle_states) if controls is not None
                          else contextlib.nullcontext()):
                        got, hists = _run_workload(lab, kind, options, raw_dir, wl_labels)
                except WorkloadSkipped as skipped:
                    skip_warning(writer, kind, trial.layer, str(skipped), labels)
                    continue
                samples += got
                histograms += hists
                if evidence:
                    collected = evidence.after(wl_labels)
                    samples += collected
                    _external_cpu_warning(writer, collected, time.monotonic() - t0)
            if s.workloads:
                lab.backend.save_logs(raw_dir)
            stage = "teardown"
            if controls is not None and keep:
                controls.note_misses(lab.placement_misses)
    except (KeyboardInterrupt, Terminated) as stop:
        if stage == "teardown" and keep:  # measured in full, stopped in its teardown: keep it
            writer.append_samples(samples)
            writer.append_histograms(histograms)
            stop.kept_trial = True  # type: ignore[union-attr]
        raise
    except (VnetbenchError, OSError) as exc:  # OSError: a workload's file or program
        samples.append(Sample("trial_failed", 1.0, "count", {**labels, "stage": stage}))
        writer.add_warning(EvidenceWarning(
            WarningKind.OTHER, f"trial {trial.index} ({trial.describe()}) failed at {stage}: {exc}",
            "see raw/ for the tools' output", labels))
        print(f"vnetbench: trial {trial.index} failed at {stage}: {exc}", file=sys.stderr)
    for problem in problems:
        writer.add_warning(EvidenceWarning(WarningKind.OTHER, f"teardown: {problem}",
                                           "run `vnetbench clean`", labels))
    if keep:
        writer.append_histograms(histograms)
    return samples


def open_trial_lab(s: Scenario, layer: str, seed: int, problems: list[str],
         placement: PlacementMode) -> AbstractContextManager[Lab]:
    """The lab of ``layer`` for a trial (or a session's path) of ``s``."""
    return open_lab(lab_spec(s, layer, seed=seed, placement=placement),
                    on_teardown_problem=problems.append)


def _evidence(lab: Lab) -> TrialEvidence:
    """The collectors of ``lab`` (loaded only when a workload runs with evidence on)."""
    from vnetbench.run.evidence import TrialEvidence

    return TrialEvidence(lab)


def skip_warning(writer: RunWriter, kind: str, layer: str, why: str,
                  labels: dict[str, str]) -> None:
    """Warn once per workload and layer that it was skipped, and why."""
    message = f"workload {kind} skipped on layer {layer}: {why}"
    if any(w.get("message") == message for w in writer.meta.warnings):
        return
    writer.add_warning(EvidenceWarning(
        WarningKind.OTHER, message, "expected where the layer makes the workload impossible; "
        "otherwise check the scenario", {"layer": layer, "workload": kind}))
    print(f"vnetbench: {message}", file=sys.stderr)


def _run_workload(lab: Lab, kind: str, options: Any, raw_dir: Path,
                  labels: dict[str, str]) -> tuple[list[Sample], list[HistogramRecord]]:
    """The workload's samples and latency histograms, labelled with the trial's labels."""
    workload = create_workload(kind, options)
    try:
        workload.prepare(lab)
    except BaseException:
        with contextlib.suppress(VnetbenchError, OSError):
            workload.cleanup(lab)  # what prepare started before it failed or was stopped
        raise
    try:
        return labelled_run(workload, lab, raw_dir, labels)
    finally:
        workload.cleanup(lab)


def _external_cpu_warning(writer: RunWriter, collected: list[Sample], seconds: float) -> None:
    from vnetbench.results.contention import external_cpu
    from vnetbench.results.warnings import check_external_cpu

    sample = external_cpu(collected)
    warning = check_external_cpu(sample, seconds) if sample else None
    if warning:
        writer.add_warning(warning)


def record_lab(lab: Lab, raw_dir: Path, name: str = "lab.json") -> dict[str, Any]:
    """Write the lab's facts (sysctls, interfaces, MTUs, offloads) to raw/; its facts."""
    import json

    from vnetbench.run.labfacts import interface_facts

    facts = interface_facts(lab)
    info: dict[str, Any] = {"run_id": lab.run_id, "layer": lab.layer.name, "sysctls": lab.sysctls,
            "interfaces": facts, "build_seconds": lab.build_seconds,
            "nodes": [{"name": n.name, "netns": n.netns, "ip": n.ip, "host": n.host}
                      for n in lab.nodes]}
    facts_out: dict[str, Any] = {"sysctls": lab.sysctls, "interfaces": facts}
    for key, value in lab.backend_facts().items():
        info[key] = facts_out[key] = value
    (raw_dir / name).write_text(json.dumps(info, indent=2))
    return facts_out
