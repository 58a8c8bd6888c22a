"""Figures of the report, drawn with matplotlib's object API (no pyplot), written as SVG.

Every function takes samples (or latency histograms) and returns a :class:`Chart` (figure +
title + caption + hover tips) or ``None`` when there is nothing to draw, so the report omits
empty sections. Colours are fixed per layer across all figures; the native baseline
(``host``) is always grey. The figures: latency percentiles per layer, latency CDFs of the
merged histograms, throughput and CPU cost bars, per-interval time series, curves along
every swept axis (the number of nodes with its knee, a delay, a request size, streams...)
and drops. Points, bars and curves carry a tip (the exact figures, shown on hover) and their
layer, which the page uses to show or hide a layer (see ``report/svg.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import matplotlib

matplotlib.use("Agg")

from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, MaxNLocator

from vnetbench.report.coverage import COUNTER_METRICS, DROP_METRICS, RETRANS_METRICS
from vnetbench.report.knee import find_knee
from vnetbench.report.svg import Tip, figure_svg, tip_gid
from vnetbench.report.tables import (
    describe_config,
    format_value,
    layer_sort_key,
    select,
)
from vnetbench.results.derive import workload_option
from vnetbench.results.histogram import HistogramRecord, LatencyHistogram
from vnetbench.results.metrics import METRIC_TITLES, SCALING_METRICS
from vnetbench.results.model import Sample
from vnetbench.results.stats import bootstrap_ci, median
from vnetbench.units import counted, parse_duration, parse_rate, parse_size

LAYER_COLORS: dict[str, str] = {
    "host": "#6b7280", "bridge": "#2563eb", "macvlan": "#0d9488", "routed": "#65a30d",
    "nat": "#ca8a04", "vxlan": "#ea580c", "wireguard": "#dc2626", "userspace": "#7c3aed",
    # Docker's modes: a shade of their lab twin's colour
    "docker-host": "#9ca3af", "docker-bridge": "#60a5fa", "docker-userbridge": "#1e3a8a",
    "docker-macvlan": "#5eead4", "docker-nat": "#facc15", "docker-proxy": "#854d0e",
    "docker-overlay": "#fdba74",
}
_EXTRA = ("#0891b2", "#db2777", "#4f46e5", "#16a34a", "#9333ea", "#b45309")
PCTLS = ("rtt_p1_us", "rtt_p25_us", "rtt_p50_us", "rtt_p75_us", "rtt_p99_us")
PLACE_LABELS = ("cpu", "netns", "device", "cgroup")
INK = "#1f2937"
MUTED = "#6b7280"
GRID = "#e5e7eb"


def layer_color(layer: str) -> str:
    if layer in LAYER_COLORS:
        return LAYER_COLORS[layer]
    return _EXTRA[sum(map(ord, layer)) % len(_EXTRA)]


class Tips:
    """The hover tips of one figure, by the ``gid`` given to their artist."""

    def __init__(self) -> None:
        self.by_gid: dict[str, Tip] = {}

    def add(self, artist: Artist, text: str, layer: str = "") -> None:
        """Show ``text`` when ``artist`` is hovered; ``layer`` tags it for show/hide."""
        gid = tip_gid(len(self.by_gid))
        artist.set_gid(gid)
        self.by_gid[gid] = Tip(text, layer)


@dataclass
class Chart:
    """One figure with the text that goes around it and its hover tips."""

    name: str
    title: str
    caption: str
    figure: Figure
    tips: Tips = field(default_factory=Tips)

    def svg(self) -> str:
        """The figure as an inline ``<svg>`` element, tips attached (see ``report/svg.py``)."""
        return figure_svg(self.figure, self.tips.by_gid, self.name)


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    return fig


def _style(ax: Axes, grid_axis: Literal["both", "x", "y"] = "y") -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_color("#9ca3af")
    ax.tick_params(colors=INK, labelsize=9)
    ax.grid(True, axis=grid_axis, color=GRID, linewidth=0.8)
    ax.set_axisbelow(True)


def _figure_legend(fig: Figure, axes: Iterable[Axes]) -> None:
    """One legend for the whole figure, below its panels (a legend inside a panel hides
    curves): each layer once, in the order first drawn."""
    seen: dict[str, Artist] = {}
    for ax in axes:
        handles, labels = ax.get_legend_handles_labels()
        for handle, label in zip(handles, labels, strict=True):
            seen.setdefault(label, handle)
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="outside lower center",
                   ncols=min(len(seen), 9), frameon=False, fontsize=8.5)


MAX_PANELS = 6
"""At most this many panels in the CDF and time-series figures (the caption names the rest)."""


def _left_out(count: int, what: str) -> str:
    """`` 2 more distributions are not drawn: see the detail table.`` (empty for none)."""
    if count <= 0:
        return ""
    return (f" {count} more {what}{'' if count == 1 or what.endswith('s') else 's'} "
            f"{'is' if count == 1 else 'are'} not drawn: see the detail table.")


def _plain(samples: Iterable[Sample]) -> list[Sample]:
    return [s for s in samples if not any(k in s.labels for k in PLACE_LABELS)]


def _at(samples: Iterable[Sample], where: Mapping[str, str] | None) -> list[Sample]:
    """The samples measured under ``where`` (label values; None = all); a label no sample
    of a metric and workload carries does not filter them (``tables.select``)."""
    return select(samples, where)


def _layers(samples: Iterable[Sample]) -> list[str]:
    return sorted({s.labels.get("layer", "") for s in samples}, key=layer_sort_key)


def _describe(where: Mapping[str, str] | None) -> str:
    return describe_config(where)


def _values(samples: Iterable[Sample], metric: str, **labels: str) -> list[float]:
    return [s.value for s in samples if s.metric == metric
            and all(s.labels.get(k, "") == v for k, v in labels.items())]


def _unit_formatter(metric: str) -> FuncFormatter:
    return FuncFormatter(lambda v, _pos: format_value(v, metric) if v > 0 else "0")


DISTRIBUTIONS = (("rtt", "round-trip time"), ("sync", "barrier sync time"))


def latency_whiskers(samples: Sequence[Sample],
                     where: Mapping[str, str] | None = None) -> Chart | None:
    """Per layer: whisker p1..p99, box p25..p75, median line (medians over repetitions).

    One panel per workload and distribution (``rtt_p*_us``, ``sync_p*_us``).
    """
    pool = _at(_plain(samples), where)
    panels: list[tuple[str, list[tuple[str, list[float]]]]] = []
    for prefix, what in DISTRIBUTIONS:
        names = [m.replace("rtt_", f"{prefix}_", 1) for m in PCTLS]
        workloads = sorted({s.labels.get("workload", "") for s in pool if s.metric == names[2]})
        for wl in workloads:
            rows = []
            for layer in _layers(s for s in pool if s.labels.get("workload", "") == wl):
                pct = [median(_values(pool, m, layer=layer, workload=wl)) for m in names]
                if not math.isnan(pct[2]):
                    rows.append((layer, pct))
            if rows:
                panels.append((f"{wl or 'latency'}: {what} percentiles", rows))
    if not panels:
        return None
    height = 0.9 + sum(0.55 * len(rows) + 0.6 for _, rows in panels)
    fig = _figure(10.5, max(2.6, height))
    tips = Tips()
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, (title, rows) in zip(axes, panels, strict=True):
        _style(ax, "x")
        all_vals = [v for _, p in rows for v in p if not math.isnan(v)]
        lo, hi = min(all_vals), max(all_vals)
        log = hi / max(lo, 1e-9) > 30
        for i, (layer, p) in enumerate(reversed(rows)):
            color = layer_color(layer)
            p1, p25, p50, p75, p99 = p
            text = f"{layer} \u00b7 {title}\n" + "  ".join(
                f"p{q} {format_value(v, 'x_us')}" for q, v in zip((1, 25, 50, 75, 99), p,
                                                                   strict=True))
            present = [v for v in p if not math.isnan(v)]
            lo_end, hi_end = min(present), max(present)
            if hi_end > lo_end:
                (whisker,) = ax.plot([lo_end, hi_end], [i, i], color=color, linewidth=1.6,
                                     solid_capstyle="butt")
                tips.add(whisker, text, layer)
                for end, known in ((lo_end, not math.isnan(p1)), (hi_end, not math.isnan(p99))):
                    if known:
                        ax.plot([end, end], [i - 0.16, i + 0.16], color=color, linewidth=1.6)
            if not math.isnan(p25) and not math.isnan(p75):
                box = ax.add_patch(Rectangle((p25, i - 0.28), p75 - p25, 0.56, facecolor=color,
                                             alpha=0.28, edgecolor=color, linewidth=1.2))
                tips.add(box, text, layer)
            (mid,) = ax.plot([p50, p50], [i - 0.28, i + 0.28], color=color, linewidth=3)
            tips.add(mid, text, layer)
            ax.annotate(f"p50 {format_value(p50, 'x_us')}", (p50, i + 0.3),
                        textcoords="offset points", xytext=(0, 2), ha="center", fontsize=8,
                        color=INK)
            if not math.isnan(p99):
                ax.annotate(f"p99 {format_value(p99, 'x_us')}", (p99, i),
                            textcoords="offset points", xytext=(6, -3), ha="left",
                            fontsize=8, color=MUTED)
        ax.set_yticks(range(len(rows)), [layer for layer, _ in reversed(rows)], fontsize=10)
        for tick, (layer, _) in zip(ax.get_yticklabels(), reversed(rows), strict=True):
            tick.set_color(layer_color(layer))
            tick.set_fontweight("bold")
        ax.set_ylim(-0.7, len(rows) - 0.3)
        if log:
            ax.set_xscale("log")
        ax.set_xlim(lo * (0.8 if log else 0.9), hi * (1.6 if log else 1.18))
        ax.xaxis.set_major_formatter(_unit_formatter("rtt_p50_us"))
        ax.set_title(title, loc="left", fontsize=11, color=INK, fontweight="bold")
    axes[-1].set_xlabel("whiskers p1\u2013p99, box p25\u2013p75, bar p50",
                        fontsize=9, color=MUTED)
    at = _describe(where)
    return Chart("latency", "Latency distribution per layer",
                 f"Medians over repetitions of each percentile{' at ' + at if at else ''}. "
                 "Further right is slower.", fig, tips)


CDF_TITLES = {"rtt_us": "round-trip time", "sync_us": "barrier sync time",
              "send_gap_us": "send gap", "recv_gap_us": "receive gap"}
MERGED_LABELS = frozenset({"layer", "repetition", "trial", "aa", "rank", "node", "client",
                           "server"})
"""Histogram labels merged over in a CDF (the layer is the curve, the rest are trials and
processes); any other label (placement, circuit, flow...) gets a panel of its own."""
CDF_MARKS = (50.0, 90.0, 99.0, 99.9)


CDF_STEP = (0.02, 0.05)
"""A CDF point is drawn when it moves at least this far from the last one drawn: 2% in value
(log x) or 0.05 in logit(fraction); finer steps are invisible at the figure's size."""


