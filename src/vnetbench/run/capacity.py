"""The baseline's capacity, found first: a workload that offers a share of it (an open loop's
``rr: {share: 0.5}``) is measured at the same rate on every layer, that share of what the
baseline's path sustains.

The capacity is found once per run and configuration (the baseline's lab as the point
builds it, and the workload's options but the share): the workload's ``capacity_probe``
(for ``rr``: the closed loop over the same flows, one request in flight on each; an open
loop offered more than a path answers measures a growing queue, not a rate) run
``CAPACITY_RUNS`` times whole on the baseline's path (``host/a``) of the first session that
needs it, its median rate kept. Every share of every later point is then a fixed rate, so
every layer's curve is drawn at the same offered loads, and two runs draw theirs at shares
of their own baseline. The capacity is recorded as samples (``capacity_tps``, each run's
value, ``design: capacity``) beside the points measured at its shares.
"""

from __future__ import annotations

import contextlib
import json
import statistics
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from vnetbench.errors import VnetbenchError, WorkloadError
from vnetbench.results.model import DESIGN_LABEL, Sample
from vnetbench.scenario.model import BASELINE_LAYER
from vnetbench.scenario.specs import lab_spec
from vnetbench.scenario.sweep import SweepPoint
from vnetbench.workloads.base import WorkloadOptions
from vnetbench.workloads.labview import LabView

CAPACITY_RUNS = 3
"""Whole runs of the capacity probe; their median is the capacity."""
CAPACITY_DESIGN = "capacity"
"""The design label of the capacity's samples (kept apart from every comparison)."""


@dataclass
class Capacities:
    """The capacities found so far in a run, by configuration (see the module docstring)."""

    found: dict[str, float] = field(default_factory=dict)

    @staticmethod
    def key(point: SweepPoint, probe: WorkloadOptions) -> str:
        """The configuration a capacity belongs to: the baseline's lab at ``point`` and the
        capacity probe's options (the share left out)."""
        spec = lab_spec(point.scenario, BASELINE_LAYER)
        return json.dumps([repr(spec), type(probe).__name__, probe.model_dump(mode="json")],
                          sort_keys=True, default=str)

    def resolve(self, kind: str, options: WorkloadOptions, point: SweepPoint,
                measure: Callable[[WorkloadOptions], list[float]],
                record: Callable[[list[Sample]], None], labels: dict[str, str],
                progress: Callable[[str], None]) -> WorkloadOptions:
        """``options`` at their share of the baseline's capacity (unchanged when they offer
        none), the capacity found first with ``measure`` (the achieved rate of each run of
        the probe on the baseline's path) when this configuration has none yet."""
        probe = options.capacity_probe()
        if probe is None:
            return options
        key = self.key(point, probe)
        if key not in self.found:
            rates = [r for r in measure(probe) if r > 0]
            if not rates:
                raise WorkloadError(f"{kind}: the baseline's path answered nothing when its "
                                    "capacity was sought; no share of it can be offered")
            self.found[key] = statistics.median(rates)
            record([Sample("capacity_tps", r, "1/s",
                           {**labels, "workload": kind, "repetition": str(n),
                            DESIGN_LABEL: CAPACITY_DESIGN}) for n, r in enumerate(rates)])
            progress(f"{kind}: the baseline's capacity {self.found[key]:,.0f}/s (median of "
                     f"{len(rates)} closed-loop run(s) over the same flows: {', '.join(f'{r:,.0f}' for r in rates)}/s)")
        return options.at_capacity(self.found[key])


def measure_capacity(kind: str, probe: WorkloadOptions, lab: LabView, raw_dir: Path,
                     idle: Callable[[], AbstractContextManager[None]]) -> list[float]:
    """The rate (``tps``) of each of ``CAPACITY_RUNS`` whole runs of ``probe`` in
    ``lab`` (its servers started once), the raw output kept under ``raw_dir``."""
    from vnetbench.workloads.labelled import labelled_run
    from vnetbench.workloads.registry import create_workload

    workload = create_workload(kind, probe)
    workload.prepare(lab)
    try:
        rates = []
        for n in range(CAPACITY_RUNS):
            with idle():
                samples, _ = labelled_run(workload, lab, raw_dir / f"{kind}-capacity-r{n}",
                                          {})
            rates += [s.value for s in samples if s.metric == "tps"]
        return rates
    finally:
        with contextlib.suppress(VnetbenchError, OSError):
            workload.cleanup(lab)
