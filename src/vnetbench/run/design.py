"""How a run is designed (pure: nothing is built here): its trials, its paired designs and
the one estimate of its measuring time that the runner, its sessions and ``vnetbench plan``
all use.

- **Trials**: a trial is (sweep point, layer, repetition); ``plan_trials`` gives every
  fixed trial of an unpaired run, round by round, each round in an order shuffled with the
  scenario's seed (with ``noise_floor`` the baseline twice a round, A/A groups ``a`` and
  ``b``); ``plan_blocks`` one round of paired trial blocks (each layer's trial next to a
  baseline trial, ABBA over two rounds, and one A/A block).
- **Paired designs** (``paired_designs``): per sweep point and workload, interleaved (paths
  alternated in slices), rounds (run whole in every live lab, round by round; a Docker
  layer's lab beside two baseline labs in a session of its own, ``session_groups``),
  blocks (a lab per trial) or unpaired, and why.
- **Time** (``PointDesign.expected_seconds``): the measuring time of a point's fixed rounds
  and blocks, from the workloads' durations; set-up is the plan's to add.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vnetbench.backends.catalog import get_layer
from vnetbench.errors import ScenarioError
from vnetbench.results.model import AA_LABEL, DESIGN_LABEL, PAIR_LABEL
from vnetbench.run.capacity import CAPACITY_RUNS, Capacities
from vnetbench.scenario.model import BASELINE_LAYER, Scenario
from vnetbench.scenario.sweep import ScenarioFile, SweepPoint
from vnetbench.workloads.base import WorkloadOptions

if TYPE_CHECKING:
    from vnetbench.backends.base import Backend


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
    capacity_runs: int = 0
    """Runs of its capacity probe on the baseline's path before its rounds (the first point
    of a load offered as shares of the baseline's capacity, ``run.capacity``)."""


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
        """Measuring time of workload ``k``'s fixed rounds in the point's sessions: every
        path one slice a round, warm-up rounds included (interleaved); every path's run
        whole once a round (rounds); nothing where its running time is unknown."""
        s = self.point.scenario
        w = self.workloads[k]
        builds = s.pairing.builds
        if w.design == "interleaved":
            return (w.rounds + builds * max(1, s.warmup)) * self.paths * w.slice_s
        if w.design == "rounds":
            options = s.workload_options()[k][1]
            probe = options.capacity_probe()
            found = w.capacity_runs * (run_seconds(probe, s.hosts) or 0.0) if probe else 0.0
            return self.runs(k) * (run_seconds(options, s.hosts) or 0.0) + found
        return 0.0

    def runs(self, k: int) -> int:
        """Runs of workload ``k`` in the fixed rounds (rounds: every path once a round, each
        of the sessions' builds with its own warm-up rounds)."""
        s = self.point.scenario
        if self.workloads[k].design != "rounds":
            return 0
        return (s.repeat + s.pairing.builds * s.warmup) * self.paths

    def block_trials(self) -> int:
        """Trials of the paired trial blocks (``plan_blocks``: each layer's block and the A/A
        block, two trials each, every fixed round and warm-up round)."""
        s = self.point.scenario
        if not self.blocked():
            return 0
        blocks = len(self.layers) - 1 + (1 if s.noise_floor else 0)
        return 2 * blocks * (s.repeat + s.warmup)

    def block_trial_seconds(self) -> float:
        """Measuring time of one block trial: its workloads' durations and warm-ups."""
        every = self.point.scenario.workload_options()
        hosts = self.point.scenario.hosts
        return sum(run_seconds(every[k][1], hosts) or 0.0 for k in self.blocked())

    def expected_seconds(self) -> float:
        """The point's measuring time: its sessions' fixed rounds and its block trials'
        workloads (set-up, adaptive rounds and workloads of unknown length not counted);
        the one estimate the runner's budget and ``vnetbench plan`` both use."""
        sessions = sum(self.session_seconds(k) for k in range(len(self.workloads)))
        return sessions + self.block_trials() * self.block_trial_seconds()

    def unknown(self) -> list[str]:
        """The workloads whose running time the estimate cannot know (``hadoop``, ``mpi``'s
        kernels): their kinds."""
        return [kind for kind, options in self.point.scenario.workload_options()
                if options.span_s() is None]

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
                found = [w.kind for w in mine if w.capacity_runs]
                parts += [f"{kind}: {BASELINE_LAYER}'s capacity found first ("
                          f"{CAPACITY_RUNS} closed-loop runs over its flows), then offered its shares"
                          for kind in found]
                parts.append(f"{names} in rounds over {self.paths} live labs" + (
                    f" ({len(self.groups)} sessions: "
                    + ", ".join("+".join(g) for g in self.groups) + ")"
                    if len(self.groups) > 1 else ""))
            else:
                why = "; ".join(sorted({w.why for w in mine if w.why}))
                parts.append(f"{names} in {'paired trial blocks' if design == 'blocks' else 'unpaired trials'}"
                             + (f" ({why})" if why else ""))
        builds = s.pairing.builds
        again = f" (each session's labs built {builds} times, the rounds split between them)" \
            if builds > 1 and (self.interleaved()) else ""
        return f"{where}: " + "; ".join(parts) + again


