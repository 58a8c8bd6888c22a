"""The HTML report of a run: one self-contained page (inline CSS, SVG figures, a little JS).

``build_report(run_dir)`` reads the run, derives CPU costs, computes the headline table and
the figures, and writes ``run_dir/report.html`` plus copies of the figures under
``run_dir/figures/`` (standalone SVG files). The page answers on its first screen: a
sentence per layer (``answer.py``) and the headline table with the test parameters beside it
(``context.py``); then the noise floor, the other configurations, the figures, drops and
retransmissions, warnings, and the environment folded behind a disclosure, with a table of
contents on top. A section a filter leaves empty says why (``coverage.py``: where the run
did measure it) instead of vanishing; a section the run has no data for at all is left out.
Figures are inline SVG: hovering a point, bar or curve shows its exact figures (an SVG
``<title>``, which works without script too), and a row of layer buttons above each figure
shows or hides a layer (``page.SCRIPT``). Nothing is fetched: the page opens offline.
"""

from __future__ import annotations

import html
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from vnetbench.errors import VnetbenchError
from vnetbench.explain.facts import crossing_parts
from vnetbench.explain.run import ConditionWhy
from vnetbench.report.answer import layer_sentences, path_notes
from vnetbench.report.context import environment_html, parameters_html
from vnetbench.report.coverage import (
    counters_sentence,
    elsewhere_sentence,
    measured_elsewhere,
)
from vnetbench.report.figures import ChartEntry, FigureInput, chart_entries
from vnetbench.report.figures.breakdown import breakdown
from vnetbench.report.figures.common import LAYER_COLORS, Chart, layer_color
from vnetbench.report.hadoop import render_hadoop
from vnetbench.report.load import render_load
from vnetbench.report.page import CSS, SCRIPT
from vnetbench.report.svg import FIGURE_CSS, standalone
from vnetbench.report.tables import (
    HeadlineTable,
    choose_config,
    describe_config,
    design_lines,
    detail_rows,
    emulated_layers,
    format_value,
    headline_configs,
    headline_pool,
    headline_table,
    layer_sort_key,
    reference_name,
    render_detail,
    render_headline,
    render_noise_floor,
    select,
)
from vnetbench.report.twins import compare_twins, render_twins
from vnetbench.report.why import (
    distinct,
    explain_table,
    profiles_html,
    section_extra,
    why_cells,
)
from vnetbench.results.derive import derive_cpu_costs
from vnetbench.results.metrics import METRIC_TITLES
from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario
from vnetbench.results.store import RunData, RunStatus, load_run
from vnetbench.results.warnings import EvidenceWarning, WarningKind, quality_warnings
from vnetbench.userpaths import output_file, replace_file


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)




def _figure_html(chart: Chart, svg: str, extra: str = "") -> str:
    layers = sorted({t.layer for t in chart.tips.by_gid.values() if t.layer},
                    key=layer_sort_key)
    buttons = "".join(
        f'<button type="button" aria-pressed="true" data-layer="{_esc(layer)}" '
        f'title="show or hide {_esc(layer)}"><span class="swatch" style="background:'
        f'{layer_color(layer)}"></span>{_esc(layer)}</button>' for layer in layers)
    toggles = f'<div class="toggles">{buttons}</div>' if len(layers) > 1 else ""
    return (f'<section id="{_esc(chart.name)}"><h2>{_esc(chart.title)}</h2>'
            f'<figure class="chart" data-chart="{_esc(chart.name)}">{toggles}{svg}'
            f"<figcaption>{_esc(chart.caption)}</figcaption></figure>{extra}</section>")


def _findings(table: HeadlineTable) -> list[tuple[str, str]]:
    """(verdict, sentence) for the called differences, biggest first."""
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
    return [(v, t) for _, v, t in items]


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


def stream_semantics(scenario: RecordedScenario) -> str:
    """Whether the run's TCP streams had Nagle on (iperf3's and netperf's default) or
    TCP_NODELAY, as a sentence for the headline (empty without TCP streams)."""
    modes = {bool(opts.get("nodelay", False)) for kind, opts in scenario.workloads
             if kind == "stream" and opts.get("protocol", "tcp") == "tcp"}
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


