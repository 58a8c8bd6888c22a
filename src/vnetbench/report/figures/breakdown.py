"""The breakdown figure: per workload, each layer's added cost against the baseline as a bar
of the parts that explain it, with the measured difference and the noise floor beside it.

One panel per explained workload condition (at most ``MAX_PANELS``): for a request/response
workload the time a transaction adds (µs), for a stream the CPU it adds per Gbit/s. Each
layer's row stacks its parts from zero (added work to the right, work a part no longer does to
the left), coloured by who spent it; the CPU outside the lab's processes is hatched. A black
diamond marks the measured difference (the headline's) with the noise floor as a whisker; a
remainder beyond the floor is written at the row's end as unexplained.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.patches import Patch

from vnetbench.explain.attribution import Attribution
from vnetbench.explain.run import ConditionWhy
from vnetbench.report.figures.common import INK, MUTED, Chart, Tips, layer_color, new_figure, style_axes
from vnetbench.report.tables import layer_sort_key

PART_COLORS = {"client": "#60a5fa", "server": "#34d399", "daemons": "#f59e0b",
               "other nodes": "#a78bfa"}
"""One colour per component, the same in every panel."""
MAX_PANELS = 3


def chosen(why: ConditionWhy, layer: str) -> Attribution | None:
    """The attribution a panel (and the why column) shows for ``layer``: the round trip of a
    request/response workload, else the lab's CPU per unit of work."""
    lw = why.layer(layer)
    if lw is None:
        return None
    return lw.round_trip or lw.cpu


def _unit(attr: Attribution) -> str:
    return "µs" if attr.unit.startswith("µs") else "cores/(Gbit/s)"


def _fmt(value: float, attr: Attribution) -> str:
    if attr.unit.startswith("µs"):
        return f"{value:+.1f} µs"
    return f"{value:+.3g} cores/(Gbit/s)"


def _row(ax: Axes, y: float, attr: Attribution, tips: Tips, layer: str
         ) -> tuple[float, float]:
    """Draw one layer's stacked parts at ``y``; returns the row's extent (lowest, highest
    x)."""
    right = left = 0.0
    lo = hi = 0.0
    parts = [(p.name, p.value, p.low, p.high) for p in attr.parts if p.value != 0.0]
    for name, value, low, high in parts:
        start = right if value > 0 else left
        bar = ax.barh(y, value, left=start, height=0.6, color=PART_COLORS.get(name, "#d1d5db"),
                      edgecolor="white", linewidth=0.6).patches[0]
        if value > 0:
            right += value
        else:
            left += value
        interval = (f" (95% CI {_fmt(low, attr)} to {_fmt(high, attr)})"
                    if not math.isnan(low) else "")
        tips.add(bar, f"{layer} \u00b7 {name}: {_fmt(value, attr)}{interval}", layer)
        lo, hi = min(lo, left), max(hi, right)
    if not math.isnan(attr.measured):
        floor = 0.0 if math.isnan(attr.floor) else attr.floor
        marker = ax.errorbar(attr.measured, y, xerr=floor, fmt="D", color=INK, markersize=5,
                             capsize=3, linewidth=1)
        state = ("adds up within the noise floor" if attr.within_floor
                 else f"unexplained {_fmt(attr.remainder, attr)}")
        tips.add(marker.lines[0], f"{layer} \u00b7 measured {_fmt(attr.measured, attr)} "
                                  f"({attr.source}); floor \u00b1{abs(floor):.3g}; parts "
                                  f"{_fmt(attr.explained_value, attr)}: {state}", layer)
        lo = min(lo, attr.measured - abs(floor))
        hi = max(hi, attr.measured + abs(floor))
    return lo, hi


def breakdown(explained: Sequence[ConditionWhy], baseline: str = "host") -> Chart | None:
    """The figure (module docstring); None when no condition has an attribution."""
    panels = [why for why in explained
              if any(chosen(why, lw.layer) is not None for lw in why.layers)][:MAX_PANELS]
    if not panels:
        return None
    rows = max(len(why.layers) for why in panels)
    fig = new_figure(4.6 * len(panels) + 0.6, max(2.8, 0.42 * rows + 1.3))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    tips = Tips()
    for ax, why in zip(axes, panels, strict=True):
        style_axes(ax, "x")
        layers = sorted((lw.layer for lw in why.layers), key=layer_sort_key)
        low = high = 0.0
        first: Attribution | None = None
        notes: list[tuple[float, str]] = []
        for k, layer in enumerate(layers):
            attr = chosen(why, layer)
            lw = why.layer(layer)
            if attr is None or lw is None:
                continue
            first = first or attr
            y = len(layers) - 1 - k
            row_low, row_high = _row(ax, y, attr, tips, layer)
            low, high = min(low, row_low), max(high, row_high)
            if not attr.within_floor and not math.isnan(attr.remainder):
                notes.append((y, f"unexplained {_fmt(attr.remainder, attr)}"))
        ax.set_yticks([len(layers) - 1 - k for k in range(len(layers))], layers, fontsize=9)
        for tick, layer in zip(ax.get_yticklabels(), layers, strict=True):
            tick.set_color(layer_color(layer))
            tick.set_fontweight("bold")
        ax.axvline(0, color=MUTED, linewidth=0.8)
        span = (high - low) or 1.0
        left, right = low - 0.08 * span, high + 0.08 * span
        ax.set_xlim(left, right)
        for row_y, text in notes:  # above the row, at the panel's right edge
            ax.annotate(text, (right, row_y + 0.31), fontsize=7, color=MUTED, ha="right",
                        va="bottom")
        ax.set_ylim(-0.7, len(layers) - 0.3)
        ax.tick_params(axis="x", labelsize=8)
        if first is not None:
            what = ("added round trip" if first.quantity == "round trip"
                    else "added CPU of the lab")
            ax.set_title(f"{why.name}: {what} ({_unit(first)})", loc="left", fontsize=10.5,
                         color=INK, fontweight="bold")
    handles = [Patch(facecolor=color) for color in PART_COLORS.values()]
    names = ["client", "server", "layer daemons", "other nodes"]
    fig.legend(handles, names, loc="outside lower center", ncols=len(names), frameon=False,
               fontsize=8.5)
    return Chart("breakdown", "Why each layer costs what it costs",
                 f"Against {baseline}, per transaction (request/response: the added time, "
                 "split into the CPU each of the lab's processes added) or per Gbit/s "
                 "(streams: the CPU the lab added). Bars: the parts, round by round where "
                 "the run was paired; diamond: the measured difference (the headline's) with "
                 "the noise floor; what the bars leave beyond it is written as unexplained. "
                 "Hover a bar for its 95% interval.", fig, tips)
