"""Running a scenario: trials in interleaved seeded order, each on a freshly built lab.

A trial is (sweep point, layer, repetition). Within each repetition round every (point,
layer) pair runs once, in an order shuffled with the scenario's seed, so slow drift of the
machine spreads over all layers instead of masquerading as one layer's cost. Each trial:
build the lab, snapshot the collectors, run the workloads (each: prepare, run, cleanup),
snapshot again, tear down, append the trial's samples to ``samples.jsonl`` (flushed), and
report progress with an ETA. The platform controls hold (``platform_control``): the governor
for the run, CPU idle states off while each workload runs; each trial first waits for a quiet
machine, and its processes are placed on CPUs by one rule for every layer (``placement``). With
``noise_floor`` the baseline layer runs twice a round, as A/A groups ``a`` and ``b``
(label ``aa``), interleaved with the others. A failing trial is recorded (warning + ``trial_failed``
sample, with the stage that failed) and the run goes on; Ctrl-C or SIGTERM stops after
tearing down the current lab and marks the run incomplete, keeping every finished trial.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import random
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vnetbench.backends.catalog import get_layer
from vnetbench.backends.lab import Lab, open_lab
from vnetbench.backends.registry import spec_backend_class
from vnetbench.errors import ScenarioError, UnsupportedError, VnetbenchError, WorkloadSkipped
from vnetbench.lab.placement import PlacementMode
from vnetbench.provenance.sysinfo import fingerprint
from vnetbench.results.histogram import HistogramRecord
from vnetbench.results.metrics import QUALITY_METRICS
from vnetbench.results.model import AA_LABEL, DESIGN_LABEL, PAIR_LABEL, Sample
from vnetbench.results.store import RunStatus, RunWriter
from vnetbench.results.warning_model import EvidenceWarning, WarningKind
from vnetbench.run.platform import PlatformControls, QuietCheck
from vnetbench.run.startup import resume_gc
from vnetbench.scenario.model import BASELINE_LAYER, Scenario, ScenarioFile, SweepPoint
from vnetbench.scenario.specs import lab_spec, machine_specs
from vnetbench.signals import Terminated, deferred, terminate_raises
from vnetbench.workloads.base import WorkloadOptions
from vnetbench.workloads.labelled import labelled_run
from vnetbench.workloads.registry import create_workload

if TYPE_CHECKING:
    from vnetbench.lab.spec import MachineSpec
    from vnetbench.run.evidence import TrialEvidence

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Trial:
    index: int
    point: SweepPoint
    layer: str
    repetition: int
    aa: str = ""
    """A/A group of a baseline trial (``a`` or ``b``); empty for other trials."""
    pair: str = ""
    """Paired trial blocks: the block this trial belongs to (``<round>-<layer>``, the A/A
    block ``<round>-aa``); empty in an unpaired run."""
    workloads: tuple[int, ...] | None = None
    """Which of the scenario's workloads the trial runs (None: all of them)."""

    def labels(self) -> dict[str, str]:
        s = self.point.scenario
        labels = {"layer": self.layer, "nodes": str(s.nodes), "hosts": str(s.hosts),
                  "repetition": str(self.repetition), "trial": str(self.index),
                  **self.point.axes}
        if self.aa:
            labels[AA_LABEL] = self.aa
        if self.pair:
            labels[PAIR_LABEL] = self.pair
            labels[DESIGN_LABEL] = "blocks"
        return labels

    def describe(self) -> str:
        s = self.point.scenario
        shown = {"hosts": str(s.hosts), "nodes": str(s.nodes), **self.point.axes}
        axes = " ".join(f"{k}={v}" for k, v in shown.items())
        group = f" (A/A {self.aa})" if self.aa else ""
        block = f" block {self.pair}" if self.pair else ""
        return f"{self.layer}{group} {axes} rep {self.repetition}{block}"

    def workload_options(self) -> list[tuple[str, WorkloadOptions]]:
        """The (kind, options) of the workloads this trial runs."""
        every = self.point.scenario.workload_options()
        if self.workloads is None:
            return every
        return [every[k] for k in self.workloads]


