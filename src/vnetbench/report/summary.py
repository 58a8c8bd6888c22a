"""The terminal summary of a run: each configuration's headline grid of ratios to native,
its A/A noise floor, and each Docker mode beside its lab twin.

It draws on both ``tables`` (headline, grids, floors) and ``twins`` (which itself builds on
``tables``), so it lives above them: neither of those imports this.
"""

from __future__ import annotations

import os

from vnetbench.report.tables import (
    EMULATED_NOTE,
    HeadlineTable,
    cell_text,
    column_header,
    design_lines,
    detail_rows,
    emulated_layers,
    format_value,
    grid_lines,
    headline_configs,
    headline_table,
    noise_floor_lines,
)
from vnetbench.report.twins import compare_twins, twin_summary_lines
from vnetbench.results.metrics import HEADLINE_METRICS, METRIC_TITLES
from vnetbench.results.model import Sample
from vnetbench.results.store import RunData


def summary_text(run_dir: str | os.PathLike[str] | RunData, *, baseline: str = "host",
                 factor: float = 1.05) -> str:
    """A few plain-text lines for the terminal: each layer's headline ratios to native.

    Without a baseline layer the medians of the headline metrics are listed instead.
    """
    from vnetbench.results.derive import derive_cpu_costs
    from vnetbench.results.store import load_run

    run = run_dir if isinstance(run_dir, RunData) else load_run(run_dir)
    samples = [*run.samples, *derive_cpu_costs(run.samples, scenario=run.meta.recorded)]
    lines = [f"run {run.run_id}: {run.status.value}, {len(run.samples)} samples"]
    configs: list[dict[str, str] | None] = [*headline_configs(samples)] or [None]
    for config in configs:
        table = headline_table(samples, baseline=baseline, factor=factor, config=config,
                               emulated=emulated_layers(run.meta.environment),
                               histograms=run.histograms)
        lines += _summary_lines(table, samples, baseline, factor)
        if table is not None and table.emulated:
            lines.append(f"  {EMULATED_NOTE}: {', '.join(sorted(table.emulated))}")
        if table is not None:
            lines += noise_floor_lines(table)
        if table is None or not table.columns:
            break
        twins = compare_twins(samples, table, run.meta.environment)
        if twins is not None:
            lines += twin_summary_lines(twins)
    return "\n".join(lines)


def _summary_lines(table: HeadlineTable | None, samples: list[Sample], baseline: str,
                   factor: float) -> list[str]:
    lines: list[str] = []
    if table is None or not table.columns:
        for g in detail_rows(s for s in samples if s.metric in HEADLINE_METRICS):
            where = " ".join(f"{k}={g.labels[k]}" for k in ("workload", "layer", "nodes")
                             if g.labels.get(k))
            lines.append(f"  {where} {METRIC_TITLES.get(g.metric, g.metric)}: "
                         f"{format_value(g.median, g.metric, g.unit)} (n={g.n})")
        return lines
    where = table.describe_config()
    lines.append(f"layer / {baseline}" + (f" at {where}" if where else "")
                 + f" (ratio; * = larger than {(factor - 1) * 100:.0f}% and than the noise floor,"
                 " and significant; ? = not resolved; latencies also as added time):")
    grid = [column_header("layer", table.columns)]
    for layer in table.layers:
        row = [layer]
        for col in table.columns:
            cell = table.cells.get((layer, col))
            if cell is None:
                row.append("-")
            elif cell.ratio is None:
                row.append(format_value(cell.median, col.metric, cell.unit))
            else:
                row.append(cell_text(cell, factor))
        grid.append(row)
    return lines + grid_lines(grid) + [f"  design: {line}" for line in design_lines(table)]
