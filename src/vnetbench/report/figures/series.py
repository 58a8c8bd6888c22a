"""The per-interval figure: a stream's goodput, rr's transactions/s and p99 each interval,
per layer, each trial thin and the median over trials thick."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from vnetbench.report.figures.common import (
    INK,
    MAX_PANELS,
    MUTED,
    Chart,
    Tips,
    describe_where,
    figure_legend,
    layer_color,
    layers_in,
    left_out_note,
    measured_at,
    new_figure,
    plain_samples,
    style_axes,
    unit_formatter,
)
from vnetbench.report.tables import (
    format_value,
)
from vnetbench.results.derive import workload_option
from vnetbench.results.metrics import METRIC_TITLES
from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario
from vnetbench.results.stats import median

SERIES_METRICS = ("goodput_interval_bps", "tps_interval", "rtt_p99_interval_us",
                  "bitrate_interval_bps")
"""Per-interval samples (label ``interval``) drawn as time series."""
SERIES_SPLIT = ("flow", "direction", "placement", "circuit")


def _interval_s(scenario: RecordedScenario, workload: str) -> float:
    """The seconds between a workload's interval events: its ``interval`` option, else the
    probe's default (1 s)."""
    found = workload_option(scenario, workload, "interval")
    return found if found is not None and found > 0 else 1.0


def time_series(samples: Sequence[Sample], scenario: RecordedScenario | None = None,
                where: Mapping[str, str] | None = None) -> Chart | None:
    """Per-interval figures over time (a stream's goodput, rr's transactions/s and p99 each
    interval): per layer, each repetition as a thin line and the median over repetitions as
    a thick one. ``where`` fixes the conditions."""
    pool = [s for s in measured_at(plain_samples(samples), where)
            if s.metric in SERIES_METRICS and s.labels.get("interval", "").isdigit()]

    def key(s: Sample) -> str:
        parts = [s.labels.get(k, "") for k in SERIES_SPLIT]
        return " ".join([s.labels.get("workload", ""), *[p for p in parts if p]])

    panels = [(m, k) for m in SERIES_METRICS for k in sorted({key(s) for s in pool
                                                              if s.metric == m})]
    panels = [(m, k) for m, k in panels
              if len({s.labels["interval"] for s in pool if s.metric == m and key(s) == k}) >= 2]
    if not panels:
        return None
    left_out = len(panels) - MAX_PANELS
    panels = panels[:MAX_PANELS]
    cols = min(2, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig = new_figure(max(8.0, 6.0 * cols), 3.6 * rows)
    tips = Tips()
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, (metric, name) in zip(axes, panels, strict=False):
        style_axes(ax, "both")
        sub = [s for s in pool if s.metric == metric and key(s) == name]
        step = _interval_s(scenario, sub[0].labels.get("workload", "")) \
            if scenario is not None else 1.0
        head = METRIC_TITLES.get(metric, metric)
        for layer in layers_in(sub):
            mine = [s for s in sub if s.labels.get("layer", "") == layer]
            color = layer_color(layer)
            runs: dict[str, list[tuple[float, float]]] = {}
            for s in mine:
                run = f"{s.labels.get('trial', '')}/{s.labels.get('repetition', '')}"
                runs.setdefault(run, []).append(((int(s.labels["interval"]) + 1) * step,
                                                 s.value))
            for run, points in sorted(runs.items()):
                points.sort()
                (thin,) = ax.plot([x for x, _ in points], [y for _, y in points], color=color,
                                  linewidth=0.8, alpha=0.35)
                trial, rep = run.split("/")
                tips.add(thin, f"{layer} trial {trial} (repetition {rep})\n"
                               + ", ".join(f"{x:g}s {format_value(y, metric)}"
                                           for x, y in points[:12]), layer)
            by_x: dict[float, list[float]] = {}
            for points in runs.values():
                for x, y in points:
                    by_x.setdefault(x, []).append(y)
            xs = sorted(by_x)
            meds = [median(by_x[x]) for x in xs]
            (line,) = ax.plot(xs, meds, color=color, linewidth=2.2, label=layer)
            tips.add(line, f"{layer} \u00b7 {head}: median over {len(runs)} trial(s) "
                           f"{format_value(median(meds), metric)} (of the interval medians)",
                     layer)
            for x, m in zip(xs, meds, strict=True):
                (dot,) = ax.plot([x], [m], color=color, marker="o", markersize=3.5,
                                 linestyle="none")
                values = by_x[x]
                tips.add(dot, f"{layer} at {x:g} s: median {format_value(m, metric)} "
                              f"over {len(values)} trial(s), {format_value(min(values), metric)}"
                              f"\u2013{format_value(max(values), metric)}", layer)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(unit_formatter(metric))
        ax.set_xlabel("seconds into the measurement (end of each interval)", fontsize=9,
                      color=MUTED)
        ax.set_title(f"{head} ({name})", loc="left", fontsize=11, color=INK, fontweight="bold")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    figure_legend(fig, axes[:len(panels)])
    at = describe_where(where)
    return Chart("timeseries", "Over time, interval by interval",
                 "The probe's per-interval figures of each trial (thin) and their median over "
                 f"the trials (thick){' at ' + at if at else ''}. A dip or a slow start "
                 "shows here before it moves a median. Cut-short intervals are left out."
                 + left_out_note(left_out, "series"), fig, tips)
