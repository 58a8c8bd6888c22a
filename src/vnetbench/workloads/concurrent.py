"""``concurrent``: workloads that run at the same time in one trial, e.g. latency under load
(flent's RRUL: request/response while streams fill the path).

    workloads:
      - concurrent:
          workloads:
            - stream: {streams: 4, duration: 7s}    # the load: starts first
            - rr: {duration: 5s}                    # measured while the load runs
          settle: 1s

Every member is prepared (its servers started) one after another, then run in a thread of
its own: the first at once, the others ``settle`` seconds later (the load fills the path
first); then every member is cleaned up. Each member's samples keep their own ``workload``
label (``rr``, ``stream``) and carry ``beside``: the other members' names, ``+``-joined
(``beside=stream`` on rr's samples, ``beside=rr`` on the stream's), so the report sets "rr
beside stream" apart from a plain rr (a configuration of its own in the headline). The
trial's evidence (CPU, devices, cgroups) covers the whole group: it is labelled
``workload=concurrent``.

A member given no ``port`` gets its workload's default port plus 1000 per position (7000,
8000, ...) so two probe servers in one node never collide; ports given explicitly must
differ. When every member has a ``duration``, the first must outlast the others (``settle``
+ their duration + warmup): a label saying "beside the load" would otherwise be a guess.
Members cannot be swept or nested; a member's raw output goes to ``raw/concurrent-<k>-<kind>/``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ConfigDict, Field, ValidationError, model_validator

from vnetbench.errors import VnetbenchError, WorkloadError, WorkloadSkipped
from vnetbench.results.histogram import HistogramRecord
from vnetbench.results.model import Sample
from vnetbench.units import Duration
from vnetbench.workloads.base import Entry, Workload, WorkloadBase, WorkloadOptions, registry_entry

if TYPE_CHECKING:
    from vnetbench.workloads.labview import LabView

PORT_STEP = 1000
"""Default ports of the k-th member move up by k times this."""
MAX_MEMBERS = 8


class ConcurrentOptions(WorkloadOptions):
    """Workloads run at once (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    min_nodes: ClassVar[int] = 2
    rotates: ClassVar[bool] = False
    """A group starts its members' servers per run: measured in trial blocks."""

    workloads: tuple[dict[str, dict[str, Any]], ...]
    """The members, as in a scenario's ``workloads``: the first is the load."""
    settle: Duration = Field(1.0, ge=0.0, le=600.0)
    """Seconds between the first member's start and the others'."""

    @model_validator(mode="before")
    @classmethod
    def _list_alone(cls, data: object) -> object:
        """``concurrent: [{stream: ...}, {rr: ...}]`` is short for ``{workloads: [...]}``."""
        return {"workloads": data} if isinstance(data, list) else data

    @model_validator(mode="after")
    def _members(self) -> ConcurrentOptions:
        from vnetbench.workloads.registry import NAMES, workload_model

        if not 2 <= len(self.workloads) <= MAX_MEMBERS:
            raise ValueError(f"workloads: give 2 to {MAX_MEMBERS} workloads to run at once")
        validated: list[dict[str, dict[str, Any]]] = []
        taken: dict[int, str] = {}
        for k, entry in enumerate(self.workloads):
            if len(entry) != 1:
                raise ValueError(f"workloads.{k}: one workload name with its options")
            (kind, opts), = entry.items()
            if kind == "concurrent" or kind not in NAMES:
                allowed = ", ".join(n for n in NAMES if n != "concurrent")
                raise ValueError(f"workloads.{k}: unknown workload {kind!r}; allowed: {allowed}")
            model = workload_model(kind)
            opts = dict(opts or {})
            if "port" in model.model_fields and "port" not in opts:
                default = model.model_fields["port"].default
                if isinstance(default, int):
                    opts["port"] = default + PORT_STEP * k
            try:
                member = model.model_validate(opts)
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"])
                msg = str(err["msg"]).removeprefix("Value error, ")
                raise ValueError(f"workloads.{k}.{kind}: {where + ': ' if where else ''}"
                                 f"{msg}") from None
            for port in member.service_ports():
                if port in taken:
                    raise ValueError(f"workloads.{k}.{kind}: port {port} is also "
                                     f"{taken[port]}'s; give each member its own port")
                taken[port] = kind
            validated.append({kind: member.model_dump()})
        self.workloads = tuple(validated)
        self._outlasts()
        return self

    def _outlasts(self) -> None:
        spans = [options.span_s() for _, options in self.members()]
        if any(span is None for span in spans):
            return
        load, others = spans[0], spans[1:]
        need = self.settle + max(s for s in others if s is not None)
        if load is not None and load < need:
            first = next(iter(self.workloads[0]))
            raise ValueError(f"the first workload ({first}, the load) runs {load:g} s but the "
                             f"others need {need:g} s (settle + their duration): make the "
                             f"load at least {need:g} s long")

    def members(self) -> list[tuple[str, WorkloadOptions]]:
        from vnetbench.workloads.registry import workload_model

        return [(kind, workload_model(kind).model_validate(opts))
                for entry in self.workloads for kind, opts in entry.items()]

    def service_ports(self) -> tuple[int, ...]:
        from vnetbench.workloads.registry import service_ports

        return service_ports([options for _, options in self.members()])

    def span_s(self) -> float | None:
        """The first member's: the load, which outlasts the others (``_outlasts``)."""
        members = self.members()
        return members[0][1].span_s() if members else None


class ConcurrentWorkload(WorkloadBase):
    """The members of a ``concurrent`` group, run at once (see the module docstring)."""

    name = "concurrent"
    names_members: ClassVar[bool] = True
    """Its samples carry their member's ``workload`` label; the runner keeps it."""

    def __init__(self, options: ConcurrentOptions) -> None:
        from vnetbench.workloads.registry import create_workload

        self.options = options
        self.kinds: list[str] = []
        self.members: list[Workload] = []
        self.labels: list[dict[str, str]] = []
        for kind, member in options.members():
            self.kinds.append(kind)
            self.members.append(create_workload(kind, member))
            self.labels.append(member.labels())
        self._prepared: list[Workload] = []
        self.histograms: list[HistogramRecord] = []

    def beside(self, k: int) -> str:
        return "+".join(kind for j, kind in enumerate(self.kinds) if j != k)

    def prepare(self, lab: LabView) -> None:
        try:
            for member in self.members:
                self._prepared.append(member)
                member.prepare(lab)
        except BaseException:
            with contextlib.suppress(VnetbenchError, OSError):
                self.cleanup(lab)  # what the members before it started
            raise

    def run(self, lab: LabView, raw_dir: Path) -> list[Sample]:
        if len(self._prepared) != len(self.members):
            raise WorkloadError("concurrent: run() before prepare()")
        self.histograms = []
        started = threading.Event()
        t0 = time.monotonic()

        def one(k: int) -> list[Sample]:
            if k == 0:
                started.set()
            else:
                started.wait()
                time.sleep(max(0.0, t0 + self.options.settle - time.monotonic()))
            return self.members[k].run(lab, raw_dir / f"concurrent-{k}-{self.kinds[k]}")

        with ThreadPoolExecutor(max_workers=len(self.members)) as pool:
            futures = [pool.submit(one, k) for k in range(len(self.members))]
            outcomes: list[list[Sample] | BaseException] = []
            for future in futures:
                try:
                    outcomes.append(future.result())
                except (VnetbenchError, OSError) as exc:
                    outcomes.append(exc)
        failed = [(k, o) for k, o in enumerate(outcomes) if isinstance(o, BaseException)]
        if failed:
            k, error = failed[0]
            if isinstance(error, WorkloadSkipped):
                raise error
            raise WorkloadError(f"concurrent: {self.kinds[k]} (workload {k}) failed: "
                                f"{error}") from error
        samples: list[Sample] = []
        for k, got in enumerate(outcomes):
            assert not isinstance(got, BaseException)
            labels = {**self.labels[k], "workload": self.kinds[k], "beside": self.beside(k)}
            samples += [s.with_labels(**labels) for s in got]
            hists = list(self.members[k].histograms)
            self.histograms += [h.with_labels(**labels) for h in hists]
        return samples

    def cleanup(self, lab: LabView) -> None:
        problems = []
        for member in reversed(self._prepared):
            try:
                member.cleanup(lab)
            except (VnetbenchError, OSError) as exc:
                problems.append(str(exc))
        self._prepared = []
        if problems:
            raise WorkloadError(f"concurrent: cleaning up: {'; '.join(problems)}")


CONCURRENT_WORKLOADS: dict[str, Entry] = {
    "concurrent": registry_entry(ConcurrentOptions, ConcurrentWorkload),
}
"""Scenario key -> (options model, factory) for the registry."""
