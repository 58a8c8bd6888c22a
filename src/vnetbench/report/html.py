"""The HTML report of a run: one self-contained page (inline CSS, SVG figures, a little JS).

``build_report(run_dir)`` reads the run, derives CPU costs, computes the headline table and
the figures, and writes ``run_dir/report.html`` plus copies of the figures under
``run_dir/figures/`` (standalone SVG files). Sections without data are left out. Figures are
inline SVG: hovering a point, bar or curve shows its exact figures (an SVG ``<title>``,
which works without script too), and a row of layer buttons above each figure shows or
hides a layer (``SCRIPT``, plain JavaScript in the page). Nothing is fetched: the page opens
offline.
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vnetbench.report import plots
from vnetbench.report.derive import derive_cpu_costs
from vnetbench.report.hadoop import render_hadoop
from vnetbench.report.knee import node_cores
from vnetbench.report.svg import FIGURE_CSS, standalone
from vnetbench.report.tables import (
    METRIC_TITLES,
    HeadlineTable,
    detail_rows,
    emulated_layers,
    format_value,
    headline_configs,
    headline_table,
    layer_sort_key,
    render_detail,
    render_headline,
    render_noise_floor,
)
from vnetbench.report.twins import compare_twins, render_twins
from vnetbench.results.model import Sample
from vnetbench.results.store import RunData, RunStatus, load_run
from vnetbench.results.warnings import EvidenceWarning, WarningKind, quality_warnings
from vnetbench.userpaths import output_file, replace_file

CSS = """
:root { --ink:#1f2937; --muted:#6b7280; --line:#e5e7eb; --bg:#f8fafc; --card:#ffffff;
  --good:#15803d; --good-bg:#dcfce7; --bad:#b91c1c; --bad-bg:#fee2e2; --same-bg:#f3f4f6;
  --accent:#2563eb; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font: 15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header { background:linear-gradient(120deg,#0f172a,#1e3a8a); color:#fff; padding:28px 40px 24px; }
header h1 { margin:0 0 6px; font-size:26px; font-weight:650; letter-spacing:-0.01em; }
header .sub { color:#cbd5e1; font-size:13px; }
header .sub span { margin-right:18px; white-space:nowrap; }
.badge { display:inline-block; padding:2px 10px; border-radius:999px; font-size:12px;
  font-weight:600; text-transform:uppercase; letter-spacing:.04em; vertical-align:middle;
  margin-left:10px; }
.badge.complete { background:#16a34a; color:#fff; } .badge.incomplete { background:#f59e0b;
  color:#111; }
.badge.failed { background:#dc2626; color:#fff; } .badge.running { background:#64748b;
  color:#fff; }
main { max-width:1320px; margin:0 auto; padding:24px 40px 60px; }
section { background:var(--card); border:1px solid var(--line); border-radius:12px;
  padding:20px 24px; margin:0 0 22px; box-shadow:0 1px 2px rgba(15,23,42,.04); }
h2 { font-size:18px; margin:0 0 4px; } .lead { color:var(--muted); margin:0 0 14px;
  font-size:13.5px; }
ul.findings { margin:6px 0 0; padding-left:0; list-style:none; }
ul.findings li { padding:6px 0 6px 28px; position:relative;
  border-bottom:1px dashed var(--line); }
ul.findings li:last-child { border-bottom:0; }
ul.findings li::before { position:absolute; left:4px; top:5px; font-weight:700; }
ul.findings li.worse::before { content:"▼"; color:var(--bad); }
ul.findings li.better::before { content:"▲"; color:var(--good); }
ul.findings li.same::before { content:"="; color:var(--muted); }
table { border-collapse:separate; border-spacing:0; font-variant-numeric:tabular-nums; }
table.headline { width:100%; }
table.headline th, table.headline td { padding:8px 12px; text-align:center;
  border-bottom:1px solid var(--line); }
table.headline thead th { font-size:12px; color:var(--muted); font-weight:600;
  background:#f9fafb; }
table.headline thead th.wl { text-transform:uppercase; letter-spacing:.06em; color:var(--ink);
  border-bottom:2px solid var(--ink); }
table.headline th.layer { text-align:left; font-size:14px; white-space:nowrap; }
table.headline .ratio { font-size:17px; font-weight:650; }
table.headline .ci { font-size:11px; color:var(--muted); }
table.headline .abs { font-size:11px; color:var(--ink); opacity:.75; }
td.better { background:var(--good-bg); }
td.better .ci, td.worse .ci { color:#374151; } td.better .ratio { color:#14532d; }
td.worse { background:var(--bad-bg); } td.worse .ratio { color:#7f1d1d; }
td.same { background:var(--same-bg); } td.baseline { background:#fff; }
td.unresolved { background:repeating-linear-gradient(135deg,#f3f4f6,#f3f4f6 6px,#e5e7eb 6px,#e5e7eb 12px); }
td.unresolved .ratio { color:var(--muted); } td .added { font-size:11px; color:#374151; }
td.baseline .ratio { font-size:15px; }
.dir { color:var(--accent); }
.swatch { display:inline-block; width:10px; height:10px; border-radius:3px; margin-right:8px; }
.legend { font-size:12px; color:var(--muted); margin-top:10px; }
.legend span.k { display:inline-block; width:12px; height:12px; border-radius:3px;
  vertical-align:-2px; margin:0 4px 0 12px; }
figure { margin:8px 0 0; }
figure svg.plot { max-width:100%; height:auto; display:block; margin:0 auto; }
figcaption { color:var(--muted); font-size:13px; margin-top:6px; }
.toggles { display:flex; flex-wrap:wrap; gap:6px; margin:4px 0 6px; font-size:12px; }
.toggles button { border:1px solid var(--line); background:#fff; border-radius:999px;
  padding:2px 10px 2px 8px; cursor:pointer; color:var(--ink); font:inherit; }
.toggles button .swatch { margin-right:6px; vertical-align:-1px; }
.toggles button[aria-pressed="false"] { opacity:.45; text-decoration:line-through; }
svg.plot g.tip { cursor:pointer; } svg.plot g.tip.off { display:none; }
svg.plot.dim g.tip:not(.hl) { opacity:.15; }
svg.plot g.tip:hover path { stroke-width:3px; }
#vnb-tip { position:fixed; z-index:10; pointer-events:none; display:none; max-width:420px;
  background:#0f172a; color:#f8fafc; font-size:12px; line-height:1.4; padding:6px 9px;
  border-radius:6px; white-space:pre-line; box-shadow:0 4px 12px rgba(15,23,42,.25); }
.warn { border-left:4px solid #f59e0b; background:#fffbeb; padding:8px 12px; margin:8px 0;
  border-radius:0 8px 8px 0; }
.warn .kind { font-size:11px; font-weight:700; text-transform:uppercase; color:#b45309;
  letter-spacing:.05em; }
.warn .advice { color:var(--muted); font-size:13px; }
.ok { color:var(--good); }
table.kv td { padding:4px 14px 4px 0; border-bottom:1px solid var(--line); vertical-align:top; }
table.kv td:first-child { color:var(--muted); white-space:nowrap; }
table.detail { width:100%; font-size:12.5px; }
table.detail th, table.detail td { padding:4px 8px; border-bottom:1px solid var(--line);
  text-align:left; }
table.detail td.num { text-align:right; } table.detail td.noisy { color:var(--bad);
  font-weight:600; }
details summary { cursor:pointer; color:var(--accent); font-weight:600; }
.grid2 { display:grid; grid-template-columns: 1fr 1fr; gap:0 28px; }
footer { color:var(--muted); font-size:12px; text-align:center; padding:10px; }
code { font-size:12px; background:#f1f5f9; padding:1px 4px; border-radius:4px; }
"""


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


SCRIPT = """
(function () {
  var tip = document.createElement("div");
  tip.id = "vnb-tip";
  document.body.appendChild(tip);
  document.querySelectorAll("svg.plot g.tip").forEach(function (g) {
    var title = g.querySelector(":scope > title");
    if (title) { g.setAttribute("data-tip", title.textContent); title.remove(); }
  });
  document.addEventListener("mousemove", function (ev) {
    var g = ev.target.closest ? ev.target.closest("g.tip") : null;
    if (!g) { tip.style.display = "none"; return; }
    tip.textContent = g.getAttribute("data-tip");
    tip.style.display = "block";
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth) { x = ev.clientX - tip.offsetWidth - 14; }
    if (y + tip.offsetHeight > window.innerHeight) { y = ev.clientY - tip.offsetHeight - 14; }
    tip.style.left = x + "px"; tip.style.top = y + "px";
  });
  document.querySelectorAll("figure.chart").forEach(function (fig) {
    var svg = fig.querySelector("svg.plot");
    fig.querySelectorAll(".toggles button").forEach(function (button) {
      var layer = button.getAttribute("data-layer");
      var groups = svg.querySelectorAll('g.tip[data-layer="' + CSS.escape(layer) + '"]');
      button.addEventListener("click", function () {
        var shown = button.getAttribute("aria-pressed") !== "false";
        button.setAttribute("aria-pressed", shown ? "false" : "true");
        groups.forEach(function (g) { g.classList.toggle("off", shown); });
      });
      button.addEventListener("mouseenter", function () {
        svg.classList.add("dim");
        groups.forEach(function (g) { g.classList.add("hl"); });
      });
      button.addEventListener("mouseleave", function () {
        svg.classList.remove("dim");
        groups.forEach(function (g) { g.classList.remove("hl"); });
      });
    });
  });
  document.documentElement.setAttribute("data-figures", "interactive");
})();
"""
"""Hover tips in a box that follows the pointer (the SVG ``<title>`` moved into ``data-tip``
so the browser's own slower tooltip does not show twice); layer buttons that show or hide
a layer's points, bars and curves and highlight them while hovered."""


def _figure_html(chart: plots.Chart, svg: str) -> str:
    layers = sorted({t.layer for t in chart.tips.by_gid.values() if t.layer},
                    key=layer_sort_key)
    buttons = "".join(
        f'<button type="button" aria-pressed="true" data-layer="{_esc(layer)}" '
        f'title="show or hide {_esc(layer)}"><span class="swatch" style="background:'
        f'{plots.layer_color(layer)}"></span>{_esc(layer)}</button>' for layer in layers)
    toggles = f'<div class="toggles">{buttons}</div>' if len(layers) > 1 else ""
    return (f'<section id="{_esc(chart.name)}"><h2>{_esc(chart.title)}</h2>'
            f'<figure class="chart" data-chart="{_esc(chart.name)}">{toggles}{svg}'
            f"<figcaption>{_esc(chart.caption)}</figcaption></figure></section>")


def _flatten(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out += _flatten(value, name + ".")
        elif isinstance(value, list | tuple) and value and isinstance(value[0], Mapping):
            out.append((name, json.dumps(value, default=str)))
        elif isinstance(value, list | tuple):
            out.append((name, ", ".join(str(v) for v in value)))
        else:
            out.append((name, str(value)))
    return out


def _kv_table(data: Mapping[str, Any]) -> str:
    rows = "".join(f"<tr><td>{_esc(k)}</td><td>{_esc(v)}</td></tr>" for k, v in _flatten(data))
    return f'<table class="kv">{rows}</table>'


def _findings(table: HeadlineTable) -> list[tuple[str, str]]:
    """(verdict, sentence) for the called differences, biggest first (at most 8)."""
    items: list[tuple[float, str, str]] = []
    for (layer, col), cell in table.cells.items():
        if cell.ratio is None:
            continue
        verdict = cell.verdict(table.factor)
        if verdict not in {"better", "worse"}:
            continue
        r = cell.ratio.ratio
        title = METRIC_TITLES.get(col.metric, col.metric)
        pct = (r.value - 1.0) * 100.0
        change = f"{abs(pct):.0f}% {'higher' if pct > 0 else 'lower'}"
        added = f", {cell.added}" if cell.added else ""
        text = (f"<b>{_esc(layer)}</b>: {_esc(title)} ({_esc(col.workload)}) is {change} than "
                f"native — {_esc(format_value(cell.median, col.metric, cell.unit))} vs "
                f"{_esc(format_value(cell.ratio.baseline_median, col.metric))}{_esc(added)} "
                f"(&times;{r.value:.2f}, 95% CI {r.ci.low:.2f}&ndash;{r.ci.high:.2f}, "
                f"p={r.p_value:.3f})")
        items.append((abs(math.log(r.value)) if r.value > 0 else 0.0, verdict, text))
    items.sort(key=lambda t: -t[0])
    return [(v, t) for _, v, t in items[:8]]


def _warnings_html(warnings: Sequence[EvidenceWarning]) -> str:
    if not warnings:
        return '<p class="ok">No warnings: the measurements met every quality check.</p>'
    parts = []
    for kind in WarningKind:
        mine = [w for w in warnings if w.kind is kind]
        shown = [_warning_html(w) for w in mine[:SHOWN_PER_KIND]]
        rest = [_warning_html(w) for w in mine[SHOWN_PER_KIND:]]
        parts += shown
        if rest:
            parts.append(f"<details><summary>{len(rest)} more {_esc(kind.value)} warnings"
                         f"</summary>{''.join(rest)}</details>")
    return "".join(parts)


SHOWN_PER_KIND = 5


def _warning_html(w: EvidenceWarning) -> str:
    advice = f'<div class="advice">→ {_esc(w.advice)}</div>' if w.advice else ""
    return (f'<div class="warn"><span class="kind">{_esc(w.kind.value)}</span> '
            f"{_esc(w.message)}{advice}</div>")


def _dedupe(warnings: Iterable[EvidenceWarning]) -> list[EvidenceWarning]:
    seen: set[tuple[str, str]] = set()
    out = []
    for w in warnings:
        if (w.kind.value, w.message) not in seen:
            seen.add((w.kind.value, w.message))
            out.append(w)
    return out


def stream_semantics(scenario: Mapping[str, Any]) -> str:
    """Whether the run's TCP streams had Nagle on (iperf3's and netperf's default) or
    TCP_NODELAY, as a sentence for the headline (empty without TCP streams)."""
    modes = set()
    for entry in scenario.get("workloads") or []:
        if not isinstance(entry, Mapping):
            continue
        for kind, opts in entry.items():
            opts = opts if isinstance(opts, Mapping) else {}
            if kind == "stream" and opts.get("protocol", "tcp") == "tcp":
                modes.add(bool(opts.get("nodelay", False)))
    if not modes:
        return ""
    if modes == {False}:
        return "TCP streams ran with Nagle on (TCP_NODELAY off), as iperf3 and netperf do. "
    if modes == {True}:
        return "TCP streams ran with TCP_NODELAY (nodelay: true): Nagle off. "
    return "TCP streams ran both with Nagle on and with TCP_NODELAY (see the scenario). "


PLACEMENTS = {"cross": "client and server on different CPUs",
              "same": "client and server on one CPU",
              "off": "CPUs left to the scheduler"}


def controls_sentence(controls: object) -> str:
    """The platform controls of the run as a sentence (empty for runs that predate them)."""
    if not isinstance(controls, Mapping):
        return ""
    parts = []
    placement = controls.get("placement")
    if isinstance(placement, Mapping):
        mode = str(placement.get("mode", ""))
        parts.append(f"placement {mode} ({PLACEMENTS.get(mode, mode)})")
    idle = controls.get("idle_states")
    if isinstance(idle, Mapping):
        parts.append("CPU idle states held off while measuring" if idle.get("effective")
                     else "CPU idle states not held")
    quiet = controls.get("quiet")
    if isinstance(quiet, Mapping) and quiet.get("requested"):
        parts.append("every trial started on a quiet machine" if quiet.get("effective")
                     else "some trials started on a busy machine (see warnings)")
    return ("Platform: " + "; ".join(parts) + ". ") if parts else ""


def render_report(run: RunData, *, baseline: str = "host", factor: float = 1.05,
                  figures_dir: Path | None = None, preface: str = "") -> str:
    """The report's HTML for ``run``; the figures are also written to ``figures_dir`` (SVG).
    ``preface`` (HTML) is the first section (a study's verdicts)."""
    samples: list[Sample] = list(run.samples)
    samples += derive_cpu_costs(samples, scenario=run.meta.scenario)
    emulated = emulated_layers(run.meta.environment)
    table = headline_table(samples, baseline=baseline, factor=factor, histograms=run.histograms,
                           emulated=emulated)
    where = table.config if table else None
    scenario = run.meta.scenario
    # a sweep is the run's main story: its curves (nodes first) come first
    axes = plots.sweep_axes(_trial_samples(samples))
    charts = [c for c in (
        *(plots.sweep_curves(samples, axis, where,
                             cores=node_cores(where or {}, scenario, run.meta.environment))
          for axis in axes),
        plots.latency_whiskers(samples, where),
        plots.latency_cdf(run.histograms, where),
        plots.throughput(samples, baseline, where),
        plots.time_series(samples, scenario, where),
        plots.cpu_cost(samples, baseline, where),
        plots.drops_and_retransmits(samples, where),
    ) if c is not None]
    name = str(scenario.get("name", "")) or run.run_id
    status = run.status.value
    started = run.meta.started.replace("T", " ").split("+")[0]
    finished = (run.meta.finished or "").replace("T", " ").split("+")[0] or "—"
    body: list[str] = []
    body.append(
        f'<header><h1>vnetbench · {_esc(name)}<span class="badge {_esc(status)}">'
        f"{_esc(status)}</span></h1><div class=\"sub\"><span>run <b>{_esc(run.run_id)}</b>"
        f"</span><span>{_esc(started)} → {_esc(finished)} UTC</span>"
        f"<span>{len(run.samples):,} samples</span>"
        f"<span>scenario sha256 {_esc(run.meta.scenario_sha256[:12])}</span>"
        + (f"<span>failed in stage <b>{_esc(run.meta.failing_stage)}</b></span>"
           if run.meta.failing_stage else "")
        + "</div></header><main>")
    if run.status is not RunStatus.COMPLETE:
        why = ("the sample file ends with a truncated line (the run was killed)"
               if run.truncated else f"the run's status is {status}")
        body.append(f'<section><div class="warn"><span class="kind">{_esc(status)} run</span> '
                    f"This report covers only the trials that finished: {_esc(why)}.</div>"
                    "</section>")
    if preface:
        body.append(preface)
    if table is not None and table.columns:
        findings = _findings(table)
        at = table.describe_config()
        fl = "".join(f'<li class="{v}">{t}</li>' for v, t in findings) or (
            '<li class="same">No layer differs from native by more than '
            f"{(factor - 1) * 100:.0f}% and the noise floor with significance.</li>")
        pct = ("Latency percentiles are those of the pooled distribution (every trial's "
               "histogram merged). " if table.pooled else "") + stream_semantics(scenario) \
            + controls_sentence(run.meta.environment.get("controls"))
        body.append(
            f'<section id="headline"><h2>Cost of each layer relative to native '
            f"(<code>{_esc(baseline)}</code>)</h2><p class=\"lead\">Ratio layer / native"
            f"{' at ' + _esc(at) if at else ''} (medians over repetitions), its 95% bootstrap "
            "interval, and for latencies the added time. A cell is coloured only when the "
            f"difference is larger than {(factor - 1) * 100:.0f}% <i>and</i> than the run's "
            "noise floor (below), <i>and</i> significant by an exact permutation test over "
            "the repetitions (at most 5% false calls at any repetition count); a hatched "
            "cell is a difference the run could not resolve. " + pct
            + (f"Layers {_esc(', '.join(sorted(emulated)))} ran on an emulated CPU (TCG "
               "guests): not comparable with KVM or native, never coloured. " if emulated
               else "")
            + "Arrows show which way is better.</p>" + render_headline(table)
            + '<div class="legend"><span class="k" style="background:#dcfce7"></span>better'
            '<span class="k" style="background:#fee2e2"></span>worse'
            '<span class="k" style="background:#e5e7eb"></span>not resolved'
            '<span class="k" style="background:#f3f4f6"></span>no difference beyond '
            f"{(factor - 1) * 100:.0f}%</div>"
            f'<h2 style="margin-top:18px">Key findings</h2><ul class="findings">{fl}</ul>'
            "</section>")
        floor_html = render_noise_floor(table)
        if floor_html:
            body.append('<section id="noise"><h2>Noise floor (A/A control)</h2><p class="lead">'
                        f"The baseline <code>{_esc(baseline)}</code> ran as two interleaved, "
                        "independent groups of trials (A and B). Their ratio shows what this "
                        "run measures when nothing changes. The noise floor, the smallest "
                        "change this run resolves, is the larger of that ratio's distance "
                        "from 1 and 2.5 robust standard deviations of a difference of "
                        "medians (from the spread of the baseline's trials). A layer's "
                        "difference within it is not resolved.</p>" + floor_html
                        + "</section>")
        twins = compare_twins(samples, table)
        if twins is not None:
            body.append('<section id="twins"><h2>Docker and VMs beside their namespace '
                        'twins</h2><p class="lead">Each Docker network mode or VM layer and '
                        "the namespace layer that models it, as ratios to native, then its "
                        "median over its twin's with a 95% bootstrap interval (coloured when "
                        "the difference"
                        f" is larger than {(factor - 1) * 100:.0f}% and significant).</p>"
                        + render_twins(twins) + "</section>")
        for config in headline_configs(samples)[1:]:
            other = headline_table(samples, baseline=baseline, factor=factor, config=config,
                                   emulated=emulated,
                                   histograms=run.histograms)
            if other is not None and other.columns:
                body.append(f'<section class="headline-more"><h2>Also measured at '
                            f"{_esc(other.describe_config())}</h2>"
                            + render_headline(other) + render_noise_floor(other) + "</section>")
    hadoop = render_hadoop(samples, baseline=baseline, factor=factor, emulated=emulated)
    if hadoop:
        body.append(hadoop)
    for chart in charts:
        svg = chart.svg()
        if figures_dir is not None:
            figures_dir.mkdir(parents=True, exist_ok=True)
            (figures_dir / f"{chart.name}.svg").write_text(standalone(svg), encoding="utf-8")
        body.append(_figure_html(chart, svg))
    if plots.drops_and_retransmits(samples, where) is None and any(
            s.metric in {"rx_drops", "tx_drops", "tcp_retrans_segs"} for s in samples):
        body.append('<section id="drops"><h2>Drops and retransmissions</h2>'
                    '<p class="ok">No packet drops and no TCP retransmissions were counted.'
                    "</p></section>")
    # a run that ended wrote its quality warnings; one that was cut short did not
    computed = (quality_warnings(samples) if run.status in (RunStatus.RUNNING,
                                                              RunStatus.INCOMPLETE) else [])
    warnings = _dedupe([*run.warnings, *computed])
    body.append(f'<section id="warnings"><h2>Warnings ({len(warnings)})</h2>'
                '<p class="lead">Checks on the quality of the evidence: noise, outliers, '
                "repetitions, interference and configuration differences.</p>"
                + _warnings_html(warnings) + "</section>")
    env = run.meta.environment
    body.append('<section id="environment"><div class="grid2"><div><h2>Environment</h2>'
                + (_kv_table(env) if env else "<p>Not recorded.</p>")
                + "</div><div><h2>Scenario</h2>" + _kv_table(scenario) + "</div></div>"
                "</section>")
    rows = detail_rows(samples)
    if rows:
        body.append('<section id="details"><details><summary>All groups: median, 95% '
                    f"interval, CV, outliers ({len(rows)} rows)</summary>"
                    + render_detail(rows) + "</details></section>")
    body.append('<footer>Medians over repetitions; 95% percentile-bootstrap intervals '
                "(seeded) shown; significance by exact permutation tests; outliers by "
                "modified z-score > 3.5. Generated by vnetbench."
                "</footer></main>")
    swatch_css = "".join(f'.swatch[data-layer="{layer}"]{{background:{color}}}'
                         for layer, color in plots.LAYER_COLORS.items())
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>vnetbench report · {_esc(name)}</title>"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{CSS}{FIGURE_CSS}{swatch_css}</style></head><body>" + "".join(body)
            + (f"<script>{SCRIPT}</script>" if charts else "") + "</body></html>\n")


def _trial_samples(samples: Sequence[Sample]) -> list[Sample]:
    """The samples the runner labelled with their trial (and so with its sweep point); all
    of them for results written without trial labels."""
    labelled = [s for s in samples if "trial" in s.labels]
    return labelled or list(samples)


def build_report(run_dir: str | os.PathLike[str], *, baseline: str = "host",
                 factor: float = 1.05, out: str | os.PathLike[str] | None = None,
                 preface: str = "") -> Path:
    """Write ``run_dir/report.html`` (or ``out``) and ``run_dir/figures/*.svg``; return the path."""
    run = load_run(run_dir)
    path = output_file(Path(out) if out is not None else run.path / "report.html",
                       "cannot write the report to")  # a regular file or a new name only
    text = render_report(run, baseline=baseline, factor=factor,
                         figures_dir=path.parent / "figures", preface=preface)
    return replace_file(path, "cannot write the report to",
                        lambda tmp: tmp.write_text(text, encoding="utf-8"))