def _groups(point: SweepPoint, layer: str) -> tuple[str, ...]:
    """A/A groups a (point, layer) runs as each round: two for the baseline, else one."""
    s = point.scenario
    return ("a", "b") if s.noise_floor and s.workloads and layer == BASELINE_LAYER else ("",)


def plan_round(sf: ScenarioFile, layers_of: Callable[[SweepPoint], list[str]], rnd: int,
               wanted: Callable[[SweepPoint, str], bool], first_index: int) -> list[Trial]:
    """One round: every wanted (point, layer) once (the baseline once per A/A group), in an
    order shuffled with the seed."""
    seed = sf.points[0].scenario.seed
    pairs = [(p, layer, aa) for p in sf.points for layer in layers_of(p) if wanted(p, layer)
             for aa in _groups(p, layer)]
    random.Random(seed * 1_000_003 + rnd).shuffle(pairs)
    return [Trial(first_index + k, point, layer, rnd, aa)
            for k, (point, layer, aa) in enumerate(pairs)]


def plan_blocks(point: SweepPoint, layers: list[str], rnd: int, first_index: int,
                workloads: tuple[int, ...] | None = None) -> list[Trial]:
    """One round of paired trial blocks for ``point``: each layer's trial right next to a
    baseline trial (group ``a``), baseline first in even rounds and second in odd ones (ABBA
    over two rounds), and (with the scenario's ``noise_floor``) one A/A block (baseline ``a``
    and ``b``); the blocks in a seeded random order."""
    s = point.scenario
    blocks = [layer for layer in layers if layer != BASELINE_LAYER]
    blocks += ["aa"] if s.noise_floor else []
    random.Random(s.seed * 1_000_003 + rnd * 7919 + 17).shuffle(blocks)
    trials: list[Trial] = []
    for block in blocks:
        pair = f"{rnd}-{block}"
        first = Trial(0, point, BASELINE_LAYER, rnd, "a", pair, workloads)
        second = (Trial(0, point, BASELINE_LAYER, rnd, "b", pair, workloads) if block == "aa"
                  else Trial(0, point, block, rnd, "", pair, workloads))
        trials += [first, second] if rnd % 2 == 0 else [second, first]
    return [dataclasses.replace(t, index=first_index + k) for k, t in enumerate(trials)]


def plan_trials(sf: ScenarioFile, layers_of: Callable[[SweepPoint], list[str]]) -> list[Trial]:
    """Every fixed (non-adaptive) trial of the scenario, interleaved round by round."""
    trials: list[Trial] = []
    for rnd in range(max(p.scenario.repeat for p in sf.points)):
        def wanted(p: SweepPoint, _layer: str, r: int = rnd) -> bool:
            return r < p.scenario.repeat

        trials += plan_round(sf, layers_of, rnd, wanted, len(trials))
    return trials


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
                     ) -> tuple[Callable[[SweepPoint], list[str]], list[EvidenceWarning]]:
    """Layers per point, and warnings for skipped ones.

    An unsupported layer is a ScenarioError naming the file, unless the scenario says
    ``skip_unsupported``; then it is skipped with a warning.
    """
    verdict: dict[str, str | None] = {}
    warnings: list[EvidenceWarning] = []
    for point in sf.points:
        for name in point.scenario.layers:
            if name in verdict:
                continue
            try:
                layer = get_layer(name)
                spec_backend_class(lab_spec(point.scenario, name), layer).check(layer)
                verdict[name] = None
            except UnsupportedError as exc:
                if not point.scenario.skip_unsupported:
                    raise ScenarioError(f"{sf.path}: layers: {exc}") from None
                verdict[name] = str(exc)
                progress(f"skipping layer {name}: {exc}")
                warnings.append(EvidenceWarning(WarningKind.OTHER, f"layer {name} skipped",
                                                str(exc), {"layer": name}))
    def layers_of(p: SweepPoint) -> list[str]:
        return [name for name in p.scenario.layers if verdict.get(name) is None]

    checked: list[tuple[MachineSpec, ...]] = []
    for point in sf.points:
        specs = machine_specs(point.scenario)
        if specs and specs not in checked:  # every machine problem now, before any trial
            from vnetbench.backends.machines.backend import preflight
            preflight(specs, [get_layer(name) for name in layers_of(point)])
            checked.append(specs)
    _backend_preflights(sf, layers_of)
    return layers_of, warnings


