"""What a run of a scenario would do, in a few lines: ``vnetbench plan``'s summary.

For every sweep point: the layers (those this host cannot build, skipped with why), the labs
built, and how the workloads are measured, decided as the runner decides it (``run.design``):

- paired design (``pairing: on``, the default), the point has the baseline and another
  layer: rr, crr and forward TCP streams between namespaces in one *interleaved session*
  (every lab alive at once: the layers and a second baseline lab for the A/A pair; each
  workload ``rounds_for`` rounds of its slice, plus the warm-up rounds), the other workloads
  in *rounds* over the same live labs (run whole, every lab once a round; a Docker layer's
  lab beside the two baseline labs in a session of its own, ``design.session_groups``) or,
  where labs cannot live together, in *paired trial blocks* (``plan_blocks``: each layer's
  trial next to a baseline trial); ``design.paired_designs`` says which and why;
- otherwise (``pairing: off``, no baseline, no workloads): a lab per trial, each layer once
  a round (``plan_trials``, and ``Scenario.trial_count`` with adaptive rounds).

The estimated time is the measuring time those rules give (slices x paths x rounds; each
trial's workload durations and warm-ups) plus a fixed overhead per lab built and per trial or
session pass and of the run itself (``LAB_S``, ``TRIAL_S``, ``PASS_S``, ``RUN_S``: measured on a
2-core host, see their notes). Unpaired trials (``pairing: off``) first wait for a quiet
machine, up to ``platform.quiet.wait`` each: that is given as a bound of its own.
With ``until_cv`` a run may add rounds: the most it can take is given beside the estimate, cut
to the scenario's ``budget``. Workloads whose running time the scenario does not say
(Hadoop, MPI without a duration, a command) and labs of another backend than namespaces
(Docker, VMs, real machines: seconds to minutes each) are named as not estimated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vnetbench.results.pairing import best_p, fewest_pairs
from vnetbench.scenario.model import BASELINE_LAYER, Scenario
from vnetbench.scenario.sweep import ScenarioFile, SweepPoint
from vnetbench.workloads.base import WorkloadOptions

if TYPE_CHECKING:
    from vnetbench.run.design import PointDesign

LAB_S = 0.1
"""Seconds to build and tear down one small lab of a namespace layer (2 nodes on 2 hosts:
``lab_build_s`` 6-90 ms for host, bridge, vxlan and wireguard on 2026-11-25, its teardown
alike)."""
TRIAL_S = 0.45
"""Seconds a trial takes beyond its lab and its workloads' durations (the probe's servers
started and stopped, collectors, the lab's facts): 16 paired-block trials of rr 300 ms + crr
200 ms + stream 250 ms took 1.2-1.4 s each (2026-11-25, 2 cores)."""
PASS_S = 0.4
"""Seconds an interleaved pass takes beyond its slices (every path's server started, the
paired client's start, counters read): 0.1-0.75 s in the same check (the longest for
streams, whose slices overrun a little)."""
RUN_S = 3.5
"""Seconds of a run's own start and end (fingerprint, statistics, the report): 3.1-4.0 s
beyond the trials in three runs of the same check (interleaved, blocks, pairing off). Whole
runs against ``plan``'s estimate: interleaved 25.9 s (estimated 26 s), blocks 23.9 s (25 s);
pairing off 43.2 s (17 s, and up to 30 s more waiting for quiet: on this shared machine each
of its 10 trials waited the full 3 s)."""


@dataclass
class PointSummary:
    """What one sweep point runs and how long that should take."""

    where: str
    layers: list[str]
    design: str
    """``interleaved``/``blocks`` (paired), ``unpaired`` or ``build only``."""
    labs: int = 0
    """Labs built (an interleaved session's at once, one per trial otherwise)."""
    trials: int = 0
    """Trials (each building a lab): paired blocks, or unpaired trials; warm-ups included."""
    most_trials: int = 0
    sessions: int = 0
    """Passes of a workload across a session's labs, interleaved or in rounds (adaptive passes
    not counted)."""
    lines: list[str] = field(default_factory=list)
    seconds: float = 0.0
    most_seconds: float = 0.0
    quiet_wait: float = 0.0
    """Seconds the trials may wait for a quiet machine (unpaired runs only), at most."""
    not_estimated: list[str] = field(default_factory=list)
    measuring: float = 0.0
    """The measuring part of ``seconds`` (paired points: ``PointDesign.expected_seconds``,
    the runner's own estimate); the rest is set-up (labs, trials, passes)."""

    def to_dict(self) -> dict[str, object]:
        return {"where": self.where, "layers": list(self.layers), "design": self.design,
                "labs": self.labs, "trials": self.trials, "most_trials": self.most_trials,
                "sessions": self.sessions, "lines": list(self.lines),
                "seconds": round(self.seconds, 1), "most_seconds": round(self.most_seconds, 1),
                "quiet_wait": round(self.quiet_wait, 1),
                "not_estimated": list(self.not_estimated)}


@dataclass
class RunSummary:
    """``vnetbench plan``'s summary of a scenario (see the module docstring)."""

    name: str
    path: str
    overrides: tuple[str, ...]
    points: list[PointSummary]
    skipped: dict[str, str]
    budget: float | None

    @property
    def seconds(self) -> float:
        return RUN_S + sum(p.seconds for p in self.points)

    @property
    def quiet_wait(self) -> float:
        """Seconds the unpaired trials may wait for a quiet machine, at most."""
        return sum(p.quiet_wait for p in self.points)

    @property
    def most_seconds(self) -> float:
        """The longest the run may take with adaptive rounds (within the budget, which cuts
        only adaptive rounds)."""
        most = RUN_S + sum(p.most_seconds for p in self.points)
        if self.budget is not None:
            most = min(most, max(self.budget, self.seconds))
        return max(most, self.seconds)

    def text(self) -> str:
        over = f" with {' '.join(self.overrides)}" if self.overrides else ""
        labs = sum(p.labs for p in self.points)
        trials = sum(p.trials for p in self.points)
        sessions = sum(p.sessions for p in self.points)
        counts = [f"{len(self.points)} sweep point(s)", f"{labs} lab(s) built"]
        counts += [f"{sessions} session pass(es)"] if sessions else []
        counts += [f"{trials} trial(s)"] if trials else []
        lines = [f"plan of {self.name} ({self.path}{over}): " + ", ".join(counts)]
        for layer, why in self.skipped.items():
            lines.append(f"  skipped: {layer}: {why}")
        for p in self.points:
            lines.append(f"  {p.where}: {p.design}; layers {', '.join(p.layers) or 'none'}")
            lines += [f"    {line}" for line in p.lines]
        estimate = f"estimated time: about {duration_text(self.seconds)}"
        if self.most_seconds > self.seconds + 0.5:
            cut = (f", the {self.budget:g} s budget" if self.budget is not None
                   and self.most_seconds >= self.budget else "")
            estimate += f" (at most {duration_text(self.most_seconds)} with adaptive rounds{cut})"
        if self.quiet_wait:
            estimate += (f"; up to {duration_text(self.quiet_wait)} more while the machine is "
                         "not quiet (platform.quiet.wait before each trial, pairing: off)")
        missing = sorted({x for p in self.points for x in p.not_estimated})
        if missing:
            estimate += "; not estimated: " + ", ".join(missing)
        lines.append(estimate)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "file": self.path, "overrides": list(self.overrides),
                "skipped": dict(self.skipped), "seconds": round(self.seconds, 1),
                "most_seconds": round(self.most_seconds, 1),
                "quiet_wait": round(self.quiet_wait, 1), "labs": sum(p.labs for p in self.points),
                "trials": sum(p.trials for p in self.points),
                "sessions": sum(p.sessions for p in self.points),
                "points": [p.to_dict() for p in self.points]}