class Page:
    """The sections of a report in order, each with the title its table of contents shows."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.toc: list[tuple[str, str]] = []

    def add(self, html_text: str, anchor: str = "", title: str = "") -> None:
        self.parts.append(html_text)
        if anchor and title:
            self.toc.append((anchor, title))

    def nav(self) -> str:
        links = "".join(f'<a href="#{_esc(a)}">{_esc(t)}</a>' for a, t in self.toc)
        return f'<nav class="toc" aria-label="contents">{links}</nav>'


def _header(run: RunData, name: str) -> str:
    status = run.status.value
    started = run.meta.started.replace("T", " ").split("+")[0]
    finished = (run.meta.finished or "").replace("T", " ").split("+")[0] or "—"
    return (f'<header><h1>vnetbench · {_esc(name)}<span class="badge {_esc(status)}">'
            f"{_esc(status)}</span></h1><div class=\"sub\"><span>run <b>{_esc(run.run_id)}</b>"
            f"</span><span>{_esc(started)} → {_esc(finished)} UTC</span>"
            f"<span>{len(run.samples):,} samples</span>"
            f"<span>scenario sha256 {_esc(run.meta.scenario_sha256[:12])}</span>"
            + (f"<span>failed in stage <b>{_esc(run.meta.failing_stage)}</b></span>"
               if run.meta.failing_stage else "")
            + "</div></header>")


def _answer_html(table: HeadlineTable, scenario: RecordedScenario,
                 parts: Mapping[str, str]) -> str:
    sentences = layer_sentences(table, scenario, parts)
    css = {"not resolved": "unresolved"}
    items = "".join(f'<li class="{css.get(v, v)}">{text}</li>' for _, v, text in sentences)
    at = table.describe_config()
    ref = reference_name(table.baseline)
    return (f'<section id="answer"><h2>What this run found'
            f"{' <span class=at>at ' + _esc(at) + '</span>' if at else ''}"
            f'<span class="key">each layer against {_esc(ref)}: \u25bc worse, \u25b2 better, '
            "? a difference the run could not resolve, = no difference</span></h2>"
            f'<ul class="answers">{items}</ul></section>')


def _no_headline_html(samples: Sequence[Sample], baseline: str) -> str:
    """Why there is no headline table: which layers and configurations the run has."""
    pool = headline_pool(samples)
    if not pool:
        return ""
    layers = sorted({s.labels.get("layer", "") for s in pool}, key=layer_sort_key)
    config = choose_config(pool)
    at = describe_config(config)
    return ('<section id="answer" class="empty"><h2>No comparison with the baseline</h2>'
            f'<p class="why">The baseline layer <code>{_esc(baseline)}</code> has no headline '
            f"measurement{' at ' + _esc(at) if at else ''}, so no layer can be set beside "
            f"it. Layers measured: {_esc(', '.join(layers))}. Choose one of them with "
            "<code>vnetbench report RUN_DIR --baseline LAYER</code>; the medians of every "
            "group are in the detail table at the end.</p></section>")


def _headline_html(table: HeadlineTable, scenario: RecordedScenario, samples: Sequence[Sample],
                   run: RunData, factor: float, parts: Mapping[str, str],
                   explained: Sequence[ConditionWhy] = ()) -> str:
    baseline = table.baseline
    findings = _findings(table)
    shown = findings[:FINDINGS_SHOWN]
    fl = "".join(f'<li class="{v}">{t}</li>' for v, t in shown) or (
        '<li class="same">No layer differs from native by more than '
        f"{(factor - 1) * 100:.0f}% and the noise floor with significance.</li>")
    if len(findings) > len(shown):
        fl += (f'<li class="same">{len(findings) - len(shown)} more called differences, '
               "smaller than these: see the table above.</li>")
    at = table.describe_config()
    pct = ("Latency percentiles are those of the pooled distribution (every trial's "
           "histogram merged). " if table.pooled else "") + stream_semantics(scenario)
    emulated = table.emulated
    notes = path_notes(table, parts)
    measured = sorted({s.labels.get("layer", "") for s in samples if "layer" in s.labels},
                      key=layer_sort_key)
    return (
        f'<section id="headline"><h2>Cost of each layer relative to '
        f"{reference_name(baseline)} "
        f"(<code>{_esc(baseline)}</code>){' <span class=at>at ' + _esc(at) + '</span>' if at else ''}"
        "</h2>"
        '<div class="headgrid"><div>'
        + render_headline(table, notes=notes,
                          why=why_cells(explained, table.layers,
                                        [k for k, _ in scenario.workloads])
                          if explained else None)
        + _path_notes_html(notes)
        + f'<div class="legend">Each cell: ratio layer / {reference_name(baseline)} '
        "(medians), added time, 95% "
        'interval of the ratio. <span class="k" style="background:#dcfce7"></span>better'
        '<span class="k" style="background:#fee2e2"></span>worse (beyond '
        f"{(factor - 1) * 100:.0f}% and the noise floor, significant)"
        '<span class="k" style="background:#e5e7eb"></span>not resolved'
        '<span class="k" style="background:#f3f4f6"></span>no difference beyond '
        f"{(factor - 1) * 100:.0f}%; arrows: which way is better</div></div>"
        + parameters_html(scenario, table, measured,
                          len({s.labels["round"] for s in samples if "round" in s.labels}))
        + "</div>"
        '<p class="lead" style="margin-top:10px">Each cell: the ratio of medians over '
        "repetitions, for latencies the added time, and the 95% bootstrap interval of the "
        "ratio (hover a cell for both medians, p and n). A cell is coloured only when the "
        f"difference is larger than {(factor - 1) * 100:.0f}% <i>and</i> than the run's "
        "noise floor (below), <i>and</i> significant by an exact permutation test over the "
        "repetitions (at most 5% false calls at any repetition count); a hatched cell is a "
        "difference the run could not resolve. " + pct
        + _esc(controls_sentence(run.meta.environment.get("controls")))
        + (f"Layers {_esc(', '.join(sorted(emulated)))} ran on an emulated CPU (TCG "
           "guests): not comparable with KVM or native, never coloured. " if emulated else "")
        + "</p>"
        f'<h2 style="margin-top:12px">Key findings</h2><ul class="findings">{fl}</ul>'
        "</section>")


def _path_notes_html(notes: Mapping[str, str]) -> str:
    if not notes:
        return ""
    return ('<p class="path-notes">' + " ".join(
        f'<sup class="path">†</sup><b>{_esc(layer)}</b>: {_esc(note)}.'
        for layer, note in notes.items()) + "</p>")


FINDINGS_SHOWN = 8


def _other_tables(samples: Sequence[Sample], run: RunData, main: HeadlineTable,
                  factor: float, emulated: set[str]
                  ) -> list[tuple[dict[str, str], HeadlineTable | None]]:
    """The further configurations at the main table's node count that get a section of their
    own, each with its headline table (None or empty: the baseline was not measured there)."""
    configs = headline_configs(samples, limit=len(samples) + 1)
    return [(config, headline_table(samples, baseline=main.baseline, factor=factor,
                                    config=config, emulated=emulated,
                                    histograms=run.histograms))
            for config in configs[1:MORE_CONFIGS + 1]]


def _other_configs(page: Page, samples: Sequence[Sample], scenario: RecordedScenario,
                   main: HeadlineTable,
                   others: Sequence[tuple[dict[str, str], HeadlineTable | None]],
                   explained: Mapping[int, Sequence[ConditionWhy]],
                   parts: Mapping[str, str]) -> None:
    """A headline table per further configuration at the same node count (hosts, delays...),
    or a note why one has none; the configurations beyond the first few are named.
    ``explained``: the why cells' explanations by the position of the configuration;
    ``parts``: each layer's part between hosts (``answer.path_notes``)."""
    baseline = main.baseline
    configs = headline_configs(samples, limit=len(samples) + 1)
    order = [k for k, _ in scenario.workloads]
    for k, (config, other) in enumerate(others):
        at = describe_config(config)
        differs = describe_config({k2: v for k2, v in config.items()
                                   if main.config.get(k2) != v}) or at
        anchor = f"at-{_slug(differs)}"
        if other is not None and other.columns:
            notes = path_notes(other, parts)
            mine = explained.get(k, ())
            page.add(f'<section class="headline-more" id="{_esc(anchor)}"><h2>Also measured '
                     f"at {_esc(at)}</h2>"
                     + render_headline(other, table_id="", notes=notes,
                                       why=why_cells(mine, other.layers, order)
                                       if mine else None)
                     + _path_notes_html(notes) + render_noise_floor(other, table_id="")
                     + "</section>", anchor, f"At {differs}")
        else:
            layers = sorted({s.labels.get("layer", "") for s in select(headline_pool(samples),
                                                                       config)},
                            key=layer_sort_key)
            page.add(f'<section class="headline-more empty" id="{_esc(anchor)}"><h2>Also '
                     f"measured at {_esc(at)}</h2><p class=\"why\">No ratios here: the "
                     f"baseline <code>{_esc(baseline)}</code> was not measured at this "
                     f"configuration; the layers that were: {_esc(', '.join(layers))}. Their "
                     "medians are in the detail table at the end.</p></section>",
                     anchor, f"At {differs}")
    rest = configs[MORE_CONFIGS + 1:]
    if rest:
        page.add('<section class="headline-more empty" id="more-configs"><h2>Further '
                 'configurations</h2><p class="why">This run also measured at '
                 + _esc("; ".join(describe_config(c) for c in rest))
                 + " (at other node counts or beyond the first "
                 f"{MORE_CONFIGS + 1} configurations): their curves are in the figures "
                 "along the swept axes and their medians in the detail table at the end."
                 "</p></section>", "more-configs", "Further configurations")