def _backend_preflights(sf: ScenarioFile, layers_of: Callable[[SweepPoint], list[str]]) -> None:
    """What each layer's backend reaches beyond this host (a Kubernetes cluster), checked
    once per layer, options and host count before the first trial (``Backend.preflight``)."""
    import json

    from vnetbench.backends.registry import backend_class

    done: set[tuple[str, str, int, bool]] = set()
    for point in sf.points:
        s = point.scenario
        for name in [] if s.machines else layers_of(point):
            layer, opts = get_layer(name), s.layer_options.get(name, {})
            launches = any(o.launches for _, o in s.workload_options())
            key = (name, json.dumps(opts, sort_keys=True, default=str), s.hosts, launches)
            if key not in done:
                done.add(key)
                backend_class(layer).preflight(layer, layer.options.model_validate(opts), s.hosts,
                                               launches=launches)


def run_scenario(sf: ScenarioFile, out_dir: Path, progress: Progress = stderr_progress,
                 collect: bool = True) -> RunOutcome:
    """Run every trial of ``sf`` into ``out_dir``. SIGTERM stops it as Ctrl-C does: the
    current lab is torn down, the run is marked incomplete, ``Terminated`` propagates."""
    with terminate_raises():
        return _run_scenario(sf, out_dir, progress, collect)


def _run_scenario(sf: ScenarioFile, out_dir: Path, progress: Progress,
                  collect: bool) -> RunOutcome:
    layers_of, skipped = supported_layers(sf, progress)
    first = sf.points[0].scenario
    controls = _platform_controls(first)
    controls.open()
    try:  # run.json starts with the controls as set (one write, not two)
        writer = RunWriter.create(out_dir, sf.record(),
                                  {**fingerprint(), "controls": controls.to_dict()})
    except BaseException:
        controls.close()
        raise
    outcome = RunOutcome(out_dir, RunStatus.RUNNING, 0, 0)
    started = time.monotonic()
    try:
        for warning in skipped:
            writer.add_warning(warning)
        progress(_describe_controls(controls))
        run = _RunState(writer, outcome, controls, progress, collect, started)
        if first.pairing.on and any(p.scenario.workloads for p in sf.points):
            _run_paired(sf, layers_of, run)
        else:
            _run_unpaired(sf, layers_of, run)
        writer.set_environment("controls", controls.to_dict(), save=False)  # with what follows
        if any(p.scenario.workloads for p in sf.points):  # a build-only run has nothing to judge
            _control_warnings(writer, controls)           # (nor loads the statistics' numpy)
            _quality_warnings(writer, outcome.samples, first.until_cv or 0.05)
    except (KeyboardInterrupt, Terminated) as stop:
        with deferred():  # a second signal must not cut this bookkeeping short
            outcome.trials_done += int(getattr(stop, "kept_trial", False))
            what = "terminated (SIGTERM)" if isinstance(stop, Terminated) else "interrupted"
            progress(f"{what}: kept {outcome.trials_done} finished trial(s) in {out_dir}")
            controls.close()
            writer.set_environment("controls", controls.to_dict(), save=False)
            writer.close(RunStatus.INCOMPLETE)  # saves the controls too
            outcome.status = RunStatus.INCOMPLETE
        raise
    except OSError as exc:
        if not store_failure(exc, out_dir):
            raise
        with deferred():  # the labs are down already (their own teardown ran on the way)
            progress(f"the results store failed: kept {outcome.trials_done} finished "
                     f"trial(s) in {out_dir}")
            controls.close()
            with contextlib.suppress(OSError):  # the disk may still be full
                writer.close(RunStatus.INCOMPLETE)
            outcome.status = RunStatus.INCOMPLETE
        raise VnetbenchError(
            f"writing the run's results failed ({exc.strerror or exc}: "
            f"{exc.filename or out_dir}); the {outcome.trials_done} trial(s) written before "
            "are kept in it; free some space, or give an --out on another file system, and "
            "run again") from None
    finally:
        controls.close()
    status = RunStatus.FAILED if outcome.trials_failed else RunStatus.COMPLETE
    writer.close(status, failing_stage="trials" if outcome.trials_failed else None)
    outcome.status = status
    return outcome


STORE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})