def duration_text(seconds: float) -> str:
    """``95`` -> ``1 min 35 s``; ``4`` -> ``4 s``; ``3700`` -> ``1 h 2 min``."""
    whole = math.ceil(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s" if whole % 60 else f"{whole // 60} min"
    return f"{whole // 3600} h {(whole % 3600 + 59) // 60} min"


def _where(point: SweepPoint) -> str:
    s = point.scenario
    shown = {"hosts": str(s.hosts), "nodes": str(s.nodes), **point.axes}
    return " ".join(f"{k}={v}" for k, v in shown.items())


def _workloads_seconds(pairs: Sequence[tuple[str, WorkloadOptions]], hosts: int,
                       missing: list[str]) -> float:
    from vnetbench.run.design import run_seconds

    total = 0.0
    for kind, options in pairs:
        seconds = run_seconds(options, hosts)
        if seconds is None:
            missing.append(f"{kind}'s running time")
        else:
            total += seconds
    return total


def _backend_note(layers: list[str], s: Scenario) -> list[str]:
    from vnetbench.backends.catalog import get_layer
    from vnetbench.backends.registry import backend_class

    if s.machines:
        return ["lab builds on real machines"]
    others = sorted({backend_class(get_layer(n)).name for n in layers} - {"netns"})
    return [f"{name} lab builds" for name in others]


def summarize(sf: ScenarioFile, unsupported: Mapping[str, str]) -> RunSummary:
    """The summary of a run of ``sf`` on this host, ``unsupported`` naming the layers it
    cannot build (those the scenario skips; ``planning.unsupported_layers``)."""
    from vnetbench.run.design import paired_designs, plan_round, plan_trials

    first = sf.points[0].scenario
    skipped = {name: why for name, why in unsupported.items()
               if any(name in p.scenario.layers for p in sf.points)}

    def layers_of(p: SweepPoint) -> list[str]:
        return [name for name in p.scenario.layers if name not in skipped]

    paired = first.pairing.on and any(p.scenario.workloads for p in sf.points)
    done: dict[int, PointSummary] = {}
    unpaired: list[int] = []
    designs = paired_designs(sf, layers_of) if paired else []
    for k, point in enumerate(sf.points):
        layers = layers_of(point)
        if paired and BASELINE_LAYER in layers and len(layers) >= 2:
            done[k] = _paired_point(designs[k])
        else:
            unpaired.append(k)
    if unpaired:  # as the runner does: these points' trials in rounds, all together
        import dataclasses

        rest = dataclasses.replace(sf, points=tuple(sf.points[k] for k in unpaired))
        fixed = plan_trials(rest, layers_of)
        warm = [t for r in range(first.warmup)
                for t in plan_round(rest, layers_of, -1 - r, lambda _p, _l: True, 0)]
        for k in unpaired:
            point = sf.points[k]
            trials = sum(1 for t in [*fixed, *warm] if t.point is point)
            done[k] = _unpaired_point(point, layers_of(point), trials)
    return RunSummary(sf.name, sf.path, sf.overrides, [done[k] for k in sorted(done)],
                      skipped, first.budget)


def _paired_point(design: PointDesign) -> PointSummary:
    point, layers = design.point, list(design.layers)
    s = point.scenario
    reasons = [f"{w.kind}: {w.why}" for w in design.workloads if w.why]
    summary = PointSummary(_where(point), layers, "paired")
    summary.not_estimated += _backend_note(layers, s)
    summary.measuring += design.expected_seconds()
    summary.not_estimated += [f"{kind}'s running time" for kind in design.unknown()]
    if design.interleaved():
        _session_summary(design, summary)
    if design.blocked():
        _blocks_summary(design, summary)
    summary.lines += [f"  {why}" for why in reasons]
    return summary


def _session_summary(design: PointDesign, summary: PointSummary) -> None:
    """The point's sessions: labs alive at once, each workload's rounds, the time."""
    from vnetbench.run.interleave import in_pieces, rounds_for
    from vnetbench.run.sessions import more_rounds
    from vnetbench.workloads.paired import session_seconds

    s = design.point.scenario
    layers = list(design.layers)
    every = s.workload_options()
    session = design.interleaved()
    paths = design.paths
    builds = s.pairing.builds
    summary.labs += paths * builds
    warm = max(1, s.warmup)
    parts = []
    fixed = most = paths * builds * LAB_S
    for k in session:
        kind, options = every[k]
        w = design.workloads[k]
        if w.design == "rounds":
            seconds = design.session_seconds(k) + design.runs(k) * TRIAL_S
            fixed += seconds
            most += seconds
            found = (f" (first {w.capacity_runs} closed-loop runs on {BASELINE_LAYER}'s path "
                     "find its capacity; every layer is offered the share of it)"
                     if w.capacity_runs else "")
            parts.append(f"{kind} {s.repeat} rounds, run whole in every lab" + found
                         + _too_few_rounds(s.repeat, 3 if s.noise_floor else 2))
            continue
        passes = PASS_S * len(design.groups) * builds
        fixed += design.session_seconds(k) + passes
        most += design.session_seconds(k) + passes
        parts.append(f"{kind} {w.rounds} rounds of {w.slice_s * 1000:g} ms"
                     + in_pieces(w.slice_s, w.piece_s))
        if s.until_cv is not None:  # more passes while an A/A floor stays wide
            cap = rounds_for(options, max(s.repeat, s.max_repeat), w.slice_s)
            done = w.rounds
            while (extra := more_rounds(done, cap)) > 0:
                most += session_seconds(extra, warm, paths, w.slice_s) + PASS_S
                done += extra
            if done > w.rounds:
                parts[-1] += f" (up to {done})"
    groups = design.groups
    summary.sessions += len(session) * len(groups) * builds
    a_a = " + a second baseline lab (A/A)" if s.noise_floor else ""
    sliced = any(design.workloads[k].design == "interleaved" for k in session)
    warming = f", +{warm} warm-up round(s) each interleaved workload" if sliced else ""
    if len(groups) > 1:
        each_aa = " and a second baseline lab (A/A)" if s.noise_floor else ""
        alive = (f"{len(groups)} sessions, one after another, {paths} labs in all "
                 f"({'; '.join(' + '.join(g) for g in groups)}{each_aa} in each)")
    else:
        alive = f"{paths} labs at once ({len(layers)} layers{a_a})"
    if builds > 1:
        alive += f", built {builds} times, the rounds split between the builds"
    summary.lines.append(
        f"session: {alive}; {', '.join(parts)}{warming}; ~{duration_text(fixed)}")
    summary.design = "paired: " + " + ".join(
        d for d in ("interleaved", "rounds")
        if any(design.workloads[k].design == d for k in session))
    summary.seconds += fixed
    summary.most_seconds += most


def _blocks_summary(design: PointDesign, summary: PointSummary) -> None:
    """The point's paired trial blocks: trials a round, a lab each, the time."""
    from vnetbench.run.design import plan_blocks

    point, layers = design.point, list(design.layers)
    s = point.scenario
    blocked = design.blocked()
    per_round = len(plan_blocks(point, layers, 0, 0, blocked))
    trials = design.block_trials()
    adaptive = (per_round * (max(s.repeat, s.max_repeat) - s.repeat)
                if s.until_cv is not None else 0)
    each = TRIAL_S + LAB_S + design.block_trial_seconds()
    summary.trials += trials
    summary.most_trials += trials + adaptive
    summary.labs += trials
    names = ", ".join(s.workload_options()[k][0] for k in blocked)
    summary.lines.append(
        f"paired trial blocks ({names}): {per_round} trials a round (ABBA) x "
        f"{s.repeat} round(s)" + (f" + {s.warmup} warm-up round(s)" if s.warmup else "")
        + f" = {trials} trials, a lab each; ~{duration_text(trials * each)}")
    summary.design = (summary.design + " + blocks" if design.interleaved() else "paired: blocks")
    summary.seconds += trials * each
    summary.most_seconds += (trials + adaptive) * each


def _unpaired_point(point: SweepPoint, layers: list[str], trials: int) -> PointSummary:
    s = point.scenario
    most = max(trials, s.model_copy(update={"layers": tuple(layers)}).trial_count())
    why = ("build only (no workloads)" if not s.workloads else
           "unpaired (pairing: off)" if not s.pairing.on else
           f"unpaired (no {BASELINE_LAYER} layer and another to pair)")
    summary = PointSummary(_where(point), layers, why, labs=trials, trials=trials,
                           most_trials=most)
    summary.not_estimated += _backend_note(layers, s)
    each = LAB_S + (TRIAL_S + _workloads_seconds(s.workload_options(), s.hosts,
                                                  summary.not_estimated)
                    if s.workloads else 0.0)
    aa = " (the baseline twice a round: A/A)" if (
        s.noise_floor and s.workloads and BASELINE_LAYER in layers) else ""
    text = (f"{trials} trial(s), a lab each: {s.repeat} round(s) of every layer{aa}"
            + (f" + {s.warmup} warm-up round(s)" if s.warmup else ""))
    if most > trials:
        text += f", up to {most} with adaptive rounds"
    summary.lines.append(f"{text}; ~{duration_text(trials * each)}")
    summary.seconds = trials * each
    summary.most_seconds = most * each
    quiet = s.platform.quiet
    if s.workloads and not s.pairing.on and quiet is not None:  # as runner._platform_controls
        summary.quiet_wait = most * quiet.wait
    return summary


def _too_few_rounds(rounds: int, members: int) -> str:
    """What a design of ``rounds`` rounds of ``members`` labs a pair (a layer beside one or
    two baseline labs) cannot do, for the plan's line (empty: it can call a difference)."""
    need = fewest_pairs(members)
    if rounds >= need:
        return ""
    return (f" (too few to call any difference: p = {best_p(rounds, members):.3f} at best, "
            f"even for one the same in every round; {need} rounds can)")
