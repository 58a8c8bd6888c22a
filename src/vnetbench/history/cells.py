"""A run's headline cells, as its own engine judged them: what the history store keeps of a
run to draw its series.

For every configuration the run has a headline table at (``report.tables``: nodes, hosts,
sweep values), every column (workload, metric) gives

* per layer but the baseline, a ``ratio`` cell: the layer's paired ratio to the baseline
  (median of the rounds' ratios), its 95 % interval and the run's A/A floor, exactly the
  headline's figure;
* for the baseline, a ``level`` cell: its own median, with the A/A floor of that column.

A cell's ``key`` names it the same way in every run of a scenario (by the scenario's name,
not its hash: a ``--set`` that changes the scenario is a change of the series, which the
store records as such), so a cell's values over the runs are its series.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vnetbench.report.tables import (
    all_configs,
    describe_config,
    emulated_layers,
    headline_pool,
    headline_table,
)
from vnetbench.results.derive import derive_cpu_costs
from vnetbench.results.metrics import HEADLINE_METRICS
from vnetbench.results.store import RunData

KINDS = ("ratio", "level")


@dataclass(frozen=True)
class Cell:
    """One headline figure of one run (see the module docstring)."""

    key: str
    scenario: str
    layer: str
    baseline: str
    workload: str
    metric: str
    unit: str
    config: str
    kind: str
    value: float
    low: float
    high: float
    floor: float
    """The run's A/A floor of this column (nan: the run measured none)."""
    n: int
    design: str

    @property
    def series(self) -> str:
        """What the cell's series is called: ``bridge/host rr rtt_p50_us at 2 nodes``."""
        who = f"{self.layer}/{self.baseline}" if self.kind == "ratio" else self.layer
        return f"{who} {self.workload} {self.metric} at {self.config}"


def cell_key(scenario: str, layer: str, workload: str, metric: str, config: str) -> str:
    return " | ".join((scenario, layer, workload, metric, config))


def _nan(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def run_cells(run: RunData, baseline: str = "host") -> list[Cell]:
    """Every headline cell of ``run`` (see the module docstring); none when it has no
    headline (no baseline, nothing measured)."""
    samples = [*run.samples, *derive_cpu_costs(run.samples, scenario=run.meta.recorded)]
    emulated = emulated_layers(run.meta.environment)
    scenario = run.meta.recorded.name or run.run_id
    out: list[Cell] = []
    for config in all_configs(headline_pool(samples, HEADLINE_METRICS)):
        table = headline_table(samples, baseline=baseline, config=config,
                               histograms=run.histograms, emulated=emulated)
        if table is None:
            continue
        where = describe_config(table.config)
        for (layer, column), cell in sorted(table.cells.items(),
                                            key=lambda kv: (kv[0][0], kv[0][1].workload,
                                                            kv[0][1].metric)):
            floor = table.floors.get(column)
            aa = _nan(floor.floor if floor is not None else None)
            key = cell_key(scenario, layer, column.workload, column.metric, where)
            if cell.ratio is None:
                n = floor.ratio.n if floor is not None else 0
                out.append(Cell(key, scenario, layer, baseline, column.workload, column.metric,
                                cell.unit, where, "level", cell.median, math.nan, math.nan, aa,
                                n, ""))
                continue
            r = cell.ratio
            out.append(Cell(key, scenario, layer, baseline, column.workload, column.metric,
                            cell.unit, where, "ratio", r.ratio.value, r.ratio.ci.low,
                            r.ratio.ci.high, _nan(r.floor), r.ratio.n, r.ratio.design))
    return out
