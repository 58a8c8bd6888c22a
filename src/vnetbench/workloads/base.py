"""The contract between the runner and a workload.

A workload is built from its validated options (a pydantic model), then for each trial:
``prepare(lab)`` starts what it needs inside the lab's nodes (servers), ``run(lab, raw_dir)``
measures and returns samples (keeping each tool's raw output under ``raw_dir``), and
``cleanup(lab)`` stops what ``prepare`` started. Processes started with ``node.spawn`` are
also stopped by the lab's teardown, so a failing workload leaves nothing behind.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol, TypeVar, cast

from pydantic import BaseModel

from vnetbench.errors import WorkloadError
from vnetbench.workloads.labview import LabView

if TYPE_CHECKING:
    from vnetbench.results.histogram import HistogramRecord
    from vnetbench.results.model import Sample
    from vnetbench.workloads.paired import PairedRun, PassSettings, SessionPath, Slicing


def native_sides(client: str, server: str) -> str:
    """The sides that run on their host's own stack (``host``) rather than in the layer, as
    a placement label reads them: ``client-host``, ``server-host``,
    ``client-host+server-host``; empty when both run in the layer."""
    return "+".join(f"{side}-host" for side, where in (("client", client), ("server", server))
                    if where == "host")


@dataclass(frozen=True)
class Offer:
    """What one run of a workload offers the lab, as its samples are labelled: its transport
    (the samples' ``protocol`` label; None: it has none), the bit rate each sender is paced
    at (0: unpaced) and how many senders a sample of the whole run sums (a media run's
    streams; a sample labelled ``stream`` is one sender's)."""

    protocol: str | None = None
    bitrate_bps: float = 0.0
    summed_senders: int = 1


class WorkloadOptions(BaseModel):
    """The base of every workload's options model: what a workload declares beyond its
    fields, each with its default here (a model overrides what differs)."""

    min_nodes: ClassVar[int] = 1
    """Nodes the workload needs at least (a client and a server: 2)."""
    extra_nodes: ClassVar[int] = 0
    """Nodes the lab gets beyond the scenario's ``nodes`` (Hadoop's master: 1)."""
    many_threaded: ClassVar[bool] = False
    """Its nodes run many-threaded servers (JVMs, MariaDB, MPI ranks): pinning each node to
    one CPU would cap it at one core, so a run leaves them unpinned unless told."""
    launches: ClassVar[bool] = False
    """A program it runs in one node starts programs in the others (MPI's launcher): a lab
    whose nodes cannot reach each other that way on their own (pods) is given the means."""
    rotates: ClassVar[bool] = True
    """It can run whole once a round in every live lab of a session (not so a Hadoop
    cluster, which per lab alive at once would not fit a small host, nor a concurrent group,
    which starts its members' servers per run: those are measured in trial blocks)."""
    slicing: ClassVar[Slicing | None] = None
    """How its time is cut when one client alternates between the labs (``workloads.paired``);
    None: it runs whole programs."""
    paired_client: ClassVar[str] = ""
    """``module:Class`` of its paired client (a ``PairedRun`` made from the workload's name,
    its options, the paths and a ``PassSettings``), loaded only when it interleaves."""

    def labels(self) -> dict[str, str]:
        """Labels its samples carry beyond the trial's (a variant: ``protocol``, ...)."""
        return {}

    def service_ports(self) -> tuple[int, ...]:
        """Ports it serves on: a layer that publishes ports before anything runs (Docker's
        ``-p``) publishes these."""
        return ()

    def interleave_refusal(self) -> str | None:
        """Why these options of a workload that slices cannot be cut into slices measured by
        one client alternating between labs (None: they can): the words follow the
        workload's name."""
        return None

    def paired_run(self, kind: str, paths: Sequence[SessionPath],
                   settings: PassSettings) -> PairedRun:
        """Its client for one pass over ``paths`` (``paired_client``, for a workload that
        slices)."""
        if self.slicing is None or not self.paired_client:
            raise WorkloadError(f"{kind} cannot be interleaved")
        module, _, name = self.paired_client.partition(":")
        client = getattr(importlib.import_module(module), name)
        return cast("PairedRun", client(kind, self, paths, settings))

    def offer(self) -> Offer:
        """What a run offers the lab (a study's bounds read it: a paced stream measures its
        pace)."""
        return Offer()

    def capacity_probe(self) -> WorkloadOptions | None:
        """The options that find the baseline's capacity when these offer a share of it (an
        open loop's ``share``), measured first in the run (``run.capacity``); None: they
        offer a load of their own."""
        return None

    def at_capacity(self, capacity: float) -> WorkloadOptions:
        """These options offering their share of ``capacity`` (operations a second)."""
        del capacity
        return self

    def duration_s(self) -> float | None:
        """Seconds one run measures: its ``duration`` option; None for a workload that runs
        until it is done (Hadoop's jobs, a command)."""
        value = self.__dict__.get("duration")
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
            else None

    def warmup_s(self) -> float:
        """Seconds of warm-up before it measures: its ``warmup`` option, else none."""
        value = self.__dict__.get("warmup")
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
            else 0.0

    def span_s(self) -> float | None:
        """Seconds one run lasts (duration and warm-up), or None when it does not say."""
        duration = self.duration_s()
        return None if duration is None else duration + self.warmup_s()

    def measurements(self, hosts: int) -> int:
        """Measurements of ``span_s`` one run makes, one after another, in a lab of ``hosts``
        emulated hosts (rr over every circuit: one per pair of hosts)."""
        del hosts
        return 1


class Workload(Protocol):
    """What the runner drives. ``names_members``: its samples carry their own ``workload``
    label (a concurrent group's members); ``histograms``: the latency histograms of its last
    run. ``WorkloadBase`` gives both their defaults."""

    name: str
    names_members: ClassVar[bool]

    @property
    def histograms(self) -> Sequence[HistogramRecord]: ...

    def prepare(self, lab: LabView) -> None: ...

    def run(self, lab: LabView, raw_dir: Path) -> list[Sample]: ...

    def cleanup(self, lab: LabView) -> None: ...


class WorkloadBase:
    """The defaults of a workload's optional parts (see ``Workload``); every workload class
    derives from it."""

    names_members: ClassVar[bool] = False
    histograms: Sequence[HistogramRecord] = ()


class WorkloadSpec(Protocol):
    """A registry entry: the options model and how to make the workload from options."""

    options: type[BaseModel]

    def create(self, options: BaseModel) -> Workload: ...


Factory = Callable[[WorkloadOptions], Workload]
Entry = tuple[type[WorkloadOptions], Factory]
"""A registry entry: the options model, and how to make the workload from its options."""
OptionsT = TypeVar("OptionsT", bound=WorkloadOptions)


def registry_entry(model: type[OptionsT], make: Callable[[OptionsT], Workload]) -> Entry:
    """The entry of a workload whose options are ``model``: ``make`` is given validated
    options of that model (another model's options are a TypeError, a bug of the caller)."""
    def create(options: WorkloadOptions) -> Workload:
        if not isinstance(options, model):
            raise TypeError(f"expected {model.__name__}, got {type(options).__name__}")
        return make(options)
    return model, create
