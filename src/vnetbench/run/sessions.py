"""Sessions: the labs of a sweep point's layers alive at once, measured in alternation.

For one sweep point (or one group of its layers, ``design.session_groups``: a Docker layer
beside the baseline in a session of its own) the session builds a lab per layer and a second
lab of the baseline (the A/A pair: baseline paths ``a`` and ``b``), once, then runs each
interleavable workload with its own paired client across all of them
(``WorkloadOptions.paired_run``; ``run.interleave``: how its time is cut; a session of labs
that are not namespaces of this host only rotates: each workload run whole in every lab,
round by round), then tears every lab down (an ``ExitStack``: on success, error, Ctrl-C
and SIGTERM alike). A layer whose lab fails to build is recorded as failed and the session
goes on without it; without both baseline labs there is nothing to pair with, and every
layer of the point is recorded as failed.

Device and TCP counters of each lab are read around each workload (``session_evidence``),
since only that lab's traffic crosses its devices; CPU is read per slice by the probe.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vnetbench.backends.lab import Lab
from vnetbench.errors import VnetbenchError, WorkloadSkipped
from vnetbench.results.histogram import HistogramRecord
from vnetbench.results.model import DESIGN_LABEL, PAIR_LABEL, Sample
from vnetbench.run.capacity import Capacities, measure_capacity
from vnetbench.run.design import build_rounds
from vnetbench.run.interleave import (
    ROTATING,
    PathLab,
    cut_for,
    in_pieces,
    lab_refusal,
    path_labels,
    rounds_for,
)
from vnetbench.scenario.model import BASELINE_LAYER
from vnetbench.scenario.sweep import SweepPoint
from vnetbench.workloads.base import WorkloadOptions
from vnetbench.workloads.paired import INTERLEAVED, PairedRun, PassSettings

if TYPE_CHECKING:
    from vnetbench.run.evidence import TrialEvidence

OpenLab = Callable[[str, int], AbstractContextManager[Lab]]
"""Opens the lab of (layer, seed offset) as the runner would for a trial."""
Progress = Callable[[str], None]


Record = Callable[[list[Sample], list[HistogramRecord]], None]
"""Keeps a workload's samples and histograms as soon as it is measured (a signal during the
teardown that follows loses nothing)."""


@dataclass
class SessionOutcome:
    measured: int = 0
    """Workloads measured (and recorded)."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """(layer, why) of the layers the session could not measure."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(layer, why) of workloads a layer makes impossible (expected, not failures)."""
    labs: dict[str, Lab] = field(default_factory=dict)
    """The labs built, by path name (for their facts)."""


def path_names(point: SweepPoint, layers: list[str]) -> list[tuple[str, str, str]]:
    """(path name, layer, A/A group) of a point's paths: the baseline twice (once without the
    scenario's ``noise_floor``), then the rest."""
    paths = [(f"{BASELINE_LAYER}/a", BASELINE_LAYER, "a")]
    if point.scenario.noise_floor:
        paths.append((f"{BASELINE_LAYER}/b", BASELINE_LAYER, "b"))
    paths += [(layer, layer, "") for layer in layers if layer != BASELINE_LAYER]
    return paths


def session_evidence(lab: Lab) -> TrialEvidence:
    """Device and TCP counters of one lab (snapshots before and after a workload)."""
    from vnetbench.run.evidence import TrialEvidence, counter_collectors

    return TrialEvidence(lab, counter_collectors(lab))