MORE_CONFIGS = 3
"""Headline tables drawn beyond the first (at the same node count)."""


def _why_section(page: Page, explained: Sequence[ConditionWhy], table: HeadlineTable,
                 figures_dir: Path | None, samples: Sequence[Sample]) -> None:
    """The breakdown figure with the attribution tables, the studies' hypotheses and the
    trials' profiles (``report.why``); nothing when no workload has a layer to explain."""
    if not any(why.layers for why in explained):
        return
    extra = section_extra(explained, profiles_html(samples, table.baseline,
                                                   {"nodes": table.nodes, "hosts": table.hosts}))
    chart = breakdown(explained, table.baseline)
    if chart is None:
        page.add(f'<section id="breakdown"><h2>Why each layer costs what it costs</h2>{extra}'
                 "</section>", "breakdown", "Why")
        return
    svg = chart.svg()
    if figures_dir is not None:
        write_figure(figures_dir, chart.name, standalone(svg))
    page.add(_figure_html(chart, svg, extra), chart.name, "Why")


def write_figure(figures_dir: Path, name: str, text: str) -> Path:
    """``figures_dir/<name>.svg``, written beside the report: never through a link planted
    in the run directory (the directory must be a real one, the file is replaced by a
    rename, a link in its place refused in one line)."""
    if figures_dir.is_symlink():
        raise VnetbenchError(f"cannot write the figures to {figures_dir}: it is a link (to "
                             f"{os.readlink(figures_dir)}), not the run's own directory; "
                             "remove it")
    figures_dir.mkdir(parents=True, exist_ok=True)
    return replace_file(figures_dir / f"{name}.svg", "cannot write a figure to",
                        lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "config"


def _charts(samples: Sequence[Sample], run: RunData, baseline: str,
            where: Mapping[str, str] | None) -> list[ChartEntry]:
    """(name, title, chart or None, what it draws from, its metrics, the conditions it was
    drawn at) for every figure the report can have, in page order (``figures.FIGURES``)."""
    return chart_entries(FigureInput(samples, _trial_samples(samples), run.histograms,
                                     run.meta.recorded, run.meta.environment, baseline, where))


def render_report(run: RunData, *, baseline: str = "host", factor: float = 1.05,
                  figures_dir: Path | None = None, preface: str = "") -> str:
    """The report's HTML for ``run``; the figures are also written to ``figures_dir`` (SVG).
    ``preface`` (HTML) is the first section (a study's verdicts)."""
    samples: list[Sample] = list(run.samples)
    samples += derive_cpu_costs(samples, scenario=run.meta.recorded)
    emulated = emulated_layers(run.meta.environment)
    table = headline_table(samples, baseline=baseline, factor=factor, histograms=run.histograms,
                           emulated=emulated)
    where = table.config if table else None
    scenario = run.meta.recorded
    name = scenario.name or run.run_id
    page = Page()
    if run.status is not RunStatus.COMPLETE:
        why = ("the sample file ends with a truncated line (the run was killed)"
               if run.truncated else f"the run's status is {run.status.value}")
        page.add(f'<section><div class="warn"><span class="kind">{_esc(run.status.value)} '
                 f"run</span> This report covers only the trials that finished: {_esc(why)}."
                 "</div></section>")
    if preface:
        page.add(preface)
    if run.meta.thresholds:  # the scenario's limits, as judged after the run
        from vnetbench.report.thresholds import thresholds_html

        page.add(thresholds_html(run.meta.thresholds), "thresholds", "Thresholds")
    explained: list[ConditionWhy] = []
    if table is not None and table.columns:
        explained = explain_table(samples, scenario, run.meta.environment, table)
        others = _other_tables(samples, run, table, factor, emulated)
        more = {k: explain_table(samples, scenario, run.meta.environment, other)
                for k, (_, other) in enumerate(others) if other is not None and other.columns}
        parts = crossing_parts(run.meta.environment)
        page.add(_answer_html(table, scenario, parts), "answer", "Answer")
        page.add(_headline_html(table, scenario, samples, run, factor, parts, explained), "headline",
                 "Headline table")
        _noise_section(page, table, baseline)
        covered = {c.workload for c in table.columns}  # the others: workloads only there
        _why_section(page, distinct([*explained, *(w for k in sorted(more) for w in more[k]
                                                   if w.workload not in covered)]),
                     table, figures_dir, samples)
        twins = compare_twins(samples, table, run.meta.environment)
        if twins is not None:
            page.add('<section id="twins"><h2>Docker and VMs beside their namespace '
                     'twins</h2><p class="lead">Each Docker network mode or VM layer and '
                     "the namespace layer that models it, as ratios to native, then its "
                     "median over its twin's with a 95% bootstrap interval (coloured when "
                     "the difference"
                     f" is larger than {(factor - 1) * 100:.0f}% and significant).</p>"
                     + render_twins(twins) + "</section>", "twins", "Docker and VM twins")
        _other_configs(page, samples, scenario, table, others, more, parts)
    else:
        missing = _no_headline_html(samples, baseline)
        if missing:
            page.add(missing, "answer", "No comparison")
    hadoop = render_hadoop(samples, baseline=baseline, factor=factor, emulated=emulated)
    if hadoop:
        page.add(hadoop, "hadoop", "Hadoop")
    load = render_load(samples, baseline, scenario, run.meta.environment)
    if load:
        page.add(load, "load", "Under load")
    charts = _charts(samples, run, baseline, where)
    _chart_sections(page, charts, samples, where, figures_dir)
    _closing_sections(page, run, samples)
    drawn = any(chart is not None for _, _, chart, _, _, _ in charts)
    swatch_css = "".join(f'.swatch[data-layer="{layer}"]{{background:{color}}}'
                         for layer, color in LAYER_COLORS.items())
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>vnetbench report · {_esc(name)}</title>"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{CSS}{FIGURE_CSS}{swatch_css}</style></head><body>"
            + _header(run, name) + page.nav() + "<main>" + "".join(page.parts) + "</main>"
            + (f"<script>{SCRIPT}</script>" if drawn else "") + "</body></html>\n")


