"""Tables of the report: the headline (layer x metric as a ratio to native), the A/A noise
floor, and the detail table.

The headline compares every layer with the baseline layer (``host``, the native network)
under one configuration (the nodes/hosts combination measured for the most layers and
metrics). Each cell holds the ratio with its 95% bootstrap interval, the added microseconds
for a latency, and a direction-aware verdict: ``better``/``worse`` only when the difference
is larger than the factor and than the run's A/A noise floor, and significant (exact
permutation test over repetitions); ``not resolved`` when it is larger than the factor but
not established; ``same`` otherwise. Latency percentiles (``rtt_p99_us``, ...) are taken of
the pooled distribution (the trials' merged histograms) where the run kept histograms; the
test still uses one value per trial.
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from vnetbench.results.contention import outside_shares
from vnetbench.results.histogram import HistogramRecord, LatencyHistogram
from vnetbench.results.metrics import HEADER_TITLES, HEADLINE_METRICS, METRIC_TITLES, SHORT_TITLES
from vnetbench.results.model import Sample
from vnetbench.results.stats import (
    GroupSummary,
    LayerRatio,
    NoiseFloor,
    Ratio,
    better_direction,
    condition_keys,
    median,
    noise_floor,
    percentile_of,
    ratios_to_baseline,
    summarize,
)
from vnetbench.units import counted

DASH = "\u2013"
LAYER_ORDER = ("host", "docker-host", "bridge", "docker-bridge", "docker-userbridge", "macvlan",
               "docker-macvlan", "routed", "nat", "docker-nat", "docker-proxy", "vxlan",
               "docker-overlay", "wireguard", "userspace")
"""Row order: Docker's modes right below the lab layers that model them."""


def layer_sort_key(layer: str) -> tuple[int, str]:
    return (LAYER_ORDER.index(layer) if layer in LAYER_ORDER else len(LAYER_ORDER), layer)


def format_value(value: float, metric: str, unit: str = "") -> str:
    """Human formatting: 41.3 µs, 1.25 ms, 9.40 Gbit/s, 20.0 k/s, 0.11 cores."""
    if math.isnan(value):
        return DASH
    if metric.endswith(("_us", "_us_per_tx")) or unit == "us":
        return f"{value / 1000:.3g} ms" if value >= 1000 else f"{value:.3g} µs"
    if metric.endswith("_bps"):
        for scale, suffix in ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
            if value >= scale:
                return f"{value / scale:.3g} {suffix}"
        return f"{value:.3g} bit/s"
    if unit == "MiB/s":
        return f"{value:.3g} MiB/s"
    if metric.endswith("_per_s"):
        return f"{value / 1000:.3g} k/s" if value >= 1000 else f"{value:.3g} /s"
    if metric in ("tps", "tps_interval"):
        return f"{value / 1000:.3g} k/s" if value >= 1000 else f"{value:.3g} /s"
    if metric == "cpu_cores_per_gbps":
        return counted(f"{value:.3g}", "core")
    if metric.endswith("_s"):
        return f"{value:.3g} s"
    return f"{value:.4g} {unit}".strip()


@dataclass(frozen=True)
class Column:
    workload: str
    metric: str

    @property
    def title(self) -> str:
        return METRIC_TITLES.get(self.metric, self.metric)


@dataclass(frozen=True)
class Cell:
    median: float
    unit: str
    ratio: LayerRatio | None  # None for the baseline row

    def verdict(self, factor: float) -> str:
        return "baseline" if self.ratio is None else self.ratio.verdict(factor)

    @property
    def added(self) -> str:
        """``+6.1 µs`` for a latency or CPU-per-transaction cell (empty otherwise)."""
        if self.ratio is None or not _is_microseconds(self.ratio.metric, self.unit):
            return ""
        return signed_us(self.ratio.added)


def _is_microseconds(metric: str, unit: str) -> bool:
    return metric.endswith(("_us", "_us_per_tx")) or unit == "us"


