"""The drops figure: packet drops per layer and device (by its role in the lab) and TCP
retransmits per layer and workload, medians per trial."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from vnetbench.explain.evidence import lab_role
from vnetbench.report.coverage import COUNTER_METRICS, DROP_METRICS, RETRANS_METRICS
from vnetbench.report.figures.common import (
    INK,
    Chart,
    Tips,
    describe_where,
    layer_color,
    measured_at,
    new_figure,
    style_axes,
)
from vnetbench.report.tables import (
    layer_sort_key,
)
from vnetbench.results.model import Sample
from vnetbench.results.stats import median


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


DROPS_ROWS = 14
"""At most this many rows per panel of the drops figure (the caption says how many more)."""


def drops_and_retransmits(samples: Sequence[Sample],
                          where: Mapping[str, str] | None = None) -> Chart | None:
    """Packet drops per layer and device (by its role in the lab) and TCP retransmits per
    layer and workload, medians per trial at ``where``.

    None when no drop or retransmit counter is above zero there (the report then says what
    the run counted elsewhere: ``coverage.counters_sentence``).
    """
    pool = measured_at([s for s in samples if s.metric in COUNTER_METRICS], where)
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
    fig = new_figure(5.4 * len(panels), max(2.4, 0.36 * min(n_rows, DROPS_ROWS) + 1.2))
    tips = Tips()
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    left_out: list[str] = []
    for ax, (kind, data) in zip(axes, panels, strict=True):
        style_axes(ax, "x")
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
    at = describe_where(where)
    return Chart("drops", "Drops and retransmissions",
                 f"Median per trial{' at ' + at if at else ''}, summed over directions (and "
                 "namespaces for retransmissions); namespaces and devices without the lab's "
                 "prefix (sw: the underlay switch, h1: emulated host 1, n0: node 0; t1: host "
                 "1's tun device...). Only counters above zero are "
                 "shown" + (": " + "; ".join(left_out) + " not drawn." if left_out else "."),
                 fig, tips)
