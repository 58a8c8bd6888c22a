"""Docker's own networks and virtual-machine layers beside their namespace twins
(docker-bridge vs bridge, docker-nat vs nat, docker-overlay vs vxlan, vm-bridge vs bridge,
...): does the namespace layer behave like the real thing, what do VMs add?

For every Docker mode measured together with its twin (``DockerMode.twin``) under the
headline's configuration, each headline column gets the pair's ratios to native (from the
headline table) and the Docker mode's median over its twin's, with a 95% bootstrap interval
and the same direction-aware verdict as the headline.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vnetbench.report.tables import (
    VERDICT_MARKS,
    Column,
    HeadlineTable,
    column_header,
    format_value,
    grid_lines,
    headline_pool,
    interval_text,
    select,
)
from vnetbench.results.contention import outside_shares
from vnetbench.results.model import DESIGN_LABEL, PAIR_LABEL, Sample
from vnetbench.results.recorded import Legend
from vnetbench.results.stats import LayerRatio, ratios_to_baseline


def twin_of(layer: str, environment: Mapping[str, Any] | None = None) -> str | None:
    """The namespace layer a Docker mode or VM layer is measured beside (None for
    namespace layers); a backend's facts of the layer in the run's ``environment`` may name
    it (a Kubernetes pod path's twin follows the CNI's mode)."""
    facts = (environment or {}).get("layers", {}).get(layer) or {}
    for value in facts.values() if isinstance(facts, dict) else ():
        if isinstance(value, dict) and "twin" in value:
            return value["twin"] if isinstance(value["twin"], str) else None
    legend = Legend.from_environment(environment or {})
    if legend.recorded:
        return legend.twins.get(layer)
    from vnetbench.backends.catalog import LAYERS  # a run recorded before its legend

    cls = LAYERS.get(layer)
    return cls.twin if cls is not None else None


def twin_pairs(layers: Iterable[str], environment: Mapping[str, object] | None = None
               ) -> list[tuple[str, str]]:
    """(docker mode, twin) for every Docker mode whose twin is among ``layers``."""
    present = list(layers)
    return [(layer, twin) for layer in present
            if (twin := twin_of(layer, environment)) is not None and twin in present]


@dataclass(frozen=True)
class TwinComparison:
    table: HeadlineTable
    pairs: list[tuple[str, str]]
    ratios: dict[tuple[str, Column], LayerRatio]
    """(docker mode, column) -> the mode's median over its twin's."""


def compare_twins(samples: Sequence[Sample], table: HeadlineTable,
                  environment: Mapping[str, object] | None = None) -> TwinComparison | None:
    """Docker/twin ratios for the pairs present in ``table`` (None when there is no pair)."""
    pairs = twin_pairs(table.layers, environment)
    if not pairs:
        return None
    chosen = select(headline_pool(samples), table.config)
    shares = outside_shares(samples)
    ratios: dict[tuple[str, Column], LayerRatio] = {}
    for docker, twin in pairs:
        pair = [s for s in chosen if s.labels.get("layer") in (docker, twin)]
        ids = [{s.labels.get(PAIR_LABEL) for s in pair if s.labels.get("layer") == who}
               for who in (docker, twin)]
        if not ids[0] & ids[1] - {None}:
            # in trial blocks each layer is paired with the baseline, not with its twin:
            # compare the two as two groups
            pair = [Sample(s.metric, s.value, s.unit,
                           {k: v for k, v in s.labels.items()
                            if k not in (PAIR_LABEL, DESIGN_LABEL)}, s.t_ns) for s in pair]
        for r in ratios_to_baseline(pair, baseline=twin, group_by=("workload", "metric"),
                                    emulated=table.emulated, shares=shares):
            ratios[(docker, Column(r.labels["workload"], r.metric))] = r
    return TwinComparison(table, pairs, ratios)


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _to_native(table: HeadlineTable, layer: str, col: Column) -> str:
    cell = table.cells.get((layer, col))
    if cell is None:
        return "&ndash;"
    if cell.ratio is None:
        return _esc(format_value(cell.median, col.metric, cell.unit))
    return f"&times;{cell.ratio.ratio.value:.2f}"


def render_twins(cmp: TwinComparison) -> str:
    """HTML: per pair, both layers' ratios to native and the Docker/twin ratio."""
    table = cmp.table
    head = "".join(f"<th>{_esc(c.workload)} {_esc(c.title)}</th>" for c in table.columns)
    rows = []
    for docker, twin in cmp.pairs:
        for layer in (twin, docker):
            cells = "".join(f"<td>{_to_native(table, layer, c)}</td>" for c in table.columns)
            rows.append(f'<tr><th class="layer">{_esc(layer)} <span class="ci">/ native</span>'
                        f"</th>{cells}</tr>")
        tds = []
        for col in table.columns:
            r = cmp.ratios.get((docker, col))
            if r is None:
                tds.append('<td class="na">&ndash;</td>')
                continue
            verdict = r.verdict(table.factor)
            ci = interval_text(r.ratio)
            tds.append(f'<td class="{verdict}"><div class="ratio">&times;{r.ratio.value:.2f}'
                       f'</div><div class="ci">{_esc(ci)}</div></td>')
        rows.append(f'<tr class="twin-ratio"><th class="layer">{_esc(docker)} &divide; '
                    f"{_esc(twin)}</th>{''.join(tds)}</tr>")
    return ('<table class="headline" id="twins-table"><thead><tr><th class="corner">layer'
            f"</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def twin_summary_lines(cmp: TwinComparison) -> list[str]:
    """Plain-text grid: each Docker mode over its twin (``*`` = called difference)."""
    factor = cmp.table.factor
    grid = [column_header("layer / twin", cmp.table.columns)]
    unresolvable = False
    for docker, twin in cmp.pairs:
        row = [f"{docker} / {twin}"]
        for col in cmp.table.columns:
            r = cmp.ratios.get((docker, col))
            if r is not None and not r.ratio.resolvable:
                unresolvable = True
            row.append("-" if r is None else
                       f"x{r.ratio.value:.2f}{VERDICT_MARKS.get(r.verdict(factor), '')}")
        grid.append(row)
    lines = [f"Docker mode or VM layer / its namespace twin (ratio of medians, * = larger than "
             f"{(factor - 1) * 100:.0f}% and significant, ? = not resolved, ~ = emulated CPU):", *grid_lines(grid)]
    if unresolvable:
        lines.append("  (some pairs have too few repetitions a side ever to be significant: "
                     "repeat 4 or more to judge a Docker mode against its twin)")
    return lines