def signed_us(value: float) -> str:
    """``+6.1 µs``, ``-0.4 µs``, ``+1.2 ms``."""
    if math.isnan(value):
        return ""
    sign = "+" if value >= 0 else "-"
    mag = abs(value)
    if mag >= 1000:
        return f"{sign}{mag / 1000:.3g} ms"
    return f"{sign}{mag:.1f} µs" if mag < 10 else f"{sign}{mag:.0f} µs"


@dataclass(frozen=True)
class HeadlineTable:
    baseline: str
    config: dict[str, str]
    """The condition shown: nodes, hosts and any sweep axes (``{"nodes": "2", ...}``)."""
    factor: float
    columns: list[Column]
    layers: list[str]
    cells: dict[tuple[str, Column], Cell]
    floors: dict[Column, NoiseFloor] = dataclasses.field(default_factory=dict)
    """The A/A control per column (absent when the run measured none)."""
    pooled: bool = False
    """Latency percentiles were taken of merged histograms."""
    emulated: frozenset[str] = frozenset()
    """Layers measured on an emulated CPU (their verdict is ``emulated``)."""

    @property
    def nodes(self) -> str:
        return self.config.get("nodes", "")

    @property
    def hosts(self) -> str:
        return self.config.get("hosts", "")

    def describe_config(self) -> str:
        """``2 nodes, 2 hosts, delay=10ms``."""
        return describe_config(self.config)


def reference_name(baseline: str) -> str:
    """What the report calls the layer others are set beside: ``native`` for ``host`` (the
    hosts' own network), else ``baseline``."""
    return "native" if baseline == "host" else "baseline"


def describe_config(config: Mapping[str, str] | None) -> str:
    """A configuration in words: ``2 nodes, 1 host, client n1, server n0, delay=10ms``
    (empty for none; plain ASCII apart from the values, as terminals print it too)."""
    if not config:
        return ""
    parts = [counted(config["nodes"], "node") if config.get("nodes") else "",
             counted(config["hosts"], "host") if config.get("hosts") else ""]
    if config.get("client") and config.get("server"):
        parts.append(f"client {config['client']}, server {config['server']}")
    parts += [f"{k}={v}" for k, v in config.items() if k not in {"nodes", "hosts"}
              and not (k in {"client", "server"} and config.get("client")
                       and config.get("server"))]
    return ", ".join(p for p in parts if p)


NON_AXIS_LABELS = frozenset({"layer", "workload", "metric", "repetition", "trial", "cpu",
                             "netns", "device", "cgroup", "source", "stage", "protocol",
                             "rank", "stream"})


def config_keys(samples: Iterable[Sample]) -> tuple[str, ...]:
    """Labels that define a measuring configuration: nodes, hosts and the sweep axes."""
    return tuple(k for k in condition_keys(samples) if k not in NON_AXIS_LABELS)


def _coverage(samples: Sequence[Sample], metrics: Sequence[str]
              ) -> tuple[tuple[str, ...], dict[tuple[str, ...], set[tuple[str, str]]]]:
    keys = config_keys(samples)
    cover: dict[tuple[str, ...], set[tuple[str, str]]] = {}
    for s in samples:
        if s.metric in metrics:
            key = tuple(s.labels.get(k, "") for k in keys)
            cover.setdefault(key, set()).add((s.labels.get("layer", ""), s.metric))
    return keys, cover


def all_configs(samples: Sequence[Sample], metrics: Sequence[str] = HEADLINE_METRICS,
                ) -> list[dict[str, str]]:
    """Every configuration, best covered first; ties: fewest nodes, then most hosts (the
    cross-host path is where overlays and tunnels differ from a plain bridge)."""
    keys, cover = _coverage(samples, metrics)

    def order(key: tuple[str, ...]) -> tuple[int, tuple[tuple[int, float, str], ...]]:
        numeric: list[tuple[int, float, str]] = []
        for name, value in zip(keys, key, strict=True):
            try:
                number = float(value)
                numeric.append((0, -number if name == "hosts" else number, ""))
            except ValueError:
                numeric.append((1, 0.0, value))
        return (-len(cover[key]), tuple(numeric))

    return [dict(zip(keys, key, strict=True)) for key in sorted(cover, key=order)]