def _noise_section(page: Page, table: HeadlineTable, baseline: str) -> None:
    """The A/A control's section: what the floor is and each headline figure's."""
    floor_html = render_noise_floor(table)
    if not floor_html:
        return
    design_html = "".join(f"<li>{_esc(line)}</li>" for line in design_lines(table))
    page.add('<section id="noise"><h2>Noise floor (A/A control)</h2><p class="lead">'
             f"The baseline <code>{_esc(baseline)}</code> was measured twice (A and "
             "B) in the same design as the layers. Their ratio shows what this "
             "run measures when nothing changes. The noise floor, the smallest "
             "change this run resolves, is the larger of that ratio's distance "
             "from 1 and the half-width of its 95% interval (paired designs), or "
             "2.5 robust standard deviations of a difference of medians (unpaired). "
             "A layer's difference within it is not resolved.</p>"
             f'<ul class="designs">{design_html}</ul>' + floor_html
             + "</section>", "noise", "Noise floor")


def _chart_sections(page: Page, charts: list[ChartEntry], samples: list[Sample],
                    where: Mapping[str, str] | None, figures_dir: Path | None) -> None:
    """A section per figure (its SVG also written to ``figures_dir``), or a line saying why
    a figure is not drawn (its data measured elsewhere, no drops)."""
    for chart_name, title, chart, items, metrics, at in charts:
        if chart is None:
            if chart_name == "drops":
                said = counters_sentence(samples, where, False)
                if said:
                    ok = said.startswith("No packet drops")
                    page.add('<section id="drops"><h2>Drops and retransmissions</h2>'
                             f'<p class="{"ok" if ok else "why"}">{_esc(said)}</p></section>',
                             "drops", "Drops")
                continue
            why = elsewhere_sentence(FIGURE_WHAT.get(chart_name, title.lower()), at,
                                     measured_elsewhere(items, metrics, at))
            if why:
                page.add(f'<section id="{_esc(chart_name)}" class="empty"><h2>{_esc(title)}'
                         f'</h2><p class="why">{_esc(why)}</p></section>', chart_name, title)
            continue
        svg = chart.svg()
        if figures_dir is not None:
            write_figure(figures_dir, chart.name, standalone(svg))
        extra = ""
        if chart.name == "drops":
            extra = f'<p class="counters">{_esc(counters_sentence(samples, where, True))}</p>'
        page.add(_figure_html(chart, svg, extra), chart.name, SHORT_TITLES.get(chart.name,
                                                                                chart.title))


