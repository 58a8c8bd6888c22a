"""Running a scenario (orchestration only): check every layer can be built here (skipping
the unsupported ones only where the scenario says so), hold the platform controls (the
governor for the run, idle states around workloads, a quiet check), open the run record,
then run it the way its design says (``paired.run_paired``: sessions and blocks, the
default; ``unpaired.run_unpaired``: a lab per trial), and close the record with the run's
status and warnings.

What each part does is its own module's: ``design`` decides the trials and designs, ``trial``
runs one trial, ``sessions`` a point's live labs. A failing trial is recorded and the run goes
on; Ctrl-C or SIGTERM stops after tearing down the current lab and marks the run incomplete,
keeping every finished trial; the results store failing (a full disk) ends the run in one
line, the trials written so far kept.
"""

from __future__ import annotations

import contextlib
import errno
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vnetbench.backends.catalog import get_layer
from vnetbench.backends.registry import spec_backend_class
from vnetbench.errors import ScenarioError, UnsupportedError, VnetbenchError
from vnetbench.provenance.legend import run_legend
from vnetbench.provenance.sysinfo import fingerprint
from vnetbench.results.model import Sample
from vnetbench.results.recorded import LEGEND_KEY
from vnetbench.results.store import RunStatus, RunWriter
from vnetbench.results.warning_model import EvidenceWarning, WarningKind
from vnetbench.run.context import Progress, RunContext, RunOutcome
from vnetbench.run.paired import run_paired
from vnetbench.run.platform import PlatformControls, QuietCheck
from vnetbench.run.unpaired import run_unpaired
from vnetbench.scenario.model import Scenario
from vnetbench.scenario.specs import lab_spec
from vnetbench.scenario.sweep import ScenarioFile, SweepPoint
from vnetbench.signals import Terminated, deferred, terminate_raises

if TYPE_CHECKING:
    from vnetbench.backends.base import Backend


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

    _backend_preflights(sf, layers_of)
    return layers_of, warnings


def _backend_preflights(sf: ScenarioFile, layers_of: Callable[[SweepPoint], list[str]]) -> None:
    """What each backend's labs reach beyond this host (other computers, a cluster),
    checked before the first trial (``Backend.preflight_lab``), once per backend, layers,
    options and host count: every problem now, not after an hour of trials."""
    import json

    done: set[str] = set()
    for point in sf.points:
        s = point.scenario
        launches = any(o.launches for _, o in s.workload_options())
        groups: dict[type[Backend], list[str]] = {}
        for name in layers_of(point):
            groups.setdefault(spec_backend_class(lab_spec(s, name), get_layer(name)),
                              []).append(name)
        for cls, names in groups.items():
            spec = lab_spec(s, names[0])
            opts = {name: s.layer_options.get(name, {}) for name in names}
            key = json.dumps([cls.name, spec.reached, opts, s.hosts, launches],
                             sort_keys=True, default=str)
            if key in done:
                continue
            done.add(key)
            layers = [(get_layer(n), get_layer(n).options.model_validate(opts[n])) for n in names]
            cls.preflight_lab(spec, layers, launches=launches)


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
                                  {**fingerprint(), "controls": controls.to_dict(),
                                   LEGEND_KEY: run_legend(sf).to_dict()})
    except BaseException:
        controls.close()
        raise
    outcome = RunOutcome(out_dir, RunStatus.RUNNING, 0, 0)
    started = time.monotonic()
    try:
        for warning in skipped:
            writer.add_warning(warning)
        progress(_describe_controls(controls))
        run = RunContext(writer, outcome, controls, progress, collect, started)
        if first.pairing.on and any(p.scenario.workloads for p in sf.points):
            run_paired(sf, layers_of, run)
        else:
            run_unpaired(sf, layers_of, run)
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
