"""The latency figures: percentiles per layer (whiskers p1-p99, box p25-p75, p50) and the CDF
of every trial's latency histograms merged per layer (logit y, so the tail reads as well as
the median)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from matplotlib.patches import Rectangle

from vnetbench.report.figures.common import (
    INK,
    MAX_PANELS,
    MUTED,
    PCTLS,
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
    values_of,
)
from vnetbench.report.tables import (
    format_value,
    layer_sort_key,
    select,
)
from vnetbench.results.histogram import HistogramRecord, LatencyHistogram
from vnetbench.results.model import Sample
from vnetbench.results.stats import median

DISTRIBUTIONS = (("rtt", "round-trip time"), ("sync", "barrier sync time"))


def latency_whiskers(samples: Sequence[Sample],
                     where: Mapping[str, str] | None = None) -> Chart | None:
    """Per layer: whisker p1..p99, box p25..p75, median line (medians over repetitions).

    One panel per workload and distribution (``rtt_p*_us``, ``sync_p*_us``).
    """
    pool = measured_at(plain_samples(samples), where)
    panels: list[tuple[str, list[tuple[str, list[float]]]]] = []
    for prefix, what in DISTRIBUTIONS:
        names = [m.replace("rtt_", f"{prefix}_", 1) for m in PCTLS]
        workloads = sorted({s.labels.get("workload", "") for s in pool if s.metric == names[2]})
        for wl in workloads:
            rows = []
            for layer in layers_in(s for s in pool if s.labels.get("workload", "") == wl):
                pct = [median(values_of(pool, m, layer=layer, workload=wl)) for m in names]
                if not math.isnan(pct[2]):
                    rows.append((layer, pct))
            if rows:
                panels.append((f"{wl or 'latency'}: {what} percentiles", rows))
    if not panels:
        return None
    height = 0.9 + sum(0.55 * len(rows) + 0.6 for _, rows in panels)
    fig = new_figure(10.5, max(2.6, height))
    tips = Tips()
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, (title, rows) in zip(axes, panels, strict=True):
        style_axes(ax, "x")
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
        ax.xaxis.set_major_formatter(unit_formatter("rtt_p50_us"))
        ax.set_title(title, loc="left", fontsize=11, color=INK, fontweight="bold")
    axes[-1].set_xlabel("whiskers p1\u2013p99, box p25\u2013p75, bar p50",
                        fontsize=9, color=MUTED)
    at = describe_where(where)
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
    fig = new_figure(max(8.0, 6.0 * cols), 4.0 * rows)
    tips = Tips()
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, ((metric, workload, extra), by_layer) in zip(axes, panels, strict=False):
        style_axes(ax, "both")
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
        ax.xaxis.set_major_formatter(unit_formatter("rtt_p50_us"))
        ax.set_ylabel("fraction at most x", fontsize=9, color=MUTED)
        title = f"{CDF_TITLES[metric]} ({workload}{', ' + extra if extra else ''})"
        ax.set_title(title, loc="left", fontsize=11, color=INK, fontweight="bold")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    figure_legend(fig, axes[:len(panels)])
    at = describe_where(where)
    return Chart("cdf", "Latency distribution (CDF of the merged histograms)",
                 "Every trial's HDR histogram merged per layer"
                 f"{' at ' + at if at else ''}; y is the fraction of values at most x on a "
                 "logit scale (p50, p90, p99, p99.9 marked). Further left is faster; hover a "
                 "curve for its percentiles." + left_out_note(left_out, "distribution"), fig, tips)