def headline_configs(samples: Sequence[Sample], limit: int = 4) -> list[dict[str, str]]:
    """The configurations that get a headline table: the best covered one, then others at
    the same node count (hosts, delays, ...); a nodes sweep is told by the scaling curves."""
    configs = all_configs(headline_pool(samples))
    if not configs:
        return []
    first = configs[0]
    same = [c for c in configs[1:] if c.get("nodes") == first.get("nodes")]
    return [first, *same][:limit]


def choose_config(samples: Sequence[Sample], metrics: Sequence[str] = HEADLINE_METRICS,
                  ) -> dict[str, str]:
    """The configuration measured for the most (layer, metric) pairs (see ``all_configs``)."""
    configs = all_configs(samples, metrics)
    return configs[0] if configs else {}


def matches_labels(labels: Mapping[str, str], where: Mapping[str, str]) -> bool:
    """Every label of ``where`` has that value in ``labels`` (absent counts as empty)."""
    return all(labels.get(k, "") == v for k, v in where.items())


def matches(sample: Sample, where: Mapping[str, str]) -> bool:
    return matches_labels(sample.labels, where)


class Labelled(Protocol):
    """A sample or a histogram record: a metric with labels."""

    @property
    def metric(self) -> str: ...

    @property
    def labels(self) -> dict[str, str]: ...


L = TypeVar("L", bound=Labelled)


def select(samples: Iterable[L], where: Mapping[str, str] | None) -> list[L]:
    """The samples (or histogram records) measured under ``where`` (None or empty: all).

    A condition is applied to the samples of one metric and workload only when some of them
    record it: a label none of them carries does not describe them, so it cannot tell them
    apart. (A trial's drop and retransmission counters are labelled with the trial's nodes and
    hosts but not with the client and server of a workload's process: a headline
    configuration naming its client must not filter every counter away.) Among samples that
    do record a label, one without it counts as empty, as in ``matches_labels``.
    """
    pool = list(samples)
    if not where:
        return pool
    carried: dict[tuple[str, str], set[str]] = {}
    for s in pool:
        carried.setdefault((s.metric, s.labels.get("workload", "")), set()).update(s.labels)
    out = []
    for s in pool:
        mine = carried[(s.metric, s.labels.get("workload", ""))]
        if all(s.labels.get(k, "") == v for k, v in where.items() if k in mine):
            out.append(s)
    return out


VARIANT_LABELS: dict[str, str] = {"direction": "forward", "placement": "in-layer",
                                  "protocol": "tcp", "flows": "1", "loop": "closed"}
"""Labels naming a variant of a workload, with the value of its default variant: in the
headline a variant is a workload of its own (``stream (direction=reverse)``, ``iperf3
(protocol=udp)``), never a configuration, and two variants are never pooled."""


def variant_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """``labels`` with the workload's variant folded into its name (default variants keep
    the plain name) and the variant labels dropped."""
    variant = [f"{k}={v}" for k, v in sorted(labels.items())
               if k in VARIANT_LABELS and v and v != VARIANT_LABELS[k]]
    out = {k: v for k, v in labels.items() if k not in VARIANT_LABELS}
    if variant and "workload" in out:
        out["workload"] = f"{out['workload']} ({', '.join(variant)})"
    return out


def headline_pool(samples: Iterable[Sample], metrics: Sequence[str] = HEADLINE_METRICS
                  ) -> list[Sample]:
    """The samples headline tables are made of (no per-core/device/cgroup breakdowns; a
    workload's variant in its name, ``variant_labels``)."""
    return [Sample(s.metric, s.value, s.unit, variant_labels(s.labels), s.t_ns) for s in samples
            if s.metric in metrics
            and not any(k in s.labels for k in ("cpu", "netns", "device", "cgroup"))]


def pooled_percentile(histograms: Sequence[HistogramRecord], where: Mapping[str, str],
                      metric: str) -> float:
    """The percentile named by ``metric`` of the merged histograms matching ``where`` (nan
    when there are none)."""
    parsed = percentile_of(metric)
    if parsed is None:
        return math.nan
    base, q = parsed
    chosen = [h.hist for h in histograms if h.metric == base and matches_labels(h.labels, where)]
    if not chosen:
        return math.nan
    return LatencyHistogram.merge(chosen).percentile(q)


