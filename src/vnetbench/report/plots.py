"""Figures of the report, drawn with matplotlib's object API on the Agg canvas (no pyplot).

Every function takes samples and returns a :class:`Chart` (figure + title + caption) or
``None`` when there is nothing to draw, so the report omits empty sections. Colours are fixed
per layer across all figures; the native baseline (``host``) is always grey.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import matplotlib

matplotlib.use("Agg")

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter

from vnetbench.report.knee import find_knee
from vnetbench.report.tables import METRIC_TITLES, format_value, layer_sort_key
from vnetbench.results.model import Sample
from vnetbench.results.stats import bootstrap_ci, median

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


@dataclass
class Chart:
    """One figure with the text that goes around it."""

    name: str
    title: str
    caption: str
    figure: Figure

    def png(self, dpi: int = 110) -> bytes:
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=dpi, bbox_inches="tight",
                            facecolor="white")
        return buf.getvalue()


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


def _plain(samples: Iterable[Sample]) -> list[Sample]:
    return [s for s in samples if not any(k in s.labels for k in PLACE_LABELS)]


def _at(samples: Iterable[Sample], where: Mapping[str, str] | None) -> list[Sample]:
    """The samples measured under ``where`` (label values; None = all)."""
    if not where:
        return list(samples)
    return [s for s in samples if all(s.labels.get(k, "") == v for k, v in where.items())]


def _layers(samples: Iterable[Sample]) -> list[str]:
    return sorted({s.labels.get("layer", "") for s in samples}, key=layer_sort_key)


def _describe(where: Mapping[str, str] | None) -> str:
    if not where:
        return ""
    parts = [f"{where['nodes']} nodes" if where.get("nodes") else "",
             f"{where['hosts']} hosts" if where.get("hosts") else ""]
    parts += [f"{k}={v}" for k, v in where.items() if k not in {"nodes", "hosts"}]
    return ", ".join(p for p in parts if p)


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
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, (title, rows) in zip(axes, panels, strict=True):
        _style(ax, "x")
        all_vals = [v for _, p in rows for v in p if not math.isnan(v)]
        lo, hi = min(all_vals), max(all_vals)
        log = hi / max(lo, 1e-9) > 30
        for i, (layer, p) in enumerate(reversed(rows)):
            color = layer_color(layer)
            p1, p25, p50, p75, p99 = p
            present = [v for v in p if not math.isnan(v)]
            lo_end, hi_end = min(present), max(present)
            if hi_end > lo_end:
                ax.plot([lo_end, hi_end], [i, i], color=color, linewidth=1.6,
                        solid_capstyle="butt")
                for end, known in ((lo_end, not math.isnan(p1)), (hi_end, not math.isnan(p99))):
                    if known:
                        ax.plot([end, end], [i - 0.16, i + 0.16], color=color, linewidth=1.6)
            if not math.isnan(p25) and not math.isnan(p75):
                ax.add_patch(Rectangle((p25, i - 0.28), p75 - p25, 0.56, facecolor=color,
                                       alpha=0.28, edgecolor=color, linewidth=1.2))
            ax.plot([p50, p50], [i - 0.28, i + 0.28], color=color, linewidth=3)
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
                 "Further right is slower.", fig)


def _bars(ax: Axes, pool: Sequence[Sample], metric: str, workload: str | None,
          baseline: str) -> bool:
    labels = {"workload": workload} if workload is not None else {}
    layers = [la for la in _layers(pool) if _values(pool, metric, layer=la, **labels)]
    if not layers:
        return False
    _style(ax)
    base_vals = _values(pool, metric, layer=baseline, **labels)
    base = median(base_vals) if base_vals else math.nan
    top = 0.0
    for i, layer in enumerate(layers):
        vals = _values(pool, metric, layer=layer, **labels)
        m = median(vals)
        ci = bootstrap_ci(vals)
        ax.bar(i, m, color=layer_color(layer), width=0.62, alpha=0.9)
        if not math.isnan(ci.low) and ci.high > ci.low:
            ax.errorbar(i, m, yerr=[[m - ci.low], [ci.high - m]], color=INK, capsize=4,
                        linewidth=1.2)
        ax.annotate(format_value(m, metric), (i, max(m, ci.high if not math.isnan(ci.high) else m)),
                    textcoords="offset points", xytext=(0, 4), ha="center", va="bottom",
                    fontsize=8.5, color=INK)
        if layer != baseline and not math.isnan(base) and base > 0 and m > 0:
            ax.annotate(f"\u00d7{m / base:.2f}", (i, m), textcoords="offset points",
                        xytext=(0, -6), ha="center", va="top", fontsize=9, color="white",
                        fontweight="bold")
        top = max(top, m, ci.high if not math.isnan(ci.high) else 0.0)
    ax.set_xticks(range(len(layers)), layers, fontsize=10)
    for tick, layer in zip(ax.get_xticklabels(), layers, strict=True):
        tick.set_color(layer_color(layer))
        tick.set_fontweight("bold")
    ax.set_ylim(0, top * 1.28 if top > 0 else 1)
    ax.yaxis.set_major_formatter(_unit_formatter(metric))
    if not math.isnan(base):
        ax.axhline(base, color=layer_color(baseline), linestyle=(0, (4, 3)), linewidth=1)
    return True


def _bar_chart(samples: Sequence[Sample], metrics: Sequence[str], name: str, title: str,
               caption: str, baseline: str, where: Mapping[str, str] | None,
               ) -> Chart | None:
    pool = _at(_plain(samples), where)
    panels = [(m, wl) for m in metrics
              for wl in sorted({s.labels.get("workload", "") for s in pool if s.metric == m})]
    if not panels:
        return None
    fig = _figure(max(5.2, 4.4 * len(panels)), 3.6)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (metric, wl) in zip(axes, panels, strict=True):
        _bars(ax, pool, metric, wl, baseline)
        head = METRIC_TITLES.get(metric, metric)
        ax.set_title(f"{head} ({wl})" if wl else head, loc="left", fontsize=11, color=INK,
                     fontweight="bold")
    return Chart(name, title, caption, fig)


def throughput(samples: Sequence[Sample], baseline: str = "host",
               where: Mapping[str, str] | None = None) -> Chart | None:
    """Bars of transactions/s and goodput per layer with 95% intervals and ratio to native."""
    return _bar_chart(samples, ("tps", "goodput_bps"), "throughput", "Throughput per layer",
                      "Median over repetitions with 95% bootstrap interval; \u00d7ratio to the "
                      "native baseline (dashed line). Higher is better.",
                      baseline, where)


def cpu_cost(samples: Sequence[Sample], baseline: str = "host",
             where: Mapping[str, str] | None = None) -> Chart | None:
    """Bars of CPU cost per transaction and per Gbit/s (derived samples) per layer."""
    return _bar_chart(samples, ("cpu_us_per_tx", "cpu_cores_per_gbps"), "cpu_cost",
                      "CPU cost per layer",
                      "(cpu_user_s + cpu_sys_s) / (tps \u00d7 duration) per transaction, and CPU "
                      "cores busy per Gbit/s of goodput. Lower is better.",
                      baseline, where)


SCALING_METRICS = ("tps", "goodput_bps", "rounds_per_s", "rtt_p99_us", "sync_p99_us",
                   "rtt_p50_us", "elapsed_s")
SCALING_SPLIT = "benchmark"
"""A label that splits one workload into several curves (Hadoop: one panel per benchmark)."""


def _nodes(s: Sample) -> float:
    try:
        return float(s.labels.get("nodes", "nan"))
    except ValueError:
        return math.nan


def scaling(samples: Sequence[Sample], where: Mapping[str, str] | None = None) -> Chart | None:
    """Metric vs nodes per layer (median line, 95% band) with each layer's knee marked.

    ``where`` fixes the other conditions (a ``nodes`` entry in it is ignored).
    """
    fixed = {k: v for k, v in (where or {}).items() if k != "nodes"}
    pool = [s for s in _at(_plain(samples), fixed) if not math.isnan(_nodes(s))]
    def key(s: Sample) -> str:
        wl, part = s.labels.get("workload", ""), s.labels.get(SCALING_SPLIT, "")
        return f"{wl} {part}".strip()

    # a curve needs two node counts; a knee (find_knee) needs more
    panels = [(m, wl) for m in SCALING_METRICS
              for wl in sorted({key(s) for s in pool if s.metric == m})
              if len({_nodes(s) for s in pool if s.metric == m and key(s) == wl}) >= 2]
    if any(m == "rtt_p99_us" for m, _ in panels):
        panels = [(m, wl) for m, wl in panels if m != "rtt_p50_us"]
    if not panels:
        return None
    cols = min(2, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig = _figure(6.0 * cols, 3.9 * rows)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    knees: list[str] = []
    for ax, (metric, wl) in zip(axes, panels, strict=False):
        _style(ax, "both")
        sub = [s for s in pool if s.metric == metric and key(s) == wl]
        at_x: dict[float, list[str]] = {}
        for layer in _layers(sub):
            mine = [s for s in sub if s.labels.get("layer", "") == layer]
            xs = sorted({_nodes(s) for s in mine})
            meds, lows, highs = [], [], []
            for x in xs:
                vals = [s.value for s in mine if _nodes(s) == x]
                ci = bootstrap_ci(vals)
                meds.append(median(vals))
                lows.append(ci.low)
                highs.append(ci.high)
            color = layer_color(layer)
            ax.fill_between(xs, lows, highs, color=color, alpha=0.15, linewidth=0)
            ax.plot(xs, meds, color=color, marker="o", markersize=4, linewidth=2, label=layer)
            knee = find_knee(xs, meds)
            if knee is not None:
                ax.plot([knee.x], [knee.y], marker="o", markersize=13, markerfacecolor="none",
                        markeredgecolor=color, markeredgewidth=2)
                at_x.setdefault(knee.x, []).append(layer)
        top = metric not in {"tps", "goodput_bps"}
        for x, who in at_x.items():
            ax.axvline(x, color=MUTED, linestyle=(0, (2, 3)), linewidth=1)
            ax.annotate(f"knee @ {x:g} nodes\n" + ", ".join(who), (x, 1.0 if top else 0.0),
                        xycoords=("data", "axes fraction"), textcoords="offset points",
                        xytext=(5, -4 if top else 4), va="top" if top else "bottom",
                        fontsize=8, color=INK)
            knees.append(f"{METRIC_TITLES.get(metric, metric)} at {x:g} nodes "
                         f"({', '.join(who)})")
        ticks = sorted({_nodes(s) for s in sub})
        if ticks[0] > 0 and ticks[-1] / ticks[0] > 64:
            ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks], fontsize=8)
        ax.minorticks_off()
        ax.yaxis.set_major_formatter(_unit_formatter(metric))
        ax.set_xlabel("nodes", fontsize=9, color=MUTED)
        head = METRIC_TITLES.get(metric, metric)
        ax.set_title(f"{head} ({wl})" if wl else head, loc="left", fontsize=11, color=INK,
                     fontweight="bold")
        ax.legend(frameon=False, fontsize=8, loc="upper left")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    caption = "Median over repetitions per node count, shaded 95% interval; ringed: knee " \
              "(two-segment piecewise-linear fit)."
    if knees:
        caption += " Knees: " + "; ".join(knees) + "."
    return Chart("scaling", "Scaling with the number of nodes", caption, fig)


def _per_trial_median(samples: Iterable[Sample], key_labels: Sequence[str],
                      ) -> dict[tuple[str, ...], float]:
    """Sum within a trial over the other labels, then median over trials, per key."""
    per_trial: dict[tuple[str, ...], dict[str, float]] = {}
    for s in samples:
        key = tuple(s.labels.get(k, "") for k in key_labels)
        trial = s.labels.get("trial", "") + "/" + s.labels.get("repetition", "")
        bucket = per_trial.setdefault(key, {})
        bucket[trial] = bucket.get(trial, 0.0) + s.value
    return {k: median(v.values()) for k, v in per_trial.items()}


def drops_and_retransmits(samples: Sequence[Sample],
                          where: Mapping[str, str] | None = None) -> Chart | None:
    """Packet drops per (layer, netns, device) and TCP retransmits per layer and workload.

    None when no drop or retransmit counter is above zero (the report then says so).
    """
    pool = _at(samples, where)
    drops = _per_trial_median((s for s in pool if s.metric in {"rx_drops", "tx_drops"}),
                              ("layer", "netns", "device"))
    retrans = _per_trial_median((s for s in pool if s.metric == "tcp_retrans_segs"),
                                ("layer", "workload"))
    drops = {k: v for k, v in drops.items() if v > 0}
    retrans = {k: v for k, v in retrans.items() if v > 0}
    panels = [p for p in (("drops", drops), ("retrans", retrans)) if p[1]]
    if not panels:
        return None
    n_rows = max(len(d) for _, d in panels)
    fig = _figure(5.4 * len(panels), max(2.4, 0.36 * min(n_rows, 14) + 1.2))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (kind, data) in zip(axes, panels, strict=True):
        _style(ax, "x")
        items = sorted(data.items(), key=lambda kv: (layer_sort_key(kv[0][0]), kv[0]))[:14]
        labels = [" \u00b7 ".join(p for p in key if p) for key, _ in items]
        ys = list(range(len(items)))[::-1]
        ax.barh(ys, [v for _, v in items], color=[layer_color(k[0]) for k, _ in items],
                height=0.62, alpha=0.9)
        for y, (_, v) in zip(ys, items, strict=True):
            ax.annotate(f"{v:,.0f}", (v, y), textcoords="offset points", xytext=(4, -3),
                        fontsize=8, color=INK)
        ax.set_yticks(ys, labels, fontsize=8)
        ax.set_xlim(0, max(v for _, v in items) * 1.2)
        ax.set_title("packet drops per trial (rx+tx)" if kind == "drops"
                     else "TCP retransmitted segments per trial", loc="left", fontsize=11,
                     color=INK, fontweight="bold")
    return Chart("drops", "Drops and retransmissions",
                 "Median per trial over repetitions, summed over directions (and namespaces "
                 "for retransmissions). Only non-zero counters are shown.", fig)
