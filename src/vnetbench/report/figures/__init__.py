"""The report's figures: one module per family (``common``: what they share; ``sweep``,
``latency``, ``bars``, ``series``, ``drops``; ``breakdown``: the why figure, placed beside the
why section) and the order they appear in the page, ``FIGURES``.

A ``Figure`` turns what the report knows (``FigureInput``: the samples, the histograms, the
scenario, the baseline, the conditions chosen) into its entries: name, title, the chart (None:
nothing to draw, and the page says why), what it draws from and its metrics. Adding a figure
(a workload's own, say): a function returning a ``Chart`` in a module of this package, and a
line in ``FIGURES``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from vnetbench.report.figures import bars, drops, latency, series, sweep
from vnetbench.report.figures.common import PCTLS, Chart
from vnetbench.report.knee import node_cores
from vnetbench.report.tables import Labelled
from vnetbench.results.histogram import HistogramRecord
from vnetbench.results.metrics import SCALING_METRICS
from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario

ChartEntry = tuple[str, str, Chart | None, Sequence[Labelled], Sequence[str],
                   Mapping[str, str] | None]
"""(name, title, chart or None, what it draws from, its metrics, the conditions)."""


@dataclass(frozen=True)
class FigureInput:
    """What a figure may draw from."""

    samples: Sequence[Sample]
    trial_samples: Sequence[Sample]
    """The samples labelled with their trial (and so with its sweep point)."""
    histograms: Sequence[HistogramRecord]
    scenario: RecordedScenario
    environment: Mapping[str, object]
    baseline: str
    where: Mapping[str, str] | None


class Figure(Protocol):
    """A figure, or a family of them (one per swept axis)."""

    def entries(self, given: FigureInput) -> list[ChartEntry]:
        """Its entries in page order."""
        ...


@dataclass(frozen=True)
class OneFigure:
    """A figure drawn once per report: ``draw`` makes it, ``source`` is what it draws from."""

    name: str
    title: str
    draw: Callable[[FigureInput], Chart | None]
    source: Callable[[FigureInput], Sequence[Labelled]]
    metrics: Sequence[str]

    def entries(self, given: FigureInput) -> list[ChartEntry]:
        return [(self.name, self.title, self.draw(given), self.source(given), self.metrics,
                 given.where)]


class SweepFigures:
    """A figure along every swept axis (``nodes`` first), each at the chosen conditions but
    its own axis."""

    def entries(self, given: FigureInput) -> list[ChartEntry]:
        out: list[ChartEntry] = []
        cores = node_cores(given.where or {}, given.scenario, given.environment)
        for axis in sweep.sweep_axes(given.trial_samples):
            fixed = {k: v for k, v in (given.where or {}).items() if k != axis}
            chart = sweep.sweep_curves(given.samples, axis, given.where, cores=cores)
            out.append((sweep.sweep_chart_name(axis), f"Along the swept {axis}", chart,
                        given.samples, SCALING_METRICS, fixed))
        return out


def _samples(given: FigureInput) -> Sequence[Labelled]:
    return given.samples


FIGURES: tuple[Figure, ...] = (
    SweepFigures(),
    OneFigure("latency", "Latency distribution per layer",
              lambda g: latency.latency_whiskers(g.samples, g.where), _samples,
              [m.replace("rtt_", f"{prefix}_", 1) for prefix, _ in latency.DISTRIBUTIONS
               for m in PCTLS]),
    OneFigure("cdf", "Latency distribution (CDF)",
              lambda g: latency.latency_cdf(g.histograms, g.where), lambda g: g.histograms,
              list(latency.CDF_TITLES)),
    OneFigure("throughput", "Throughput per layer",
              lambda g: bars.throughput(g.samples, g.baseline, g.where), _samples,
              ("tps", "goodput_bps")),
    OneFigure("timeseries", "Over time, interval by interval",
              lambda g: series.time_series(g.samples, g.scenario, g.where),
              lambda g: [s for s in g.samples if "interval" in s.labels], series.SERIES_METRICS),
    OneFigure("cpu_cost", "CPU cost per layer",
              lambda g: bars.cpu_cost(g.samples, g.baseline, g.where), _samples,
              ("cpu_us_per_tx", "cpu_cores_per_gbps")),
    OneFigure("drops", "Drops and retransmissions",
              lambda g: drops.drops_and_retransmits(g.samples, g.where), _samples, ()),
)
"""Every figure of the report, in page order."""


def chart_entries(given: FigureInput) -> list[ChartEntry]:
    """Every figure's entries, in page order."""
    return [entry for figure in FIGURES for entry in figure.entries(given)]