def paired_designs(sf: ScenarioFile, layers_of: Callable[[SweepPoint], list[str]]
                   ) -> list[PointDesign]:
    """The design of every sweep point of a paired run (``pairing: on``): which workloads
    interleave their paths, which run whole in rounds over the live labs, which in paired
    trial blocks, which (no baseline) unpaired."""
    from vnetbench.run.interleave import cut_for, rounds_for

    out = []
    capacities: set[str] = set()
    for point in sf.points:
        s = point.scenario
        layers = layers_of(point)
        designs = []
        no_base = BASELINE_LAYER not in layers or len(layers) < 2
        rotation = _rotation_refusal(s, layers)
        refusal = _lab_refusal(s) or rotation
        apart = _namespace_refusal(s, layers)
        for kind, options in s.workload_options():
            if no_base:
                designs.append(WorkloadDesign(kind, "unpaired", f"no {BASELINE_LAYER} layer to "
                                              "pair with"))
                continue
            slicing = options.slicing
            why = refusal or _interleave_refusal(kind, options) or apart
            probe = options.capacity_probe()
            if probe is not None and (not why or rotation or not options.rotates):
                raise ScenarioError(
                    f"{sf.path}: {kind}: a load offered as a share of {BASELINE_LAYER}'s "
                    "capacity is measured in a session's rounds, where the capacity is found "
                    f"first; at {' '.join(f'{k}={v}' for k, v in point.axes.items()) or 'this point'} "
                    f"it cannot be ({rotation or 'the workload runs in trial blocks'}): give "
                    "rate (requests a second) instead")
            if why and not rotation and options.rotates:
                key = Capacities.key(point, probe) if probe is not None else ""
                designs.append(WorkloadDesign(kind, "rounds", why, capacity_runs=int(
                    bool(key) and key not in capacities) * CAPACITY_RUNS))
                capacities.add(key)
            elif why:
                designs.append(WorkloadDesign(kind, "blocks", why))
            elif slicing is not None:  # always, here: what does not slice has a refusal
                cut = cut_for(slicing, s.pairing, s.link)
                designs.append(WorkloadDesign(kind, "interleaved", "",
                                              rounds_for(options, s.repeat, cut.slice_s),
                                              cut.slice_s, cut.piece_s))
        # per-node CPU limits forbid interleaving, not sessions: a Docker lab still lives
        # beside the baseline's alone
        groups = session_groups(s, layers) if not rotation else (tuple(layers),)
        out.append(PointDesign(point, tuple(layers), tuple(designs),
                               groups if len(groups) > 1 else ()))
    return out


def _interleave_refusal(kind: str, options: Any) -> str:
    from vnetbench.run.interleave import interleave_refusal

    return interleave_refusal(kind, options) or ""


def _lab_refusal(s: Scenario) -> str:
    """Why no workload of ``s`` can interleave its labs' paths, whatever the layers (empty:
    nothing in the scenario forbids it)."""
    if s.resources.resources().any:
        return "per-node CPU limits would not hold a client shared by every lab"
    return ""


def _rotation_refusal(s: Scenario, layers: list[str]) -> str:
    """Why the labs of ``s`` cannot be kept alive for its sessions (empty: they can)."""
    if s.busy:
        return "busy neighbours of every lab would run at once"
    alone = sorted({b.name for b in (_backend(s, n) for n in layers) if b.sessions == "alone"})
    if alone:
        return f"the {', '.join(alone)} backend's labs are built one at a time"
    return ""


def session_groups(s: Scenario, layers: list[str]) -> tuple[tuple[str, ...], ...]:
    """The layers whose labs live together for one session: the layers of backends that
    share (``Backend.sessions``) with the baseline in one, each layer of a backend that lives
    beside it with the baseline in one of its own (every session with its own A/A pair)."""
    apart = [name for name in layers if _backend(s, name).sessions == "beside"]
    together = tuple(name for name in layers if name not in apart)
    groups = [together] if len(together) > 1 or not apart else []
    groups += [(BASELINE_LAYER, name) for name in apart if name != BASELINE_LAYER]
    return tuple(groups)


def _namespace_refusal(s: Scenario, layers: list[str]) -> str:
    """Why the labs of ``layers`` cannot be reached from one client (empty: they can)."""
    apart = sorted({b.name for b in (_backend(s, n) for n in layers) if not b.joinable})
    if apart:
        return (f"the {', '.join(apart)} backend's nodes are not namespaces of this host: "
                "run whole in rounds")
    return ""


def _backend(s: Scenario, layer: str) -> type[Backend]:
    """The backend that realises ``s``'s lab of ``layer`` (as ``scenario.specs.lab_spec``
    decides it)."""
    from vnetbench.backends.registry import spec_backend_class
    from vnetbench.scenario.specs import lab_spec

    return spec_backend_class(lab_spec(s, layer), get_layer(layer))


def build_rounds(rounds: int, builds: int) -> list[range]:
    """The fixed rounds ``0 .. rounds-1`` split between ``builds`` builds of a session's labs,
    in order, as evenly as they go (a later build may take one more), numbered on across
    builds so that every round of a session is a pair of its own."""
    builds = max(1, min(builds, rounds))
    edges = [rounds * b // builds for b in range(builds + 1)]
    return [range(edges[b], edges[b + 1]) for b in range(builds)]


def run_seconds(options: WorkloadOptions, hosts: int) -> float | None:
    """Seconds one run of a workload measures in a lab of ``hosts`` emulated hosts (its
    duration and warm-up, times the measurements it makes one after another: rr over every
    circuit; a ``concurrent`` group: its first member, the load), or None when it does not
    say."""
    span = options.span_s()
    return None if span is None else span * options.measurements(hosts)