class PointSession:
    """The interleaved measurement of one sweep point (see the module docstring)."""

    def __init__(self, point: SweepPoint, layers: list[str], workloads: list[tuple[str, WorkloadOptions]],
                 *, index: int, open_lab: OpenLab, progress: Progress,
                 rotating: frozenset[int] = frozenset(),
                 idle: Callable[[], AbstractContextManager[None]], collect: bool,
                 within_budget: Callable[[int, float], bool] = lambda _j, _s: True,
                 realtime: Callable[[int, list[str]], None] | None = None,
                 capacities: Capacities | None = None) -> None:
        self.point = point
        self.layers = layers
        self.workloads = workloads
        self.index = index
        self.open_lab = open_lab
        self.progress = progress
        self.idle = idle
        self.collect = collect
        self.within_budget = within_budget
        self.realtime = realtime
        """Records each pass's real-time priorities (None: they are not asked for)."""
        self.rotating = rotating
        """Indices of the workloads run whole in every lab, round by round (the others are
        interleaved in slices)."""
        self.capacities = capacities if capacities is not None else Capacities()
        """The run's baseline capacities (a load offered as a share of one, ``capacity``)."""
        self.build = 0
        """Which build of the session's labs is measuring (``pairing.builds``)."""
        self.kept: dict[int, list[Sample]] = {}
        """Per workload, the samples of the session's builds so far (adaptive rounds judge
        every build's floors)."""
        """Whether a further pass of workload ``j`` lasting this many seconds would leave the
        run's fixed measurements still to come within its budget."""

    @property
    def interleaves(self) -> bool:
        """Whether a workload of the session is cut into slices across its labs (one client
        reaching every lab); a session that only rotates runs each workload in its own lab."""
        return len(self.rotating) < len(self.workloads)

    @property
    def where(self) -> str:
        s = self.point.scenario
        shown = {"hosts": str(s.hosts), "nodes": str(s.nodes), **self.point.axes}
        return " ".join(f"{k}={v}" for k, v in shown.items())

    def base_labels(self) -> dict[str, str]:
        s = self.point.scenario
        return {"nodes": str(s.nodes), "hosts": str(s.hosts), "trial": str(self.index),
                **self.point.axes}

    def run(self, raw_dir: Path, on_lab: Callable[[str, Lab], None],
            record: Record, build: int = 0) -> SessionOutcome:
        """Build the session's labs (its ``build``-th build of ``pairing.builds``), measure
        that build's share of the rounds across them, tear them down."""
        outcome = SessionOutcome()
        names = path_names(self.point, self.layers)
        self.build = build
        with contextlib.ExitStack() as stack:
            t0 = time.monotonic()
            paths = list(self._build(names, stack, outcome, on_lab))
            builds = self.point.scenario.pairing.builds
            self.progress(f"[{self.where}] {len(paths)} labs built in "
                          f"{time.monotonic() - t0:.1f} s"
                          + (f" (build {build + 1} of {builds})" if builds > 1 else ""))
            wanted = sum(1 for _, layer, _ in names if layer == BASELINE_LAYER)
            if sum(1 for p in paths if p.labels.get("layer") == BASELINE_LAYER) < wanted:
                why = "the baseline's labs (the A/A pair) could not be built"
                outcome.failed += [(layer, why) for _, layer, aa in names if aa != "b"
                                   and layer not in {f for f, _ in outcome.failed}]
                return outcome
            for k, (kind, given) in enumerate(self.workloads):
                options = self._at_capacity(kind, given, paths, raw_dir, outcome, record)
                if options is None:
                    continue
                if k in self.rotating:
                    self._rotate(k, kind, options, paths, raw_dir, outcome, record)
                else:
                    self._measure(k, kind, options, paths, raw_dir, outcome, record)
        return outcome

    def _at_capacity(self, kind: str, options: WorkloadOptions, paths: list[PathLab],
                     raw_dir: Path, outcome: SessionOutcome, record: Record
                     ) -> WorkloadOptions | None:
        """``options`` at their share of the baseline's capacity, found first on the
        baseline's path when the run has not yet (``capacity``); None when it could not be
        found (every layer's workload recorded as failed)."""
        if options.capacity_probe() is None:
            return options
        base = next(p for p in paths if p.name == f"{BASELINE_LAYER}/a")
        try:
            return self.capacities.resolve(
                kind, options, self.point,
                lambda probe: measure_capacity(kind, probe, base.lab, raw_dir, self.idle),
                lambda samples: record(samples, []), dict(base.labels),
                lambda message: self.progress(f"[{self.where}] {message}"))
        except (VnetbenchError, OSError) as exc:
            outcome.failed += [(p.labels["layer"], f"{kind}: finding the baseline's capacity "
                                f"failed: {exc}") for p in paths if p.labels.get("aa") != "b"]
            return None

    def _build(self, names: list[tuple[str, str, str]], stack: contextlib.ExitStack,
               outcome: SessionOutcome, on_lab: Callable[[str, Lab], None]) -> Iterator[PathLab]:
        base = self.base_labels()
        for k, (name, layer, aa) in enumerate(names):
            try:
                lab = stack.enter_context(self.open_lab(layer, k))
            except VnetbenchError as exc:
                outcome.failed.append((layer, f"lab build failed: {exc}"))
                continue
            refusal = lab_refusal(lab) if self.interleaves else None
            if refusal is not None:
                outcome.failed.append((layer, f"cannot interleave: {refusal}"))
                continue
            outcome.labs[name] = lab
            on_lab(name, lab)
            yield PathLab(name, lab, path_labels(base, layer, aa))

    def _measure(self, k: int, kind: str, options: WorkloadOptions, paths: list[PathLab],
                 raw_dir: Path, outcome: SessionOutcome, record: Record) -> None:
        """Measure ``kind`` across ``paths``: ``repeat`` trials' worth of rounds, then (with
        ``until_cv``) more rounds while a headline figure's A/A floor is above that target, up
        to ``max_repeat`` trials' worth and within the budget."""
        s = self.point.scenario
        if options.slicing is None:  # pragma: no cover - the design interleaves what slices
            raise VnetbenchError(f"{kind} cannot be interleaved")
        cut = cut_for(options.slicing, s.pairing, s.link)
        slice_s, piece_s = cut.slice_s, cut.piece_s
        mine = self.my_rounds(rounds_for(options, s.repeat, slice_s))
        if not mine:
            return
        rounds, done = len(mine), mine.start
        most = rounds_for(options, max(s.repeat, s.max_repeat), slice_s)
        kept = self.kept.setdefault(k, [])
        while True:
            seed = random.Random(s.seed * 1_000_003 + self.index * 101 + k * 7 + done).randrange(
                2**31)
            session = options.paired_run(kind, paths, PassSettings(
                session=self.index, rounds=rounds, slice_s=slice_s, piece_s=piece_s,
                settle_s=cut.settle_s, warm=cut.warm, warmup_rounds=max(1, s.warmup), seed=seed,
                first_round=done, realtime=self.realtime is not None))
            what = "more rounds" if done else "rounds"
            self.progress(f"[{self.where}] {kind}: {len(paths)} paths x {rounds} {what} of "
                          f"{slice_s * 1000:g} ms{in_pieces(slice_s, piece_s)}, interleaved "
                          f"(~{session.expected_seconds():.0f} s)")
            measured = self._pass(session, kind, paths, raw_dir, outcome, record)
            if measured is None:
                return
            kept += measured
            done += rounds
            rounds = more_rounds(done, most)
            if s.until_cv is None or rounds <= 0 or self.build < s.pairing.builds - 1:
                return  # adaptive rounds continue the last build only
            wide = _wide_floors(kept, s.until_cv)
            if not wide:
                return
            if not self.within_budget(k, session.expected_seconds() * rounds
                                      / session.settings.rounds):
                self.progress(f"[{self.where}] {kind}: floors {', '.join(wide)} above "
                              f"{s.until_cv:.0%}; more rounds would end after the budget")
                return
            self.progress(f"[{self.where}] {kind}: floors {', '.join(wide)} above "
                          f"{s.until_cv:.0%} after {done} rounds")

    def _rotate(self, k: int, kind: str, options: WorkloadOptions, paths: list[PathLab],
                raw_dir: Path, outcome: SessionOutcome, record: Record) -> None:
        """Measure ``kind`` whole in every lab, ``repeat`` rounds, each round every path once
        in a fresh random order; each run's evidence from its own lab's collectors (only that
        lab is busy while it runs). A layer whose workload is skipped or fails drops out (the
        others go on); a baseline path's failure ends the workload."""
        from vnetbench.run.evidence import TrialEvidence
        from vnetbench.workloads.labelled import labelled_run
        from vnetbench.workloads.registry import create_workload

        s = self.point.scenario
        rng = random.Random(s.seed * 1_000_003 + self.index * 101 + k * 7 + self.build)
        runs = {p.name: create_workload(kind, options) for p in paths}
        extra = options.labels()
        live: list[PathLab] = []
        prepared: list[PathLab] = []
        mine = self.my_rounds(s.repeat)
        self.progress(f"[{self.where}] {kind}: {len(paths)} paths x {len(mine)} rounds, each "
                      "run whole, a fresh random order each round")
        t0 = time.monotonic()

        def drop(p: PathLab, why: str, skipped: bool) -> bool:
            """Drop path ``p``; whether the workload can go on."""
            if p in live:
                live.remove(p)
            (outcome.skipped if skipped else outcome.failed).append(
                (p.labels["layer"], f"{kind}: {why}"))
            return p.labels["layer"] != BASELINE_LAYER

        try:
            for p in paths:
                try:
                    runs[p.name].prepare(p.lab)
                    prepared.append(p)
                    live.append(p)
                except (VnetbenchError, OSError) as exc:
                    with contextlib.suppress(VnetbenchError, OSError):
                        runs[p.name].cleanup(p.lab)
                    if not drop(p, str(exc), isinstance(exc, WorkloadSkipped)):
                        return
            for rnd in [*range(-max(0, s.warmup), 0), *mine]:
                order = list(live)
                rng.shuffle(order)
                for p in order:
                    labels = {**p.labels, "workload": kind, **extra, "repetition": str(rnd),
                              PAIR_LABEL: f"{self.index}.{rnd}", DESIGN_LABEL: ROTATING}
                    where = raw_dir / f"{kind}-{p.name.replace('/', '-')}-r{rnd}"
                    evidence = TrialEvidence(p.lab) if self.collect and rnd >= 0 else None
                    if evidence:
                        evidence.before()
                    try:
                        with self.idle():
                            samples, hists = labelled_run(runs[p.name], p.lab, where, labels)
                    except (VnetbenchError, OSError) as exc:
                        if not drop(p, str(exc), isinstance(exc, WorkloadSkipped)):
                            return
                        continue
                    if rnd < 0:
                        continue  # a warm-up round
                    if evidence:
                        samples += evidence.after(labels)
                    record(samples, hists)
                if rnd >= 0:
                    self.progress(f"[{self.where}] {kind}: round {rnd + 1}/{s.repeat} "
                                  f"({time.monotonic() - t0:.0f} s)")
            outcome.measured += 1
        finally:
            for p in prepared:
                with contextlib.suppress(VnetbenchError, OSError):
                    runs[p.name].cleanup(p.lab)

    def my_rounds(self, rounds: int) -> range:
        """This build's share of a workload's ``rounds`` fixed rounds (``design.build_rounds``;
        empty when there are more builds than rounds)."""
        shares = build_rounds(rounds, self.point.scenario.pairing.builds)
        return shares[self.build] if self.build < len(shares) else range(0)

    def _pass(self, session: PairedRun, kind: str, paths: list[PathLab],
              raw_dir: Path, outcome: SessionOutcome, record: Record) -> list[Sample] | None:
        """One pass of ``session``: its samples (recorded), or None when it failed."""
        evidence = {p.name: session_evidence(p.lab) for p in paths} if self.collect else {}
        for ev in evidence.values():
            ev.before()
        t0 = time.monotonic()
        try:
            with self.idle():
                result = session.run(raw_dir)
        except (VnetbenchError, OSError) as exc:
            outcome.failed += [(p.labels["layer"], f"{kind} failed: {exc}") for p in paths
                               if p.labels.get("aa", "a") == "a"]
            return None
        samples = list(result.samples)
        for p in paths:
            if p.name in evidence:
                samples += evidence[p.name].after(
                    {**p.labels, "workload": kind,
                     "repetition": str(session.settings.first_round),
                     "design": INTERLEAVED})
        record(samples, result.histograms)
        outcome.measured += 1
        if self.realtime is not None:
            self.realtime(session.realtime_set, session.realtime_missed)
        self.progress(f"[{self.where}] {kind}: {result.wall_s:.1f} s measured "
                      f"({time.monotonic() - t0:.1f} s with set-up)")
        return result.samples


def more_rounds(done: int, most: int) -> int:
    """Rounds of the next adaptive pass after ``done``: as many again (doubling the rounds so
    far), up to ``most`` in all; 0 or less: no more."""
    return min(done, most - done)


def _wide_floors(samples: list[Sample], target: float) -> list[str]:
    """The headline figures whose A/A floor is above ``target`` (``rtt_p50_us 3.1%``)."""
    from vnetbench.results.metrics import QUALITY_METRICS
    from vnetbench.results.stats import paired_noise_floor

    out = []
    for metric in sorted({s.metric for s in samples} & QUALITY_METRICS):
        base = [s for s in samples if s.metric == metric and s.labels.get("layer") == BASELINE_LAYER]
        floor = paired_noise_floor(base)
        if floor is not None and floor.floor > target:
            out.append(f"{metric} {floor.floor:.1%}")
    return out