def store_failure(exc: OSError, out_dir: Path) -> bool:
    """Whether ``exc`` is the run's results store failing (a full disk or quota, a file
    system gone read-only, a file in the run directory), not a lab's or a tool's error."""
    if exc.errno in STORE_ERRNOS:
        return True
    name = exc.filename if isinstance(exc.filename, str) else ""
    return bool(name) and Path(name).is_relative_to(out_dir)


@dataclass
class _RunState:
    """What every part of a run writes to and reports through."""

    writer: RunWriter
    outcome: RunOutcome
    controls: PlatformControls
    progress: Progress
    collect: bool
    started: float


def _run_unpaired(sf: ScenarioFile, layers_of: Callable[[SweepPoint], list[str]],
                  run: _RunState) -> None:
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
        if rnd >= first.repeat and not _within_budget(first, outcome, trials, started):
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


@dataclass(frozen=True)
class WorkloadDesign:
    """How one workload of a sweep point is measured, and why."""

    kind: str
    design: str
    """``interleaved`` (paths alternated in slices), ``rounds`` (run whole in every live lab,
    round by round), ``blocks`` (a lab per trial, ABBA) or ``unpaired``."""
    why: str = ""
    """Why it is not interleaved (empty when it is)."""
    rounds: int = 0
    slice_s: float = 0.0
    piece_s: float = 0.0
    """One visit to a path within a round (``slice_s``: the whole slice)."""


@dataclass(frozen=True)
class PointDesign:
    """The paired design of one sweep point: its layers and each workload's design."""

    point: SweepPoint
    layers: tuple[str, ...]
    workloads: tuple[WorkloadDesign, ...]
    sessions: tuple[tuple[str, ...], ...] = ()
    """The layers whose labs live together for one session of the interleaved and rotating
    workloads (``session_groups``; empty: every layer in one)."""

    @property
    def groups(self) -> tuple[tuple[str, ...], ...]:
        return self.sessions or (self.layers,)

    @property
    def paths(self) -> int:
        """Paths of its sessions: every layer, and the baseline twice (A/A) in each."""
        return sum(self.group_paths(g) for g in range(len(self.groups)))

    def group_paths(self, g: int) -> int:
        """Paths of the ``g``-th session: its layers, and the baseline twice (A/A)."""
        return len(self.groups[g]) + (1 if self.point.scenario.noise_floor else 0)

    def interleaved(self) -> tuple[int, ...]:
        """The workloads of the point's session (interleaved in slices, or in rounds)."""
        return tuple(k for k, w in enumerate(self.workloads)
                     if w.design in ("interleaved", "rounds"))

    def rotating(self) -> frozenset[int]:
        return frozenset(k for k, w in enumerate(self.workloads) if w.design == "rounds")

    def blocked(self) -> tuple[int, ...]:
        return tuple(k for k, w in enumerate(self.workloads) if w.design == "blocks")

    def session_seconds(self, k: int) -> float:
        """Measuring time of workload ``k``'s fixed rounds in the point's session."""
        s = self.point.scenario
        w = self.workloads[k]
        if w.design == "interleaved":
            return (w.rounds + max(1, s.warmup)) * self.paths * w.slice_s
        if w.design == "rounds":
            options = s.workload_options()[k][1]
            return (s.repeat + s.warmup) * self.paths * (_run_seconds(options) + 1.0)
        return 0.0

    def expected_seconds(self) -> float:
        """Measuring time of the fixed rounds and blocks (set-up and adaptive rounds not
        counted): interleaved slices, and each block trial's workloads' durations."""
        s = self.point.scenario
        every = s.workload_options()
        seconds = sum(self.session_seconds(k) for k in range(len(self.workloads)))
        blocked = self.blocked()
        if blocked:
            per_trial = sum(_run_seconds(every[k][1]) for k in blocked)
            trials = 2 * (len(self.layers) - 1 + (1 if s.noise_floor else 0)) * (s.repeat + s.warmup)
            seconds += trials * per_trial
        return seconds

    def to_dict(self) -> dict[str, Any]:
        return {"axes": {"hosts": str(self.point.scenario.hosts),
                         "nodes": str(self.point.scenario.nodes), **self.point.axes},
                "layers": list(self.layers), "paths": self.paths,
                "sessions": [list(g) for g in self.groups],
                "workloads": [dataclasses.asdict(w) for w in self.workloads]}

    def describe(self) -> str:
        s = self.point.scenario
        where = " ".join(f"{k}={v}" for k, v in
                         {"hosts": str(s.hosts), "nodes": str(s.nodes), **self.point.axes}.items())
        parts = []
        for design in ("interleaved", "rounds", "blocks", "unpaired"):
            mine = [w for w in self.workloads if w.design == design]
            if not mine:
                continue
            names = ", ".join(w.kind for w in mine)
            if design == "interleaved":
                parts.append(f"{names} interleaved over {self.paths} paths")
            elif design == "rounds":
                parts.append(f"{names} in rounds over {self.paths} live labs" + (
                    f" ({len(self.groups)} sessions: "
                    + ", ".join("+".join(g) for g in self.groups) + ")"
                    if len(self.groups) > 1 else ""))
            else:
                why = "; ".join(sorted({w.why for w in mine if w.why}))
                parts.append(f"{names} in {'paired trial blocks' if design == 'blocks' else 'unpaired trials'}"
                             + (f" ({why})" if why else ""))
        return f"{where}: " + "; ".join(parts)