def _closing_sections(page: Page, run: RunData, samples: list[Sample]) -> None:
    """The warnings, the environment, every group's figures and the footer."""
    # a run that ended wrote its quality warnings; one that was cut short did not
    computed = (quality_warnings(samples) if run.status in (RunStatus.RUNNING,
                                                              RunStatus.INCOMPLETE) else [])
    warnings = _dedupe([*run.warnings, *computed])
    page.add(f'<section id="warnings"><h2>Warnings ({len(warnings)})</h2>'
             '<p class="lead">Checks on the quality of the evidence: noise, outliers, '
             "repetitions, interference and configuration differences.</p>"
             + _warnings_html(warnings) + "</section>", "warnings",
             f"Warnings ({len(warnings)})")
    page.add(environment_html(run.meta.environment, run.meta.recorded,
                              controls_sentence(run.meta.environment.get("controls"))),
             "environment", "Environment")
    rows = detail_rows(samples)
    if rows:
        page.add('<section id="details"><details><summary>All groups: median, 95% '
                 f"interval, CV, outliers ({len(rows)} rows)</summary>"
                 + render_detail(rows) + "</details></section>", "details", "All groups")
    page.add('<footer>Medians over repetitions; 95% percentile-bootstrap intervals '
             "(seeded) shown; significance by exact permutation tests; outliers by "
             "modified z-score > 3.5. Generated by vnetbench.</footer>")


