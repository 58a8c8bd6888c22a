"""The report's Hadoop section: each benchmark's cost on each layer relative to native, and
the job counters that explain a difference.

The ratio table is the headline table's (same cells, intervals, significance and colours)
with one column group per benchmark: elapsed time for every benchmark and, for TestDFSIO,
its own throughput (MiB/s). The counter table sets, per benchmark, the job counters that
say *why* a layer took longer (bytes shuffled, records spilled, data-local maps, GC and CPU
time of the tasks) beside native's, as medians over the trials with their ratio. Both are
drawn at the configuration measured best (the scaling curves tell the node sweep).
"""

from __future__ import annotations

import html
import math
from collections.abc import Collection, Sequence
from statistics import median

from vnetbench.report.tables import (
    HeadlineTable,
    headline_table,
    layer_sort_key,
    render_headline,
    select,
)
from vnetbench.results.model import Sample

WORKLOAD = "hadoop"
RATIO_METRICS = ("elapsed_s", "dfsio_throughput_mib_per_s")
COUNTERS: tuple[tuple[str, str], ...] = (
    ("shuffle_bytes", "bytes shuffled"),
    ("spilled_records_count", "records spilled"),
    ("data_local_map_tasks_count", "data-local maps"),
    ("map_tasks_count", "maps launched"),
    ("task_gc_time_ms", "GC time of the tasks"),
    ("task_cpu_time_ms", "CPU time of the tasks"),
)
"""Job counters shown beside the ratios (summed over a benchmark's jobs, per trial)."""


def per_benchmark(samples: Sequence[Sample], metrics: Collection[str]) -> list[Sample]:
    """Hadoop samples of ``metrics`` with the benchmark moved into the workload label
    (``hadoop teragen``), so the headline machinery makes one column group per benchmark."""
    out = []
    for s in samples:
        if s.labels.get("workload") != WORKLOAD or s.metric not in metrics:
            continue
        bench = s.labels.get("benchmark")
        if not bench:
            continue
        labels = {k: v for k, v in s.labels.items() if k != "benchmark"}
        labels["workload"] = f"{WORKLOAD} {bench}"
        out.append(Sample(s.metric, s.value, s.unit, labels, s.t_ns))
    return out


def hadoop_table(samples: Sequence[Sample], *, baseline: str = "host", factor: float = 1.05,
                 emulated: Collection[str] = ()) -> HeadlineTable | None:
    """Benchmarks' elapsed time and DFSIO throughput as ratios to ``baseline`` (None when
    the run has no Hadoop samples on the baseline and another layer)."""
    pool = per_benchmark(samples, RATIO_METRICS)
    table = headline_table(pool, baseline=baseline, factor=factor, metrics=RATIO_METRICS,
                           emulated=emulated)
    if table is None or len(table.layers) < 2:
        return None
    return table


def counter_rows(samples: Sequence[Sample], table: HeadlineTable
                 ) -> list[tuple[str, str, list[str]]]:
    """(benchmark, counter, one cell per layer of ``table``) where any layer counted it."""
    pool = select(per_benchmark(samples, {m for m, _ in COUNTERS}), table.config)
    rows = []
    benches = sorted({s.labels["workload"] for s in pool})
    for bench in benches:
        for metric, title in COUNTERS:
            base = _median(pool, bench, metric, table.baseline)
            cells = []
            for layer in table.layers:
                value = _median(pool, bench, metric, layer)
                if math.isnan(value):
                    cells.append("\u2013")
                    continue
                text = counter_text(value, metric)
                if layer != table.baseline and base > 0:
                    text += f" (\u00d7{value / base:.2f})"
                cells.append(text)
            if any(c != "\u2013" for c in cells):
                rows.append((bench.removeprefix(f"{WORKLOAD} "), title, cells))
    return rows


def _median(pool: Sequence[Sample], bench: str, metric: str, layer: str) -> float:
    values = [s.value for s in pool if s.labels.get("workload") == bench
              and s.metric == metric and s.labels.get("layer") == layer]
    return median(values) if values else math.nan


def counter_text(value: float, metric: str) -> str:
    """``12.6 MB``, ``3.41 s`` (a counter in ms), ``1,024`` (a count)."""
    if metric.endswith("_bytes"):
        for scale, suffix in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
            if value >= scale:
                return f"{value / scale:.3g} {suffix}"
        return f"{value:.0f} B"
    if metric.endswith("_ms"):
        return f"{value / 1000:.3g} s"
    return f"{value:,.0f}"


def render_hadoop(samples: Sequence[Sample], *, baseline: str = "host", factor: float = 1.05,
                  emulated: Collection[str] = ()) -> str:
    """The Hadoop section's HTML (empty when the run has nothing to compare)."""
    table = hadoop_table(samples, baseline=baseline, factor=factor, emulated=emulated)
    esc = html.escape
    if table is None:
        measured = per_benchmark(samples, RATIO_METRICS)
        if not measured:
            return ""
        layers = sorted({s.labels.get("layer", "") for s in measured}, key=layer_sort_key)
        return ('<section id="hadoop" class="empty"><h2>Hadoop benchmarks</h2><p class="why">'
                f"No ratios to native: the benchmarks ran on {esc(', '.join(layers))}, and a "
                f"ratio needs the baseline <code>{esc(baseline)}</code> and another layer at "
                "the same configuration. Their elapsed times are in the detail table at the "
                "end.</p></section>")
    layers = sorted(table.layers, key=layer_sort_key)
    rows = "".join(
        f"<tr><td>{esc(bench)}</td><td>{esc(title)}</td>"
        + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>"
        for bench, title, cells in counter_rows(samples, table))
    counters = ("" if not rows else
                "<h3>Job counters</h3><p class=\"lead\">Medians per trial, summed over each "
                "benchmark's jobs, with the ratio to native: more bytes shuffled or records "
                "spilled, fewer data-local maps or more GC time explain a slower layer "
                "better than the network alone.</p><table class=\"detail\"><thead><tr>"
                "<th>benchmark</th><th>counter</th>"
                + "".join(f"<th>{esc(layer)}</th>" for layer in layers)
                + f"</tr></thead><tbody>{rows}</tbody></table>")
    at = table.describe_config()
    return ('<section id="hadoop"><h2>Hadoop benchmarks relative to native '
            f"(<code>{esc(baseline)}</code>)</h2><p class=\"lead\">Each benchmark's elapsed "
            "time (and TestDFSIO's own throughput) as the ratio layer / native"
            f"{' at ' + esc(at) if at else ''}, medians over trials with the 95% bootstrap "
            "interval; coloured as in the headline (beyond "
            f"{(factor - 1) * 100:.0f}%, the noise floor and significant). One cluster per "
            "trial runs every benchmark in turn.</p>" + render_headline(table) + counters
            + "</section>")
