"""The bar figures: throughput (transactions/s, goodput) and CPU cost (per transaction, per
Gbit/s) per layer, each with its 95 % interval and its ratio to the baseline."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from vnetbench.report.figures.common import (
    INK,
    Chart,
    Tips,
    layer_color,
    layers_in,
    measured_at,
    new_figure,
    plain_samples,
    style_axes,
    unit_formatter,
    values_of,
)
from vnetbench.report.tables import (
    format_value,
)
from vnetbench.results.metrics import METRIC_TITLES
from vnetbench.results.model import Sample
from vnetbench.results.stats import bootstrap_ci, median


def _bars(ax: Axes, pool: Sequence[Sample], metric: str, workload: str | None,
          baseline: str, tips: Tips, order: Sequence[str]) -> bool:
    """Horizontal bars, one row per layer of ``order`` (top to bottom): the median with its
    95% interval, the value and the ratio to the baseline written past the bar's end, so no
    label can collide with another however many layers there are."""
    labels = {"workload": workload} if workload is not None else {}
    layers = [la for la in order if values_of(pool, metric, layer=la, **labels)]
    if not layers:
        return False
    style_axes(ax, "x")
    base_vals = values_of(pool, metric, layer=baseline, **labels)
    base = median(base_vals) if base_vals else math.nan
    top = 0.0
    rows = {layer: len(order) - 1 - order.index(layer) for layer in layers}
    for layer in layers:
        y = rows[layer]
        vals = values_of(pool, metric, layer=layer, **labels)
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
    ax.xaxis.set_major_formatter(unit_formatter(metric))
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
    ax.tick_params(axis="x", labelsize=8)
    if not math.isnan(base):
        ax.axvline(base, color=layer_color(baseline), linestyle=(0, (4, 3)), linewidth=1)
    return True


def _bar_chart(samples: Sequence[Sample], metrics: Sequence[str], name: str, title: str,
               caption: str, baseline: str, where: Mapping[str, str] | None,
               ) -> Chart | None:
    pool = measured_at([s for s in plain_samples(samples) if s.metric in metrics], where)
    panels = [(m, wl) for m in metrics
              for wl in sorted({s.labels.get("workload", "") for s in pool if s.metric == m})]
    if not panels:
        return None
    order = layers_in(pool)
    cols = min(3, len(panels))
    nrows = math.ceil(len(panels) / cols)
    fig = new_figure(max(5.2, 4.6 * cols), nrows * max(2.4, 0.3 * len(order) + 1.0))
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