def _with_pooled(ratio: LayerRatio, mine: float, base: float) -> LayerRatio:
    """The cell with the pooled percentiles (merged histograms): shown as the layer's and the
    baseline's values; an unpaired ratio is theirs, a paired one stays the median of its
    rounds' ratios (a pooled percentile jumps between a machine's modes, a round's does not)."""
    if ratio.ratio.design != "unpaired":
        return dataclasses.replace(ratio, median=mine, baseline_median=base)
    value = mine / base if base > 0 else math.nan
    return dataclasses.replace(ratio, median=mine, baseline_median=base,
                               ratio=dataclasses.replace(ratio.ratio, value=value))


def headline_table(samples: Iterable[Sample], *, baseline: str = "host", factor: float = 1.05,
                   metrics: Sequence[str] = HEADLINE_METRICS,
                   config: Mapping[str, str] | None = None,
                   histograms: Sequence[HistogramRecord] = (),
                   emulated: Collection[str] = ()) -> HeadlineTable | None:
    """The headline table at ``config`` (default: the best covered configuration), or None
    when the baseline layer or the metrics are absent. With ``histograms``, latency
    percentiles (value and ratio) are those of the pooled distribution."""
    samples = list(samples)
    pool = headline_pool(samples, metrics)
    config = dict(config) if config is not None else choose_config(pool, metrics)
    chosen = [s for s in pool if matches(s, config)]
    if not any(s.labels.get("layer") == baseline for s in chosen):
        return None
    present = {Column(s.labels.get("workload", ""), s.metric) for s in chosen}
    workload_order: list[str] = []
    for metric in metrics:  # workloads in the order their first headline metric appears
        for wl in sorted({c.workload for c in present if c.metric == metric}):
            if wl not in workload_order:
                workload_order.append(wl)
    columns = [Column(wl, m) for wl in workload_order for m in metrics
               if Column(wl, m) in present]
    hists = [h for h in (HistogramRecord(h.metric, h.unit, variant_labels(h.labels), h.hist)
                         for h in histograms) if matches_labels(h.labels, config)]
    ratios = ratios_to_baseline(chosen, baseline=baseline, group_by=("workload", "metric"),
                                emulated=emulated, shares=outside_shares(samples))
    by_key = {(r.layer, r.labels["workload"], r.metric): r for r in ratios}
    layers = sorted({s.labels.get("layer", "") for s in chosen}, key=layer_sort_key)
    cells: dict[tuple[str, Column], Cell] = {}
    floors: dict[Column, NoiseFloor] = {}
    pooled_any = False
    for col in columns:
        # the A/A floor ratios_to_baseline found for this column; alone, the baseline's own
        floor = next((r.noise for r in ratios if r.noise is not None and r.metric == col.metric
                      and r.labels["workload"] == col.workload), None) or noise_floor(
            s for s in chosen if s.labels.get("layer") == baseline
            and s.metric == col.metric and s.labels.get("workload", "") == col.workload)
        if floor is not None:
            floors[col] = floor
        base_pooled = pooled_percentile(hists, {"layer": baseline, "workload": col.workload},
                                        col.metric)
        for layer in layers:
            values = [s for s in chosen if s.labels.get("layer") == layer
                      and s.metric == col.metric and s.labels.get("workload", "") == col.workload]
            if not values:
                continue
            ratio = None if layer == baseline else by_key.get((layer, col.workload, col.metric))
            if layer != baseline and ratio is None:
                continue
            value = median(v.value for v in values)
            pooled = pooled_percentile(hists, {"layer": layer, "workload": col.workload},
                                       col.metric)
            if not math.isnan(pooled):
                pooled_any = True
                value = pooled
                if ratio is not None and not math.isnan(base_pooled):
                    ratio = _with_pooled(ratio, pooled, base_pooled)
            cells[(layer, col)] = Cell(value, values[0].unit, ratio)
    return HeadlineTable(baseline, config, factor, columns, layers, cells, floors, pooled_any,
                         frozenset(emulated) & set(layers))



