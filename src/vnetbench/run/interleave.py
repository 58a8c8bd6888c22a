"""Interleaved paths: the design that measures every lab of a comparison in alternation.

The labs of every layer under comparison (and two of the baseline, the A/A pair) are alive
at once; one client (the workload's own, ``WorkloadOptions.paired_run``: the probe's
``vnetbench-probe paired``) visits each in turn in short pieces, in a fresh random order each
cycle, so a layer's slice and its baseline's of one round were measured in the same tenths
of a second (``results.pairing``). Here: how a workload's time is cut (``cut_for``: the
workload's ``slicing`` under the scenario's ``pairing`` and ``link``), how many rounds, what
keeps a workload or a lab from interleaving, and the labels of a path. Device and TCP
counters of each lab are read around the whole session (``sessions.session_evidence``).

What can interleave is what a workload declares (``slicing``, ``interleave_refusal``: rr
over TCP with one transaction in flight, crr, forward TCP streams), between nodes whose
network namespaces are on this host; every other workload (or a lab on VMs or on other
computers, or with per-node CPU limits a shared client would escape) runs whole in rounds
over the live labs, or in paired trial blocks (``design``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vnetbench.results.model import AA_LABEL
from vnetbench.scenario.model import LinkModel, PairingModel
from vnetbench.workloads.paired import Slicing

if TYPE_CHECKING:
    from vnetbench.backends.lab import Lab
    from vnetbench.workloads.base import WorkloadOptions

ROTATING = "rounds"
"""Design of a workload run whole in every lab of a session, round by round in a fresh random
order (the labs alive throughout): sysbench, MPI, the peer tools..."""
DEFAULT_WARM = 3
"""Round trips at the start of each visit run but not recorded, for a workload whose
``slicing`` warms: the first ones after a path's idle time are slower (its server and the
layer's daemons wake up), which a single-path run never waits for (docs/measurements.md:
"Pieces")."""
PIECE_ROUND_TRIPS = 20
"""A piece lasts at least this many round trips of an emulated link's delay (a WAN path is
not cut finer than its round trip allows)."""
MIN_ROUNDS = 8
"""Fewest rounds: fewer could not make a difference significant within pairs."""


@dataclass(frozen=True)
class Cut:
    """How an interleaved workload's time is cut: ``slice_s`` per path and round, visited
    ``piece_s`` at a time, the first ``settle_s`` and ``warm`` round trips of each visit run
    and not recorded."""

    slice_s: float
    piece_s: float
    settle_s: float
    warm: int


def cut_for(slicing: Slicing, pairing: PairingModel, link: LinkModel) -> Cut:
    """The cut of a workload that slices as ``slicing`` under the scenario's ``pairing`` and
    ``link``: its settings, else the workload's defaults (a piece no shorter than
    ``PIECE_ROUND_TRIPS`` round trips of the longest emulated delay; ``DEFAULT_WARM`` round
    trips to warm each visit where the link adds no delay: a delayed round trip is the
    delay's, its wake-up lost in it, and a few of them would take most of a visit)."""
    slice_s = pairing.slice or slicing.slice_s
    piece_s = pairing.piece or slicing.piece_s
    delay = max([link.delay, *(p.delay for p in link.pairs)]) + link.jitter
    if pairing.piece is None:
        piece_s = max(piece_s, PIECE_ROUND_TRIPS * 2.0 * delay)
    piece_s = min(piece_s, slice_s)
    warm = 0
    if slicing.warms:
        warm = (DEFAULT_WARM if delay == 0 else 0) if pairing.warm is None else pairing.warm
    return Cut(slice_s, piece_s, pairing.settle, warm)


def interleave_refusal(kind: str, options: WorkloadOptions) -> str | None:
    """Why workload ``kind`` with ``options`` cannot be interleaved (None: it can): it
    declares no ``slicing``, or its options forbid it (``WorkloadOptions.interleave_refusal``)."""
    if options.slicing is None:
        return f"{kind} runs whole programs (it cannot be cut into slices)"
    why = options.interleave_refusal()
    return f"{kind} {why}" if why is not None else None


def lab_refusal(lab: Lab) -> str | None:
    """Why the paths of ``lab`` cannot be reached from one client (None: they can)."""
    if not lab.backend.joinable:
        return f"the {lab.backend.name} backend's nodes are not namespaces of this host"
    if lab.topo.resources.any:
        return "per-node CPU limits would not hold a client shared by every lab"
    return None


@dataclass(frozen=True)
class PathLab:
    """One path of a session: its lab and the labels of its samples (layer, aa, ...)."""

    name: str
    lab: Lab
    labels: dict[str, str]


def in_pieces(slice_s: float, piece_s: float) -> str:
    """How a slice is cut, for progress lines and plans (empty when it is not)."""
    return f" in {piece_s * 1000:g} ms pieces" if 0 < piece_s < slice_s else ""


def rounds_for(options: WorkloadOptions, repeat: int, slice_s: float) -> int:
    """Rounds measuring each path as long as ``repeat`` trials of ``duration`` would."""
    duration = options.duration_s() or 1.0
    return max(MIN_ROUNDS, math.ceil(duration * repeat / slice_s - 1e-9))


def path_labels(base: dict[str, str], layer: str, aa: str) -> dict[str, str]:
    """A path's trial labels: the point's, its layer and (baseline paths) its A/A group."""
    labels = {**base, "layer": layer}
    if aa:
        labels[AA_LABEL] = aa
    return labels
