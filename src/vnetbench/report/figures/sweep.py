"""The figures along every swept axis: a metric against the axis's values per layer (median
line, 95 % band, a point per value); along ``nodes`` each layer's knee ringed, also in nodes
per core."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vnetbench.report.figures.common import (
    INK,
    MUTED,
    PLACE_LABELS,
    Chart,
    Tips,
    describe_where,
    figure_legend,
    layer_color,
    layers_in,
    measured_at,
    new_figure,
    plain_samples,
    style_axes,
    unit_formatter,
)
from vnetbench.report.knee import find_knee
from vnetbench.report.tables import (
    format_value,
)
from vnetbench.results.metrics import METRIC_TITLES, SCALING_METRICS
from vnetbench.results.model import Sample
from vnetbench.results.stats import bootstrap_ci, median
from vnetbench.units import counted, parse_duration, parse_rate, parse_size

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


def follows_axis(samples: Sequence[Sample], axis: str, key: str) -> bool:
    """Whether label ``key`` takes one value at each value of ``axis`` and differs between
    them (an open loop's ``offered`` rate along ``rr.share``): a condition the axis sets,
    never one to hold fixed along it."""
    seen: dict[str, set[str]] = {}
    for s in samples:
        if key in s.labels:
            seen.setdefault(s.labels[axis], set()).add(s.labels[key])
    values = [next(iter(v)) for v in seen.values() if len(v) == 1]
    return len(seen) >= 2 and len(values) == len(seen) and len(set(values)) == len(values)


def sweep_curves(samples: Sequence[Sample], axis: str,
                 where: Mapping[str, str] | None = None, cores: int = 0) -> Chart | None:
    """Metric vs the swept label ``axis`` per layer (median line, 95% band, one hoverable
    point per value); along ``nodes`` each layer's knee is marked, also in nodes per core
    when ``cores`` (the CPUs the nodes could use, ``knee.node_cores``) is known. ``where``
    fixes the other conditions (its ``axis`` entry is ignored). Named ``scaling`` for nodes,
    else ``sweep-<axis>``."""
    plain = [s for s in plain_samples(samples) if s.labels.get(axis, "") != ""]
    fixed = {k: v for k, v in (where or {}).items()
             if k != axis and not follows_axis(plain, axis, k)}
    pool = measured_at(plain, fixed)
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
    fig = new_figure(6.0 * cols, 3.9 * rows)
    tips = Tips()
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    knees: list[str] = []
    unit_of_axis = _axis_title(axis)
    for ax, (metric, wl) in zip(axes, panels, strict=False):
        style_axes(ax, "both")
        sub = [s for s in pool if s.metric == metric and key(s) == wl]
        head = METRIC_TITLES.get(metric, metric)
        at_x: dict[float, list[str]] = {}
        curve = _Curve(ax, tips, axis, positions, metric, head, wl)
        for layer in layers_in(sub):
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
        ax.yaxis.set_major_formatter(unit_formatter(metric))
        ax.set_xlabel(unit_of_axis, fontsize=9, color=MUTED)
        ax.set_title(f"{head} ({wl})" if wl else head, loc="left", fontsize=11, color=INK,
                     fontweight="bold")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    figure_legend(fig, axes[:len(panels)])
    at = describe_where(fixed)
    caption = (f"Median over repetitions per value of {axis}"
               f"{' (at ' + at + ')' if at else ''}, shaded 95% interval; hover a point for "
               "its figures.")
    if axis == "nodes":
        caption += " Ringed: knee (two-segment piecewise-linear fit)."
        if knees:
            caption += " Knees: " + "; ".join(knees) + "."
        return Chart("scaling", "Scaling with the number of nodes", caption, fig, tips)
    return Chart(sweep_chart_name(axis), f"Along the swept {unit_of_axis}", caption, fig, tips)