def _logit(y: float) -> float:
    return math.log(y / (1.0 - y))


def _cdf_points(hist: LatencyHistogram) -> tuple[list[float], list[float]]:
    """(value, fraction of values at most it) per bucket, thinned by ``CDF_STEP``; the last
    bucket (fraction 1) is left out (the y axis is a logit scale), the one before kept."""
    total = hist.count
    points: list[tuple[float, float]] = []
    seen = 0
    for value, count in hist.buckets:
        seen += count
        if seen < total:
            points.append((value, seen / total))
    kept: list[tuple[float, float]] = []
    for i, (x, y) in enumerate(points):
        if kept and i < len(points) - 1:
            last_x, last_y = kept[-1]
            far_x = x <= 0 or last_x <= 0 or math.log(x / last_x) >= CDF_STEP[0]
            if not far_x and _logit(y) - _logit(last_y) < CDF_STEP[1]:
                continue
        kept.append((x, y))
    return [x for x, _ in kept], [y for _, y in kept]


def _pct_name(q: float) -> str:
    return f"p{q:g}"


def latency_cdf(histograms: Sequence[HistogramRecord],
                where: Mapping[str, str] | None = None) -> Chart | None:
    """The cumulative distribution of every latency the probe kept a histogram of, per
    layer, from the trials' histograms merged (every round trip of every repetition counts
    once). One panel per distribution and workload; y on a logit scale so the tail
    (p99, p99.9) is as readable as the median. ``where`` fixes the conditions."""
    chosen = select([h for h in histograms if h.metric in CDF_TITLES and h.hist.count > 0],
                    where)
    # labels that tell histograms apart beyond the layer and the trial: a panel each
    names = {k for h in chosen for k in h.labels} - MERGED_LABELS - {"workload"}
    split = sorted(k for k in names if len({h.labels.get(k, "") for h in chosen}) > 1)
    groups: dict[tuple[str, str, str], dict[str, list[LatencyHistogram]]] = {}
    for h in chosen:
        extra = " ".join(f"{k}={h.labels[k]}" for k in split if h.labels.get(k, ""))
        key = (h.metric, h.labels.get("workload", ""), extra)
        groups.setdefault(key, {}).setdefault(h.labels.get("layer", ""), []).append(h.hist)
    panels = sorted(groups.items(), key=lambda kv: (list(CDF_TITLES).index(kv[0][0]), kv[0]))
    panels = [(k, v) for k, v in panels
              if any(len(LatencyHistogram.merge(hs).buckets) >= 2 for hs in v.values())]
    if not panels:
        return None
    left_out = len(panels) - MAX_PANELS
    panels = panels[:MAX_PANELS]
    cols = min(2, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig = _figure(max(8.0, 6.0 * cols), 4.0 * rows)
    tips = Tips()
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, ((metric, workload, extra), by_layer) in zip(axes, panels, strict=False):
        _style(ax, "both")
        lo, hi, deepest = math.inf, 0.0, 0.5
        for layer in sorted(by_layer, key=layer_sort_key):
            merged = LatencyHistogram.merge(by_layer[layer])
            xs, ys = _cdf_points(merged)
            if not xs:
                continue
            color = layer_color(layer)
            marks = [(q, merged.percentile(q)) for q in CDF_MARKS]
            text = (f"{layer} \u00b7 {CDF_TITLES[metric]} ({workload})\n"
                    + f"min {format_value(merged.buckets[0][0], 'x_us')}  "
                    + "  ".join(f"{_pct_name(q)} {format_value(v, 'x_us')}" for q, v in marks)
                    + f"  max {format_value(merged.buckets[-1][0], 'x_us')}\n"
                    f"{merged.count:,} values from {len(by_layer[layer])} histogram(s)")
            (line,) = ax.plot(xs, ys, color=color, linewidth=1.8, drawstyle="steps-post",
                              label=layer)
            tips.add(line, text, layer)
            for q, v in marks:
                if q / 100 < ys[-1]:
                    (dot,) = ax.plot([v], [q / 100], color=color, marker="o", markersize=4.5,
                                     linestyle="none")
                    tips.add(dot, f"{layer} {_pct_name(q)}: {format_value(v, 'x_us')}", layer)
            lo, hi = min(lo, xs[0]), max(hi, merged.buckets[-1][0])
            deepest = max(deepest, ys[-1])
        if hi / max(lo, 1e-9) > 10:
            ax.set_xscale("log")
        ax.set_yscale("logit")
        top = min(0.9999, max(0.99, deepest))
        ticks = [q for q in (0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999) if q <= top]
        ax.set_yticks(ticks, [_pct_name(q * 100) for q in ticks], fontsize=8)
        ax.minorticks_off()
        ax.set_ylim(0.01, top)
        ax.xaxis.set_major_formatter(_unit_formatter("rtt_p50_us"))
        ax.set_ylabel("fraction at most x", fontsize=9, color=MUTED)
        title = f"{CDF_TITLES[metric]} ({workload}{', ' + extra if extra else ''})"
        ax.set_title(title, loc="left", fontsize=11, color=INK, fontweight="bold")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    _figure_legend(fig, axes[:len(panels)])
    at = _describe(where)
    return Chart("cdf", "Latency distribution (CDF of the merged histograms)",
                 "Every trial's HDR histogram merged per layer"
                 f"{' at ' + at if at else ''}; y is the fraction of values at most x on a "
                 "logit scale (p50, p90, p99, p99.9 marked). Further left is faster; hover a "
                 "curve for its percentiles." + _left_out(left_out, "distribution"), fig, tips)


SERIES_METRICS = ("goodput_interval_bps", "tps_interval", "rtt_p99_interval_us",
                  "bitrate_interval_bps")
"""Per-interval samples (label ``interval``) drawn as time series."""
SERIES_SPLIT = ("flow", "direction", "placement", "circuit")


def _interval_s(scenario: Mapping[str, Any], workload: str) -> float:
    """The seconds between a workload's interval events: its ``interval`` option, else the
    probe's default (1 s)."""
    found = workload_option(scenario, workload, "interval")
    return found if found is not None and found > 0 else 1.0


def time_series(samples: Sequence[Sample], scenario: Mapping[str, Any] | None = None,
                where: Mapping[str, str] | None = None) -> Chart | None:
    """Per-interval figures over time (a stream's goodput, rr's transactions/s and p99 each
    interval): per layer, each repetition as a thin line and the median over repetitions as
    a thick one. ``where`` fixes the conditions."""
    pool = [s for s in _at(_plain(samples), where)
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
    fig = _figure(max(8.0, 6.0 * cols), 3.6 * rows)
    tips = Tips()
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, (metric, name) in zip(axes, panels, strict=False):
        _style(ax, "both")
        sub = [s for s in pool if s.metric == metric and key(s) == name]
        step = _interval_s(scenario or {}, sub[0].labels.get("workload", ""))
        head = METRIC_TITLES.get(metric, metric)
        for layer in _layers(sub):
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
        ax.yaxis.set_major_formatter(_unit_formatter(metric))
        ax.set_xlabel("seconds into the measurement (end of each interval)", fontsize=9,
                      color=MUTED)
        ax.set_title(f"{head} ({name})", loc="left", fontsize=11, color=INK, fontweight="bold")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    _figure_legend(fig, axes[:len(panels)])
    at = _describe(where)
    return Chart("timeseries", "Over time, interval by interval",
                 "The probe's per-interval figures of each trial (thin) and their median over "
                 f"the trials (thick){' at ' + at if at else ''}. A dip or a slow start "
                 "shows here before it moves a median. Cut-short intervals are left out."
                 + _left_out(left_out, "series"), fig, tips)


def _bars(ax: Axes, pool: Sequence[Sample], metric: str, workload: str | None,
          baseline: str, tips: Tips, order: Sequence[str]) -> bool:
    """Horizontal bars, one row per layer of ``order`` (top to bottom): the median with its
    95% interval, the value and the ratio to the baseline written past the bar's end, so no
    label can collide with another however many layers there are."""
    labels = {"workload": workload} if workload is not None else {}
    layers = [la for la in order if _values(pool, metric, layer=la, **labels)]
    if not layers:
        return False
    _style(ax, "x")
    base_vals = _values(pool, metric, layer=baseline, **labels)
    base = median(base_vals) if base_vals else math.nan
    top = 0.0
    rows = {layer: len(order) - 1 - order.index(layer) for layer in layers}
    for layer in layers:
        y = rows[layer]
        vals = _values(pool, metric, layer=layer, **labels)
        m = median(vals)
        ci = bootstrap_ci(vals)
        bar = ax.barh(y, m, color=layer_color(layer), height=0.62, alpha=0.9).patches[0]
        ratio = (f", \u00d7{m / base:.3f} of {baseline}" if layer != baseline
                 and not math.isnan(base) and base > 0 else "")
        tips.add(bar, f"{layer} \u00b7 {METRIC_TITLES.get(metric, metric)}"
                      f"{' (' + workload + ')' if workload else ''}\nmedian "
                      f"{format_value(m, metric)} (95% CI {format_value(ci.low, metric)}"
                      f"\u2013{format_value(ci.high, metric)}){ratio}, {len(vals)} values",
                 layer)
        end = m
        if not math.isnan(ci.low) and ci.high > ci.low:
            ax.errorbar(m, y, xerr=[[m - ci.low], [ci.high - m]], color=INK, capsize=3,
                        linewidth=1.1)
            end = max(m, ci.high)
        text = format_value(m, metric)
        if layer != baseline and not math.isnan(base) and base > 0 and m > 0:
            text += f"  \u00d7{m / base:.2f}"
        ax.annotate(text, (end, y), textcoords="offset points", xytext=(4, 0), ha="left",
                    va="center", fontsize=8.5, color=INK)
        top = max(top, end)
    ax.set_yticks([rows[la] for la in layers], layers, fontsize=9.5)
    for tick, layer in zip(ax.get_yticklabels(), layers, strict=True):
        tick.set_color(layer_color(layer))
        tick.set_fontweight("bold")
    ax.set_ylim(-0.6, len(order) - 0.4)
    ax.set_xlim(0, top * 1.6 if top > 0 else 1)
    ax.xaxis.set_major_formatter(_unit_formatter(metric))
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
    ax.tick_params(axis="x", labelsize=8)
    if not math.isnan(base):
        ax.axvline(base, color=layer_color(baseline), linestyle=(0, (4, 3)), linewidth=1)
    return True


def _bar_chart(samples: Sequence[Sample], metrics: Sequence[str], name: str, title: str,
               caption: str, baseline: str, where: Mapping[str, str] | None,
               ) -> Chart | None:
    pool = _at([s for s in _plain(samples) if s.metric in metrics], where)
    panels = [(m, wl) for m in metrics
              for wl in sorted({s.labels.get("workload", "") for s in pool if s.metric == m})]
    if not panels:
        return None
    order = _layers(pool)
    cols = min(3, len(panels))
    nrows = math.ceil(len(panels) / cols)
    fig = _figure(max(5.2, 4.6 * cols), nrows * max(2.4, 0.3 * len(order) + 1.0))
    tips = Tips()
    axes = fig.subplots(nrows, cols, squeeze=False).ravel()
    for ax, (metric, wl) in zip(axes, panels, strict=False):
        _bars(ax, pool, metric, wl, baseline, tips, order)
        head = METRIC_TITLES.get(metric, metric)
        ax.set_title(f"{head} ({wl})" if wl else head, loc="left", fontsize=10.5, color=INK,
                     fontweight="bold")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    return Chart(name, title, caption, fig, tips)


def throughput(samples: Sequence[Sample], baseline: str = "host",
               where: Mapping[str, str] | None = None) -> Chart | None:
    """Bars of transactions/s and goodput per layer with 95% intervals and ratio to native."""
    return _bar_chart(samples, ("tps", "goodput_bps"), "throughput", "Throughput per layer",
                      "Median over repetitions with 95% bootstrap interval; \u00d7ratio to the "
                      "native baseline (dashed line). Further right is better.",
                      baseline, where)


def cpu_cost(samples: Sequence[Sample], baseline: str = "host",
             where: Mapping[str, str] | None = None) -> Chart | None:
    """Bars of CPU cost per transaction and per Gbit/s (derived samples) per layer."""
    return _bar_chart(samples, ("cpu_us_per_tx", "cpu_cores_per_gbps"), "cpu_cost",
                      "CPU cost per layer",
                      "(cpu_user_s + cpu_sys_s) / (tps \u00d7 duration) per transaction, and CPU "
                      "cores busy per Gbit/s of goodput, \u00d7ratio to native (dashed line). Further "
                      "left is better.",
                      baseline, where)


SCALING_SPLIT = "benchmark"
"""A label that splits one workload into several curves (Hadoop: one panel per benchmark)."""
NOT_AXES = frozenset({"layer", "workload", "repetition", "trial", "aa", "interval", "protocol",
                      "rank", "stream", "flow", "direction", "placement", "circuit", "client",
                      "server", "node", "role", SCALING_SPLIT, *PLACE_LABELS, "source",
                      "design", "pair", "function", "dso"})
"""Labels that are never a swept axis (what varies within a trial, or per process; how a
workload was paired; a profile's functions)."""


def sweep_axes(samples: Sequence[Sample]) -> list[str]:
    """The swept labels of a run with at least two values, ``nodes`` first: the labels every
    sample of a trial carries (the runner labels a trial with its sweep point) that are not
    per-trial bookkeeping (``NOT_AXES``)."""
    if not samples:
        return []
    common = set(samples[0].labels)
    values: dict[str, set[str]] = {}
    for s in samples:
        common &= set(s.labels)
        for k, v in s.labels.items():
            values.setdefault(k, set()).add(v)
    axes = [k for k in common - NOT_AXES if len(values[k]) >= 2]
    return sorted(axes, key=lambda k: (k != "nodes", k != "hosts", k))


def _parsers() -> tuple[Callable[[str], float], ...]:
    return (float, parse_duration, lambda t: float(parse_size(t)), parse_rate)


def axis_positions(values: Iterable[str]) -> tuple[dict[str, float], bool]:
    """Where each label value sits on the x axis, and whether the axis is numeric: numbers,
    durations (``10ms``: seconds), sizes (``64k``: bytes) or rates when every value reads as
    one of them (the first kind that reads them all), else categories in sorted order."""
    texts = sorted(set(values))
    for parse in _parsers():
        try:
            numbers = {t: float(parse(t)) for t in texts}
        except (ValueError, TypeError):
            continue
        if all(math.isfinite(v) for v in numbers.values()):
            return numbers, True
    return {t: float(i) for i, t in enumerate(texts)}, False


def _swept_for(axis: str, workload: str, workloads: set[str]) -> bool:
    """Whether ``workload``'s figures can move along ``axis``: a workload option's axis
    (``rr.request``) only moves its own workload's (``rr``, ``probe-rr``); every other
    axis (``nodes``, ``link.delay``) moves them all."""
    kind = axis.split(".", 1)[0] if "." in axis else ""

    def of(w: str) -> bool:
        return w == kind or w.endswith(f"-{kind}")

    if not kind or not any(of(w) for w in workloads):
        return True
    return of(workload)


def _axis_title(axis: str) -> str:
    return {"nodes": "nodes", "hosts": "emulated hosts"}.get(axis, axis)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "axis"


def sweep_chart_name(axis: str) -> str:
    """The name of the figure along ``axis``: ``scaling`` for nodes, else ``sweep-<axis>``."""
    return "scaling" if axis == "nodes" else f"sweep-{_slug(axis)}"


def scaling(samples: Sequence[Sample], where: Mapping[str, str] | None = None) -> Chart | None:
    """Metric vs nodes per layer (median line, 95% band) with each layer's knee marked.

    ``where`` fixes the other conditions (a ``nodes`` entry in it is ignored).
    """
    return sweep_curves(samples, "nodes", where)


@dataclass(frozen=True)
class _Curve:
    """One panel of ``sweep_curves``: a layer's median line along the axis, its 95 % band,
    a hoverable point per value and (along ``nodes``) its knee ringed."""

    ax: Any
    tips: Tips
    axis: str
    positions: Mapping[str, float]
    metric: str
    head: str
    wl: str

    def draw(self, layer: str, mine: Sequence[Sample]) -> float | None:
        """Draw ``layer``'s curve of ``mine``; the x of its knee (None without one)."""
        ax, axis, metric, head = self.ax, self.axis, self.metric, self.head
        texts = sorted({s.labels[axis] for s in mine}, key=lambda t: self.positions[t])
        xs = [self.positions[t] for t in texts]
        meds, lows, highs = [], [], []
        color = layer_color(layer)
        for text, x in zip(texts, xs, strict=True):
            vals = [s.value for s in mine if s.labels[axis] == text]
            ci = bootstrap_ci(vals)
            meds.append(median(vals))
            lows.append(ci.low)
            highs.append(ci.high)
            (point,) = ax.plot([x], [meds[-1]], color=color, marker="o", markersize=6,
                               linestyle="none")
            self.tips.add(point, f"{layer} \u00b7 {head}{' (' + self.wl + ')' if self.wl else ''}\n"
                                 f"{axis}={text}: median {format_value(meds[-1], metric)} "
                                 f"(95% CI {format_value(ci.low, metric)}\u2013"
                                 f"{format_value(ci.high, metric)}), {len(vals)} values", layer)
        band = ax.fill_between(xs, lows, highs, color=color, alpha=0.15, linewidth=0)
        (line,) = ax.plot(xs, meds, color=color, linewidth=2, label=layer)
        summary = ", ".join(f"{t}: {format_value(m, metric)}"
                            for t, m in zip(texts, meds, strict=True))
        self.tips.add(band, f"{layer} \u00b7 {head} 95% band", layer)
        self.tips.add(line, f"{layer} \u00b7 {head} by {axis}\n{summary}", layer)
        knee = find_knee(xs, meds) if axis == "nodes" else None
        if knee is None:
            return None
        ax.plot([knee.x], [knee.y], marker="o", markersize=13, markerfacecolor="none",
                markeredgecolor=color, markeredgewidth=2)
        return float(knee.x)


def _mark_knees(ax: Any, at_x: Mapping[float, list[str]], metric: str, cores: int) -> list[str]:
    """A dotted line and a note at each knee of a panel; the caption's line per knee."""
    top = metric not in {"tps", "goodput_bps"}
    knees = []
    for x, who in at_x.items():
        ax.axvline(x, color=MUTED, linestyle=(0, (2, 3)), linewidth=1)
        per_core = f" ({x / cores:.3g} per core)" if cores else ""
        ax.annotate(f"knee @ {counted(x, 'node')}{per_core}\n" + ", ".join(who),
                    (x, 1.0 if top else 0.0),
                    xycoords=("data", "axes fraction"), textcoords="offset points",
                    xytext=(5, -4 if top else 4), va="top" if top else "bottom",
                    fontsize=8, color=INK)
        knees.append(f"{METRIC_TITLES.get(metric, metric)} at {counted(x, 'node')}"
                     + (f" = {x / cores:.3g} per core of {cores}" if cores else "")
                     + f" ({', '.join(who)})")
    return knees


def sweep_curves(samples: Sequence[Sample], axis: str,
                 where: Mapping[str, str] | None = None, cores: int = 0) -> Chart | None:
    """Metric vs the swept label ``axis`` per layer (median line, 95% band, one hoverable
    point per value); along ``nodes`` each layer's knee is marked, also in nodes per core
    when ``cores`` (the CPUs the nodes could use, ``knee.node_cores``) is known. ``where``
    fixes the other conditions (its ``axis`` entry is ignored). Named ``scaling`` for nodes,
    else ``sweep-<axis>``."""
    fixed = {k: v for k, v in (where or {}).items() if k != axis}
    pool = [s for s in _at(_plain(samples), fixed) if s.labels.get(axis, "") != ""]
    positions, numeric = axis_positions(s.labels[axis] for s in pool)

    def key(s: Sample) -> str:
        wl, part = s.labels.get("workload", ""), s.labels.get(SCALING_SPLIT, "")
        return f"{wl} {part}".strip()

    # a curve needs two values; a knee (find_knee) needs more
    workloads = {s.labels.get("workload", "") for s in pool}
    pool = [s for s in pool if _swept_for(axis, s.labels.get("workload", ""), workloads)]
    panels = [(m, wl) for m in SCALING_METRICS
              for wl in sorted({key(s) for s in pool if s.metric == m})
              if len({s.labels[axis] for s in pool if s.metric == m and key(s) == wl}) >= 2]
    if any(m == "rtt_p99_us" for m, _ in panels):
        panels = [(m, wl) for m, wl in panels if m != "rtt_p50_us"]
    if not panels:
        return None
    cols = min(2, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig = _figure(6.0 * cols, 3.9 * rows)
    tips = Tips()
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    knees: list[str] = []
    unit_of_axis = _axis_title(axis)
    for ax, (metric, wl) in zip(axes, panels, strict=False):
        _style(ax, "both")
        sub = [s for s in pool if s.metric == metric and key(s) == wl]
        head = METRIC_TITLES.get(metric, metric)
        at_x: dict[float, list[str]] = {}
        curve = _Curve(ax, tips, axis, positions, metric, head, wl)
        for layer in _layers(sub):
            mine = [s for s in sub if s.labels.get("layer", "") == layer]
            knee = curve.draw(layer, mine)
            if knee is not None:
                at_x.setdefault(knee, []).append(layer)
        knees += _mark_knees(ax, at_x, metric, cores)
        shown = sorted({s.labels[axis] for s in sub}, key=lambda t: positions[t])
        ticks = [positions[t] for t in shown]
        if numeric and ticks[0] > 0 and ticks[-1] / ticks[0] > 64:
            ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, shown, fontsize=8)
        ax.minorticks_off()
        ax.yaxis.set_major_formatter(_unit_formatter(metric))
        ax.set_xlabel(unit_of_axis, fontsize=9, color=MUTED)
        ax.set_title(f"{head} ({wl})" if wl else head, loc="left", fontsize=11, color=INK,
                     fontweight="bold")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    _figure_legend(fig, axes[:len(panels)])
    at = _describe(fixed)
    caption = (f"Median over repetitions per value of {axis}"
               f"{' (at ' + at + ')' if at else ''}, shaded 95% interval; hover a point for "
               "its figures.")
    if axis == "nodes":
        caption += " Ringed: knee (two-segment piecewise-linear fit)."
        if knees:
            caption += " Knees: " + "; ".join(knees) + "."
        return Chart("scaling", "Scaling with the number of nodes", caption, fig, tips)
    return Chart(sweep_chart_name(axis), f"Along the swept {unit_of_axis}", caption, fig, tips)


def _per_trial_median(samples: Iterable[Sample],
                      key: Callable[[Sample], tuple[str, ...]],
                      ) -> dict[tuple[str, ...], float]:
    """Sum within a trial over the other labels, then median over trials, per key."""
    per_trial: dict[tuple[str, ...], dict[str, float]] = {}
    for s in samples:
        trial = s.labels.get("trial", "") + "/" + s.labels.get("repetition", "")
        bucket = per_trial.setdefault(key(s), {})
        bucket[trial] = bucket.get(trial, 0.0) + s.value
    return {k: median(v.values()) for k, v in per_trial.items()}


def lab_role(labels: Mapping[str, str]) -> tuple[str, str]:
    """A sample's namespace and device by their role in the lab (``h1``, ``t1``): every lab
    the run builds has a prefix of its own (``vnb<id>``, see ``topology.Names``: namespaces
    ``<prefix>-<role>``, devices ``<prefix><role>``), so the same device of every
    repetition is one row. Names without the namespace's prefix are kept whole."""
    netns, device = labels.get("netns", ""), labels.get("device", "")
    prefix, dash, role = netns.partition("-")
    if not dash or not prefix:
        return netns, device
    return role, device[len(prefix):] if device.startswith(prefix) else device


DROPS_ROWS = 14
"""At most this many rows per panel of the drops figure (the caption says how many more)."""


def drops_and_retransmits(samples: Sequence[Sample],
                          where: Mapping[str, str] | None = None) -> Chart | None:
    """Packet drops per layer and device (by its role in the lab) and TCP retransmits per
    layer and workload, medians per trial at ``where``.

    None when no drop or retransmit counter is above zero there (the report then says what
    the run counted elsewhere: ``coverage.counters_sentence``).
    """
    pool = _at([s for s in samples if s.metric in COUNTER_METRICS], where)
    drops = _per_trial_median((s for s in pool if s.metric in DROP_METRICS),
                              lambda s: (s.labels.get("layer", ""), *lab_role(s.labels)))
    retrans = _per_trial_median((s for s in pool if s.metric in RETRANS_METRICS),
                                lambda s: (s.labels.get("layer", ""),
                                           s.labels.get("workload", "")))
    drops = {k: v for k, v in drops.items() if v > 0}
    retrans = {k: v for k, v in retrans.items() if v > 0}
    panels = [p for p in (("drops", drops), ("retrans", retrans)) if p[1]]
    if not panels:
        return None
    n_rows = max(len(d) for _, d in panels)
    fig = _figure(5.4 * len(panels), max(2.4, 0.36 * min(n_rows, DROPS_ROWS) + 1.2))
    tips = Tips()
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    left_out: list[str] = []
    for ax, (kind, data) in zip(axes, panels, strict=True):
        _style(ax, "x")
        ordered = sorted(data.items(), key=lambda kv: (layer_sort_key(kv[0][0]), kv[0]))
        items = ordered[:DROPS_ROWS]
        if len(ordered) > len(items):
            left_out.append(f"{len(ordered) - len(items)} more "
                            f"{'devices' if kind == 'drops' else 'workloads'} with "
                            f"{'drops' if kind == 'drops' else 'retransmissions'} "
                            "(see the detail table)")
        labels = [" \u00b7 ".join(p for p in key if p) for key, _ in items]
        shown = min(n_rows, DROPS_ROWS)  # the same row height in every panel, from the top
        ys = [shown - 1 - i for i in range(len(items))]
        bars = ax.barh(ys, [v for _, v in items], color=[layer_color(k[0]) for k, _ in items],
                       height=0.62, alpha=0.9)
        for bar, label, (key, v) in zip(bars.patches, labels, items, strict=True):
            tips.add(bar, f"{label}: {v:,.0f} per trial (median over trials)", key[0])
        for y, (_, v) in zip(ys, items, strict=True):
            ax.annotate(f"{v:,.0f}", (v, y), textcoords="offset points", xytext=(4, -3),
                        fontsize=8, color=INK)
        ax.set_yticks(ys, labels, fontsize=8)
        ax.set_ylim(-0.6, shown - 0.4)
        ax.set_xlim(0, max(v for _, v in items) * 1.25)
        ax.set_title("packet drops per trial (rx+tx)" if kind == "drops"
                     else "TCP retransmitted segments per trial", loc="left", fontsize=11,
                     color=INK, fontweight="bold")
    at = _describe(where)
    return Chart("drops", "Drops and retransmissions",
                 f"Median per trial{' at ' + at if at else ''}, summed over directions (and "
                 "namespaces for retransmissions); namespaces and devices without the lab's "
                 "prefix (sw: the underlay switch, h1: emulated host 1, n0: node 0; t1: host "
                 "1's tun device...). Only counters above zero are "
                 "shown" + (": " + "; ".join(left_out) + " not drawn." if left_out else "."),
                 fig, tips)