def paired_designs(sf: ScenarioFile, layers_of: Callable[[SweepPoint], list[str]]
                   ) -> list[PointDesign]:
    """The design of every sweep point of a paired run (``pairing: on``): which workloads
    interleave their paths, which run whole in rounds over the live labs, which in paired
    trial blocks, which (no baseline) unpaired."""
    from vnetbench.run.interleave import NOT_ROTATING, cut_for, rounds_for

    out = []
    for point in sf.points:
        s = point.scenario
        layers = layers_of(point)
        designs = []
        no_base = BASELINE_LAYER not in layers or len(layers) < 2
        refusal = _lab_refusal(s, layers)
        for kind, options in s.workload_options():
            if no_base:
                designs.append(WorkloadDesign(kind, "unpaired", f"no {BASELINE_LAYER} layer to "
                                              "pair with"))
                continue
            why = refusal or _interleave_refusal(kind, options) or _namespace_refusal(layers)
            if why and not _rotation_refusal(s, layers) and kind not in NOT_ROTATING:
                designs.append(WorkloadDesign(kind, "rounds", why))
            elif why:
                designs.append(WorkloadDesign(kind, "blocks", why))
            else:
                cut = cut_for(kind, s.pairing, s.link)
                designs.append(WorkloadDesign(kind, "interleaved", "",
                                              rounds_for(kind, options, s.repeat, cut.slice_s),
                                              cut.slice_s, cut.piece_s))
        groups = session_groups(layers) if not refusal else (tuple(layers),)
        out.append(PointDesign(point, tuple(layers), tuple(designs),
                               groups if len(groups) > 1 else ()))
    return out


def _interleave_refusal(kind: str, options: Any) -> str:
    from vnetbench.run.interleave import interleave_refusal

    return interleave_refusal(kind, options) or ""


def _lab_refusal(s: Scenario, layers: list[str]) -> str:
    """Why no workload of ``s`` can interleave its labs' paths (empty: they can)."""
    if s.resources.resources().any:
        return "per-node CPU limits would not hold a client shared by every lab"
    return _rotation_refusal(s, layers)


def _rotation_refusal(s: Scenario, layers: list[str]) -> str:
    """Why the labs of ``s`` cannot be kept alive for its sessions (empty: they can)."""
    if s.busy:
        return "busy neighbours of every lab would run at once"
    if s.machines:
        return "labs on real machines are measured one at a time"
    others = sorted({_backend(name) for name in layers} - {"netns", *BESIDE_BASELINE})
    if others:
        return f"the {', '.join(others)} backend's labs are built one at a time"
    return ""


BESIDE_BASELINE = frozenset({"docker"})
"""Backends whose lab of one layer lives beside the baseline's labs for a session of its
own (``session_groups``): a Docker engine per emulated host is light enough to keep one lab
up for a session, not every Docker layer's at once on a small host."""