SHORT_TITLES = {"latency": "Latency", "cdf": "Latency CDF", "throughput": "Throughput",
                "timeseries": "Over time", "cpu_cost": "CPU cost", "drops": "Drops",
                "scaling": "Scaling"}
"""The table of contents' name for a figure (its own title otherwise)."""
FIGURE_WHAT = {"latency": "latency percentiles", "cdf": "latency histograms",
               "throughput": "transactions/s and goodput", "timeseries": "per-interval figures",
               "cpu_cost": "the CPU cost per transaction or per Gbit/s"}
"""What a figure draws, for the sentence saying where the run measured it instead."""


def _trial_samples(samples: Sequence[Sample]) -> list[Sample]:
    """The samples the runner labelled with their trial (and so with its sweep point); all
    of them for results written without trial labels."""
    labelled = [s for s in samples if "trial" in s.labels]
    return labelled or list(samples)


def build_report(run_dir: str | os.PathLike[str] | RunData, *, baseline: str = "host",
                 factor: float = 1.05, out: str | os.PathLike[str] | None = None,
                 preface: str = "") -> Path:
    """Write ``run_dir/report.html`` (or ``out``) and ``run_dir/figures/*.svg``; return the path
    (``run_dir``: a run directory, or the run already loaded)."""
    run = run_dir if isinstance(run_dir, RunData) else load_run(run_dir)
    path = output_file(Path(out) if out is not None else run.path / "report.html",
                       "cannot write the report to")  # a regular file or a new name only
    text = render_report(run, baseline=baseline, factor=factor,
                         figures_dir=path.parent / "figures", preface=preface)
    return replace_file(path, "cannot write the report to",
                        lambda tmp: tmp.write_text(text, encoding="utf-8"))