def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _shade(verdict: str, ratio: float) -> str:
    """Inline background whose strength grows with the size of the difference (x3 = full)."""
    if verdict not in {"better", "worse"} or not ratio > 0:
        return ""
    strength = min(1.0, abs(math.log(ratio)) / math.log(3.0))
    alpha = 0.10 + 0.55 * strength
    rgb = "22,163,74" if verdict == "better" else "220,38,38"
    return f' style="background:rgba({rgb},{alpha:.2f})"'


def interval_text(ratio: Ratio) -> str:
    """``[0.91, 1.12]``: a ratio's confidence interval as shown in the tables."""
    if math.isnan(ratio.ci.low):
        return "no interval"
    return f"[{ratio.ci.low:.2f}, {ratio.ci.high:.2f}]"


def render_headline(table: HeadlineTable, *, table_id: str = "headline-table",
                    notes: Mapping[str, str] | None = None,
                    why: Mapping[str, str] | None = None) -> str:
    """HTML of the headline table (classes better/worse/same/baseline colour the cells).
    A layer in ``notes`` is marked (``†``, the note in its title): a path note says what of
    the layer this configuration does not cross (``answer.path_notes``). With ``why`` (a
    ``<td>`` per layer, ``report.why``), a last column says why each layer costs what it
    costs."""
    workloads = [c.workload for c in table.columns]
    head1 = ['<th rowspan="2" class="corner">layer</th>']
    i = 0
    while i < len(workloads):
        j = i
        while j < len(workloads) and workloads[j] == workloads[i]:
            j += 1
        head1.append(f'<th colspan="{j - i}" class="wl">{_esc(workloads[i] or "—")}</th>')
        i = j
    if why is not None:
        head1.append('<th rowspan="2" class="why" title="What explains most of each '
                     "layer's added time (request/response) or CPU (streams), per workload, "
                     'and the hypotheses the run supports: see the section Why">why</th>')
    head2 = []
    for col in table.columns:
        arrow = {"lower": "↓", "higher": "↑"}.get(better_direction(col.metric) or "", "")
        short = HEADER_TITLES.get(col.metric, col.title)
        head2.append(f'<th title="{_esc(col.title)} ({_esc(col.metric)})">{_esc(short)} '
                     f'<span class="dir" title="{arrow} is better">{arrow}</span></th>')
    rows = []
    for layer in table.layers:
        note = (notes or {}).get(layer, "")
        mark = (f'<sup class="path" title="{_esc(note)}">\u2020</sup>' if note else "")
        tds = [f'<th class="layer"><span class="swatch" data-layer="{_esc(layer)}"></span>'
               f'{_esc(layer)}{mark}</th>']
        for col in table.columns:
            cell = table.cells.get((layer, col))
            if cell is None:
                tds.append('<td class="na">&ndash;</td>')
                continue
            verdict = cell.verdict(table.factor)
            absolute = format_value(cell.median, col.metric, cell.unit)
            if cell.ratio is None:
                tds.append(f'<td class="baseline"><div class="ratio">{_esc(absolute)}</div>'
                           f'<div class="ci">{_esc(reference_name(table.baseline))}</div></td>')
                continue
            r = cell.ratio.ratio
            ci = interval_text(r)
            floor = cell.ratio.floor
            title = (f"{absolute} vs {format_value(cell.ratio.baseline_median, col.metric)}"
                     f" native; 95% bootstrap interval of the ratio {ci}; permutation test "
                     f"p={r.p_value:.3f}; n={r.n}/{r.n_baseline}"
                     + ("" if math.isnan(floor) else f"; noise floor {floor:.1%}")
                     + ("" if r.resolvable else "; too few repetitions to ever be significant"))
            added = (f'<div class="added">{_esc(cell.added.replace(" ", ""))}</div>'
                     if cell.added else "")
            css = {"not resolved": "unresolved", "emulated": "unresolved"}.get(verdict, verdict)
            if verdict == "emulated":
                title += "; emulated CPU (TCG guest): not comparable with KVM or native"
            if cell.ratio.contended:
                title += (f"; not judged: other work used {cell.ratio.contention:.0%} of the "
                          "machine's CPU while the baseline was measured (see warnings)")
            # the absolute value is in the title (hover): the native row above shows native's
            tds.append(f'<td class="{css}" title="{_esc(title)}"{_shade(verdict, r.value)}>'
                       f'<div class="ratio">&times;{r.value:.2f}</div>{added}'
                       f'<div class="ci">{_esc(ci)}</div></td>')
        if why is not None:
            tds.append(why.get(layer, '<td class="why"></td>'))
        rows.append("<tr>" + "".join(tds) + "</tr>")
    ident = f' id="{_esc(table_id)}"' if table_id else ""
    return (f'<table class="headline"{ident}><thead><tr>' + "".join(head1)
            + "</tr><tr>" + "".join(head2) + "</tr></thead><tbody>" + "".join(rows)
            + "</tbody></table>")