def session_groups(layers: list[str]) -> tuple[tuple[str, ...], ...]:
    """The layers whose labs live together for one session: the netns layers with the
    baseline in one, each layer of a ``BESIDE_BASELINE`` backend with the baseline in one of
    its own (every session with its own A/A pair of the baseline)."""
    apart = [name for name in layers if _backend(name) in BESIDE_BASELINE]
    together = tuple(name for name in layers if name not in apart)
    groups = [together] if len(together) > 1 or not apart else []
    groups += [(BASELINE_LAYER, name) for name in apart if name != BASELINE_LAYER]
    return tuple(groups)


def _namespace_refusal(layers: list[str]) -> str:
    """Why the labs of ``layers`` cannot be reached from one client (empty: they can)."""
    others = sorted({_backend(name) for name in layers} - {"netns"})
    if others:
        return (f"the {', '.join(others)} backend's nodes are not namespaces of this host: "
                "run whole in rounds")
    return ""


def _backend(layer: str) -> str:
    from vnetbench.backends.registry import backend_class

    return backend_class(get_layer(layer)).name


def _run_seconds(options: WorkloadOptions) -> float:
    """About how long one run of a workload takes (its duration and warm-up)."""
    duration = options.duration_s()
    return (5.0 if duration is None else duration) + options.warmup_s()


def _run_paired(sf: ScenarioFile, layers_of: Callable[[SweepPoint], list[str]],
                run: _RunState) -> None:
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
        _run_unpaired(dataclasses.replace(sf, points=tuple(unpaired)), layers_of, run)


def _run_session(point: SweepPoint, layers: list[str], workloads: tuple[int, ...],
                 run: _RunState, rotating: frozenset[int] = frozenset(),
                 reserve: Callable[[int], float] = lambda _j: 0.0) -> None:
    """The interleaved session of ``point``: its labs built once, each workload measured
    across them in alternation; every path's failure recorded as a failed trial."""
    from vnetbench.run.sessions import PointSession

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

    def on_lab(name: str, lab: Lab) -> None:
        built.append(name)
        resume_gc()
        run.controls.note_placement(s.platform.placement, lab.placement.describe(),
                                    placement_note)
        layer = lab.layer.name
        facts = _record_lab(lab, raw_dir, f"lab-{name.replace('/', '-')}.json")
        if layer not in recorded:
            run.writer.add_lab_facts(layer, facts)
            recorded.add(layer)

    if run.controls.quiet is not None:
        run.controls.quiet.wait(index)
    session = PointSession(
        point, layers, [every[k] for k in workloads], index=index,
        rotating=frozenset(j for j, k in enumerate(workloads) if k in rotating),
        open_lab=lambda layer, k: _lab(s, layer, s.seed + index + k, problems, placement),
        progress=run.progress,
        idle=lambda: run.controls.idle_for(s.platform.idle_states),
        collect=run.collect,
        within_budget=lambda j, seconds: s.budget is None or (
            time.monotonic() - run.started + seconds + reserve(j) <= s.budget),
        realtime=run.controls.note_realtime if run.controls.realtime else None)
    def record(samples: list[Sample], histograms: list[HistogramRecord]) -> None:
        run.writer.append_samples(samples)
        run.writer.append_histograms(histograms)
        run.outcome.samples += samples
        if samples and not counted:  # every lab of the session measured: its "trials"
            counted.extend(built)
            run.outcome.trials_done += len(built)

    run.writer.set_stage(f"session {index}: {session.where}")
    result = session.run(raw_dir, on_lab, record)
    labels = session.base_labels()
    failed = [Sample("trial_failed", 1.0, "count", {**labels, "layer": layer, "stage": "session"})
              for layer, _ in result.failed]
    for layer, why in result.failed:
        run.writer.add_warning(EvidenceWarning(
            WarningKind.OTHER, f"{layer} at {session.where}: {why}",
            "see raw/ for the tools' output", {**labels, "layer": layer}))
        print(f"vnetbench: {layer} at {session.where}: {why}", file=sys.stderr)
    for layer, why in result.skipped:
        _skip_warning(run.writer, why.split(":", 1)[0], layer, why.split(": ", 1)[-1],
                      {**labels, "layer": layer})
    for problem in problems:
        run.writer.add_warning(EvidenceWarning(WarningKind.OTHER, f"teardown: {problem}",
                                               "run `vnetbench clean`", labels))
    record(failed, [])
    run.outcome.trials_failed += len({layer for layer, _ in result.failed})


