"""What a workload that interleaves declares, and what its paired client takes and gives.

A workload whose time can be cut into slices measured by one client alternating between the
live labs of a session (the probe's rr, crr and forward TCP streams) says so on its options
model: ``WorkloadOptions.slicing`` (its default slice per path and round, its piece per visit,
whether each visit's first round trips run unrecorded), ``interleave_refusal`` (the options
that forbid it) and ``paired_run`` (its client for one pass over the paths). The run
(``run.sessions``) decides when to interleave and how many rounds, and never names the
workload; the client answers with the samples and histograms each slice would have given
in a run of its own (``SessionResult``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from vnetbench.workloads.labview import LabView

if TYPE_CHECKING:
    from vnetbench.host.cgroups import NodeCgroup
    from vnetbench.lab.placement import CpuPlacement
    from vnetbench.results.histogram import HistogramRecord
    from vnetbench.results.model import Sample

INTERLEAVED = "interleaved"
"""The ``design`` label of an interleaved slice's samples."""
DEFAULT_PIECE = 0.01
"""The shortest piece of an interleaved slice by default (request/response: ten visits to
each path per 100 ms round; docs/measurements.md: "Pieces")."""


@dataclass(frozen=True)
class Slicing:
    """How a workload's time is cut by default: ``slice_s`` per path and round, visited
    ``piece_s`` at a time; ``warms``: the first round trips of each visit run unrecorded (a
    path's first ones after its idle time are slower: its server and the layer's daemons wake
    up, which a run of its own never waits for)."""

    slice_s: float
    piece_s: float
    warms: bool = False


class SessionLab(LabView, Protocol):
    """What a paired client sees of a lab beyond what a workload sees: where its nodes'
    processes are placed, and its daemons (their cgroup, for the CPU a slice costs them, and
    their PIDs, for a real-time priority)."""

    placement: CpuPlacement

    def infra(self) -> NodeCgroup:
        """The cgroup of the lab's own daemons."""
        ...

    def daemon_pids(self) -> dict[str, int]:
        """The PIDs of the lab's daemons, by role."""
        ...


class SessionPath(Protocol):
    """One path of a session: its name, its lab and the labels of its samples."""

    @property
    def name(self) -> str: ...

    @property
    def lab(self) -> SessionLab: ...

    @property
    def labels(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class PassSettings:
    """How one pass over a session's paths is measured: ``rounds`` rounds (after
    ``warmup_rounds`` unrecorded ones) of ``slice_s`` per path, visited ``piece_s`` at a time
    in a fresh random order from ``seed``, each visit's first ``settle_s`` and ``warm`` round
    trips unrecorded; rounds numbered from ``first_round`` within session ``session``;
    ``realtime``: the client, the servers and the layers' daemons under SCHED_FIFO."""

    session: int
    rounds: int
    slice_s: float
    piece_s: float
    settle_s: float = 0.0
    warm: int = 0
    warmup_rounds: int = 1
    seed: int = 1
    first_round: int = 0
    realtime: bool = False


@dataclass
class SessionResult:
    """What a pass measured: every slice's samples and the paths' merged histograms."""

    samples: list[Sample] = field(default_factory=list)
    histograms: list[HistogramRecord] = field(default_factory=list)
    wall_s: float = 0.0


class PairedRun(Protocol):
    """A workload's client for one pass over a session's paths."""

    settings: PassSettings
    realtime_set: int
    """Processes put under SCHED_FIFO."""
    realtime_missed: list[str]
    """Those that could not be."""

    def expected_seconds(self) -> float:
        """Seconds the pass measures (its set-up not counted)."""
        ...

    def run(self, raw_dir: Path) -> SessionResult:
        """Measure the pass (its raw output under ``raw_dir``)."""
        ...


def session_seconds(rounds: int, warmup_rounds: int, paths: int, slice_s: float) -> float:
    """Seconds an interleaved pass measures: every path one slice a round, warm-up rounds
    included (its set-up and the client's start not counted)."""
    return (rounds + warmup_rounds) * paths * slice_s
