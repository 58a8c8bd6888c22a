"""What every figure of the report shares: a colour per layer (the same in every figure; the
native baseline ``host`` grey), the ``Chart`` a figure function returns (figure, title,
caption, hover tips), the axes' style, one legend per figure, and the sample filters the
figures draw from. Drawn with matplotlib's object API (no pyplot), written as SVG."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import matplotlib

matplotlib.use("Agg")

from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from vnetbench.report.svg import Tip, figure_svg, tip_gid
from vnetbench.report.tables import (
    describe_config,
    format_value,
    layer_sort_key,
    select,
)
from vnetbench.results.model import Sample

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


def new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    return fig


def style_axes(ax: Axes, grid_axis: Literal["both", "x", "y"] = "y") -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_color("#9ca3af")
    ax.tick_params(colors=INK, labelsize=9)
    ax.grid(True, axis=grid_axis, color=GRID, linewidth=0.8)
    ax.set_axisbelow(True)


def figure_legend(fig: Figure, axes: Iterable[Axes]) -> None:
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


def left_out_note(count: int, what: str) -> str:
    """`` 2 more distributions are not drawn: see the detail table.`` (empty for none)."""
    if count <= 0:
        return ""
    return (f" {count} more {what}{'' if count == 1 or what.endswith('s') else 's'} "
            f"{'is' if count == 1 else 'are'} not drawn: see the detail table.")


def plain_samples(samples: Iterable[Sample]) -> list[Sample]:
    return [s for s in samples if not any(k in s.labels for k in PLACE_LABELS)]


def measured_at(samples: Iterable[Sample], where: Mapping[str, str] | None) -> list[Sample]:
    """The samples measured under ``where`` (label values; None = all); a label no sample
    of a metric and workload carries does not filter them (``tables.select``)."""
    return select(samples, where)


def layers_in(samples: Iterable[Sample]) -> list[str]:
    return sorted({s.labels.get("layer", "") for s in samples}, key=layer_sort_key)


def describe_where(where: Mapping[str, str] | None) -> str:
    return describe_config(where)


def values_of(samples: Iterable[Sample], metric: str, **labels: str) -> list[float]:
    return [s.value for s in samples if s.metric == metric
            and all(s.labels.get(k, "") == v for k, v in labels.items())]


def unit_formatter(metric: str) -> FuncFormatter:
    return FuncFormatter(lambda v, _pos: format_value(v, metric) if v > 0 else "0")