def _run_blocks(point: SweepPoint, layers: list[str], workloads: tuple[int, ...],
                run: _RunState) -> None:
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
            if not _within_budget(s, run.outcome, trials, run.started):
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


def _within_budget(s: Scenario, outcome: RunOutcome, trials: list[Trial],
                   started: float) -> bool:
    """Whether an adaptive round of ``trials`` would end within the scenario's budget."""
    if s.budget is None or not outcome.trials_done:
        return True
    elapsed = time.monotonic() - started
    per_trial = elapsed / outcome.trials_done
    return elapsed + per_trial * len(trials) <= s.budget


def _platform_controls(s: Scenario) -> PlatformControls:
    """The scenario's controls; a build-only scenario measures nothing and needs none."""
    p = s.platform
    if not s.workloads:
        return PlatformControls(idle=False, governor=False, quiet=None)
    # paired measurement compares a layer with its baseline in the same seconds: the load
    # outside the lab is recorded, not waited for
    quiet = (QuietCheck(p.quiet.threshold, p.quiet.wait, record_only=s.pairing.on)
             if p.quiet is not None else None)
    return PlatformControls(idle=p.idle_states, governor=p.governor, quiet=quiet,
                            realtime=p.realtime and s.pairing.on and s.resources.cpus is None)


def _describe_controls(controls: PlatformControls) -> str:
    parts = [f"{name}: {'on' if st.effective else 'off'} ({st.detail})"
             for name, st in controls.statuses.items()]
    return "platform: " + "; ".join(parts)


def _control_warnings(writer: RunWriter, controls: PlatformControls) -> None:
    """One warning per control that was asked for and did not hold."""
    from vnetbench.results.warnings import control_warnings

    for warning in control_warnings(controls.to_dict()):
        writer.add_warning(warning)


def _quality_warnings(writer: RunWriter, samples: list[Sample], cv_target: float) -> None:
    """Noise, outliers and too-few-repetitions over the run's main figures; offloads; the
    detectors (softirq saturation, drops with retransmissions)."""
    from vnetbench.results.detectors import detector_warnings
    from vnetbench.results.warnings import check_offloads, quality_warnings

    for warning in [*quality_warnings(samples, cv_target=cv_target), *detector_warnings(samples)]:
        writer.add_warning(warning)
    layers = writer.meta.environment.get("layers", {})
    offloads: dict[str, dict[str, Any]] = {
        layer: next(iter(f.get("interfaces", {}).get("offloads", {}).values()), {})
        for layer, f in layers.items()}
    for warning in check_offloads({k: v for k, v in offloads.items() if v}):
        writer.add_warning(warning)


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
        with _lab(s, trial.layer, s.seed + trial.index, problems, placement) as lab:
            resume_gc()  # start-up is over (the command paused it: ``startup``)
            if controls is not None and keep:
                controls.note_placement(s.platform.placement, lab.placement.describe(),
                                        placement_note)
            samples.append(Sample("lab_build_s", lab.build_seconds, "s", dict(labels)))
            if s.workloads:  # facts explain measurements; a build-only run skips them
                facts = _record_lab(lab, raw_dir)
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
                    _skip_warning(writer, kind, trial.layer, str(skipped), labels)
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


def _lab(s: Scenario, layer: str, seed: int, problems: list[str],
         placement: PlacementMode) -> AbstractContextManager[Lab]:
    """The lab of ``layer`` for a trial (or a session's path) of ``s``."""
    return open_lab(lab_spec(s, layer, seed=seed, placement=placement),
                    on_teardown_problem=problems.append)


def _evidence(lab: Lab) -> TrialEvidence:
    """The collectors of ``lab`` (loaded only when a workload runs with evidence on)."""
    from vnetbench.run.evidence import TrialEvidence

    return TrialEvidence(lab)


def _skip_warning(writer: RunWriter, kind: str, layer: str, why: str,
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
    except WorkloadSkipped:
        with contextlib.suppress(VnetbenchError, OSError):
            workload.cleanup(lab)  # what prepare started before it found the way blocked
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


def _record_lab(lab: Lab, raw_dir: Path, name: str = "lab.json") -> dict[str, Any]:
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