def detail_rows(samples: Iterable[Sample]) -> list[GroupSummary]:
    """Summary of every condition group (all labels but repetition/trial), places and
    per-interval series (drawn over time instead) excluded."""
    pool = [s for s in samples
            if not any(k in s.labels for k in ("cpu", "device", "netns", "cgroup", "interval"))]
    return summarize(pool, condition_keys(pool))


def render_detail(rows: Sequence[GroupSummary]) -> str:
    """HTML table of every group: n, median, 95% CI, CV, outliers."""
    body = []
    for g in rows:
        m = g.labels.get("metric", "")
        cv = DASH if math.isnan(g.cv) else f"{g.cv:.1%}"
        noisy = ' class="noisy"' if not math.isnan(g.cv) and g.cv > 0.05 else ""
        other = " ".join(f"{k}={v}" for k, v in g.labels.items() if v and k not in
                         {"workload", "layer", "nodes", "hosts", "metric"})
        body.append(
            "<tr>" + "".join(f"<td>{_esc(g.labels.get(k, ''))}</td>"
                             for k in ("workload", "layer", "nodes", "hosts"))
            + f"<td>{_esc(other)}</td><td><code>{_esc(m)}</code></td><td>{g.n}</td>"
            f"<td class='num'>{_esc(format_value(g.median, m, g.unit))}</td>"
            f"<td class='num'>{_esc(format_value(g.ci.low, m, g.unit))} &ndash; "
            f"{_esc(format_value(g.ci.high, m, g.unit))}</td>"
            f"<td class='num'{noisy}>{cv}</td><td class='num'>{len(g.outliers) or ''}</td></tr>")
    return ('<table class="detail"><thead><tr><th>workload</th><th>layer</th><th>nodes</th>'
            "<th>hosts</th><th>conditions</th><th>metric</th><th>n</th><th>median</th><th>95% CI</th><th>CV</th>"
            "<th>outliers</th></tr></thead><tbody>" + "".join(body) + "</tbody></table>")


VERDICT_MARKS = {"better": "*", "worse": "*", "not resolved": "?", "emulated": "~"}
EMULATED_NOTE = ("~ = ran on an emulated CPU (TCG guest): not comparable with KVM or native, "
                 "never starred")


def emulated_layers(environment: Mapping[str, Any]) -> set[str]:
    """Layers a run measured on an emulated CPU (from run.json ``environment.layers``)."""
    layers = environment.get("layers") or {}
    return {name for name, facts in layers.items()
            if isinstance(facts, Mapping) and isinstance(facts.get("vm"), Mapping)
            and facts["vm"].get("emulated_cpu")}


def cell_text(cell: Cell, factor: float) -> str:
    """``x1.37* +6.1µs``: the ratio, its mark, and the added time for a latency."""
    assert cell.ratio is not None
    mark = VERDICT_MARKS.get(cell.ratio.verdict(factor), "")
    added = f" {cell.added.replace(' ', '')}" if cell.added else ""
    return f"x{cell.ratio.ratio.value:.2f}{mark}{added}"


def noise_floor_lines(table: HeadlineTable) -> list[str]:
    """The A/A control in one line per run configuration: each column's floor."""
    if not table.floors:
        return []
    parts = []
    for col in table.columns:
        nf = table.floors.get(col)
        if nf is None:
            continue
        floor = "-" if math.isnan(nf.floor) else f"{nf.floor:.1%}"
        drift = " DRIFT" if nf.failed else ""
        parts.append(f"{col.workload} {SHORT_TITLES.get(col.metric, col.metric)} "
                     f"{floor}{drift}")
    return [f"  noise floor ({table.baseline} A/A, smallest change resolved): " + ", ".join(parts)]


def render_noise_floor(table: HeadlineTable, *, table_id: str = "noise-floor") -> str:
    """HTML of the A/A control: the baseline as two interleaved groups, per column."""
    rows = []
    for col in table.columns:
        nf = table.floors.get(col)
        if nf is None:
            continue
        r = nf.ratio
        floor = DASH if math.isnan(nf.floor) else f"{nf.floor:.1%}"
        state = ("differs from itself: the machine drifted during the run" if nf.failed
                 else "agrees with itself")
        rows.append(f"<tr><td>{_esc(col.workload)}</td><td>{_esc(col.title)}</td>"
                    f"<td class='num'>&times;{r.value:.3f}</td>"
                    f"<td class='num'>{_esc(interval_text(r))}</td>"
                    f"<td class='num'>{r.p_value:.2f}</td><td class='num'>n={r.n_baseline}/{r.n}"
                    f"</td><td class='num'><b>{floor}</b></td><td>{state}</td></tr>")
    if not rows:
        return ""
    ident = f' id="{_esc(table_id)}"' if table_id else ""
    return (f'<table class="detail"{ident}><thead><tr><th>workload</th><th>metric</th>'
            "<th>B / A</th><th>95% interval</th><th>p</th><th>trials</th><th>noise floor</th>"
            "<th></th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


DESIGN_TEXT = {
    "interleaved": "interleaved: every layer's path and two baseline paths alive at once, "
                   "measured in alternation in short visits, a fresh random order each cycle; "
                   "each ratio is judged round by round (randomisation test within rounds, "
                   "block-bootstrap interval), the noise floor from the baseline's two paths",
    "rounds": "rounds: each layer's lab alive beside two baseline labs (a Docker layer's in a "
              "session of its own, the namespace layers' together), each run whole once a "
              "round in a fresh random order; each ratio is judged round by round "
              "(randomisation test within rounds, block-bootstrap interval), the noise floor "
              "from the baseline's two labs",
    "blocks": "paired blocks: each layer's trial right next to a baseline trial (ABBA order); "
              "each ratio is judged block by block, the noise floor from baseline-baseline "
              "blocks",
    "unpaired": "unpaired: each layer's trials against the baseline's as two groups "
                "(permutation test), the noise floor from the baseline's two groups of trials",
}
"""What each measuring design means, as the report says it."""


def designs(table: HeadlineTable) -> dict[str, list[str]]:
    """The measuring design of each workload of the table (design -> workloads)."""
    found: dict[str, list[str]] = {}
    for col in table.columns:
        ratio = next((c.ratio for (_, c2), c in table.cells.items()
                      if c2 == col and c.ratio is not None), None)
        design = ratio.ratio.design if ratio is not None else "unpaired"
        if col.workload not in found.setdefault(design, []):
            found[design].append(col.workload)
    return found


def design_lines(table: HeadlineTable) -> list[str]:
    """One line per measuring design the table's cells used, naming their workloads."""
    return [f"{', '.join(wls)}: {DESIGN_TEXT[design]}" for design, wls in designs(table).items()]


def column_header(first: str, columns: Sequence[Column]) -> list[str]:
    """Header row of a terminal grid: ``first``, then ``<workload> <short metric>``."""
    return [first, *(f"{c.workload} {SHORT_TITLES.get(c.metric, c.metric)}".strip()
                     for c in columns)]


def grid_lines(grid: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as left-aligned, indented text columns."""
    widths = [max(len(r[i]) for r in grid) for i in range(len(grid[0]))]
    return ["  " + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
            for r in grid]
