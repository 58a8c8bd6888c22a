"""``vnetbench reproduce``: run a study's pack, judge every finding, and put the verdicts
first in the run's report (and on the terminal).

The verdict table, per finding: the figure or table it comes from, the published numbers,
ours (ratio layer/baseline with its 95 % interval), the verdict and why (``verdict``). A
contradiction is evidence, not a failure: beside it the report shows what the run's
collectors saw on that layer (softirqs on the busiest core, drops, TCP retransmissions).
``reproduction.json`` keeps the table as data: in the run directory, or, for a pack of
several scenarios (one run each, in subdirectories named after the scenarios), in the
directory above them; every run's report then starts with the whole table.

``--judge`` takes only runs of the study: each run's scenario must be one of the pack's, of
any size (its name and the hash of its content, ``runs_of_study``), and hold a measured value;
anything else is refused before a file is written.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from statistics import median

from vnetbench.errors import VnetbenchError
from vnetbench.report.tables import emulated_layers
from vnetbench.results.model import Sample
from vnetbench.results.store import load_run, scenario_hash
from vnetbench.results.warning_model import EvidenceWarning
from vnetbench.studies.bounds import with_bounds
from vnetbench.studies.causes import explain
from vnetbench.studies.judgement import RULES, VERDICTS, Judgement
from vnetbench.studies.model import HostFacts, Study
from vnetbench.studies.spread import with_spreads
from vnetbench.studies.trend import with_cores
from vnetbench.studies.verdict import judge
from vnetbench.userpaths import replace_file

Progress = Callable[[str], None]
MARK = {"agrees": "agrees", "contradicts": "CONTRADICTS", "not comparable": "not comparable",
        "set by the lab": "set by the lab"}


def run_dirs_of(path: Path) -> list[Path]:
    """The runs of one reproduction: ``path`` itself when it is a run, else the runs in its
    subdirectories (a pack of several scenarios), in name order."""
    if (path / "run.json").is_file():
        return [path]
    return sorted(d for d in path.iterdir() if (d / "run.json").is_file()) \
        if path.is_dir() else []


def _content(scenario: Mapping[str, object]) -> str:
    """The hash of a scenario's content as ``run`` stores it (``run.json``'s scenario
    without the ``file`` it was read from)."""
    return scenario_hash(json.loads(json.dumps({k: v for k, v in scenario.items()
                                                if k != "file"}, default=str)))


def runs_of_study(study: Study, run_dirs: Sequence[Path]) -> None:
    """VnetbenchError (one line) unless every run is of one of ``study``'s scenarios (of any
    size, those that need KVM included: the same name and the same content, by hash) and
    measured something."""
    from vnetbench.scenario.loading import parse_yaml, read_text

    pack = {}
    for size in study.sizes:  # as written: a full file need not validate on a small host
        for path in [*study.scenario_paths(size), *study.kvm_scenario_paths(size)]:
            raw = parse_yaml(read_text(path), str(path))
            if isinstance(raw, dict):
                pack[_content(raw)] = str(raw.get("name"))
    names = sorted(set(pack.values()))
    for run_dir in run_dirs:
        run = load_run(run_dir)
        name = run.meta.recorded.name
        if name not in pack.values():
            raise VnetbenchError(
                f"--judge {run_dir}: a run of scenario {name!r}, not of study {study.id} "
                f"({study.name}), whose scenarios are {', '.join(names)}")
        if _content(run.meta.recorded.raw) not in pack:
            raise VnetbenchError(
                f"--judge {run_dir}: scenario {name!r} differs from study {study.id}'s pack "
                "(its content hash does not match: the pack or the run's file changed); rerun "
                f"`vnetbench reproduce {study.name}`")
        if not any(math.isfinite(s.value) for s in run.samples):
            raise VnetbenchError(f"--judge {run_dir}: the run holds no measured value (no "
                                 "sample with a finite value); nothing to judge")


def judge_runs(study: Study, run_dirs: Sequence[Path]) -> list[Judgement]:
    """Every finding of ``study`` judged against the samples of all ``run_dirs`` together
    (a pack's scenarios measure different things; labels keep them apart), on what the
    runs' machine offered (``HostFacts``); a contradiction carries its tested cause."""
    from vnetbench.results.derive import derive_cpu_costs

    samples: list[Sample] = []
    emulated: set[str] = set()
    warnings: list[EvidenceWarning] = []
    environments = []
    for run_dir in run_dirs:
        run = load_run(run_dir)
        emulated |= set(emulated_layers(run.meta.environment))
        environments.append(run.meta.environment)
        mine = with_cores([*run.samples, *derive_cpu_costs(run.samples,
                                                           scenario=run.meta.recorded)],
                          run.meta.recorded, run.meta.environment)
        samples += with_spreads(with_bounds(mine, run.meta.recorded))
        warnings += [EvidenceWarning.from_dict(w) for w in run.meta.warnings]
    host = HostFacts.of(environments)
    out = []
    for f in study.findings:
        j = judge(f, samples, emulated, warnings, host)
        if j.verdict == "contradicts" and f.cause is not None:
            j = dataclasses.replace(j, cause=explain(f, samples))
        out.append(j)
    return out


def counts(judgements: Sequence[Judgement]) -> str:
    """``3 agrees, 1 contradicts, 5 not comparable, 2 set by the lab; 4 could have failed``."""
    return (", ".join(f"{sum(j.verdict == v for j in judgements)} {v}" for v in VERDICTS)
            + f"; {sum(j.could_fail for j in judgements)} could have failed")


def could(j: Judgement) -> str:
    """Whether the run could have produced the opposite verdict, in words."""
    return "could have failed" if j.could_fail else "could not have failed"


def verdict_lines(study: Study, judgements: Sequence[Judgement]) -> list[str]:
    """The verdict table for the terminal."""
    lines = [f"study {study.id} {study.name}: {study.title}"]
    for j in judgements:
        lines.append(f"  {j.finding.id} ({j.finding.source}): {MARK[j.verdict]} "
                     f"[rule: {j.rule}; {could(j)}]")
        lines.append(f"      published: {j.published}")
        lines.append(f"      ours:      {j.ours} ({compared(j)}, {j.finding.check.metric}); "
                     f"{j.why}")
        if j.ratio is not None:
            lines.append(f"      resolves:  {j.resolves}")
        if j.cause:
            lines.append(f"      {j.cause}")
    lines.append("  " + counts(judgements))
    return lines


def compared(j: Judgement) -> str:
    """``vxlan/host`` for a ratio, ``bridge along nodes`` for a trend."""
    c = j.finding.check
    if c.along:
        return f"{c.layer} along {c.along}"
    if c.expect == "reaches":
        return f"{c.layer}'s level"
    return f"{c.layer}/{c.baseline} across {c.across}" if c.across else f"{c.layer}/{c.baseline}"


def markdown_table(rows: Sequence[tuple[Study, Judgement]]) -> list[str]:
    """Every finding of several studies as one Markdown table (the README's)."""
    def cut(text: str, most: int) -> str:
        text = text.replace("|", "/")
        return text if len(text) <= most else text[:most - 3] + "..."

    out = ["| study | finding (source) | published | ours | resolves | rule | verdict |",
           "|---|---|---|---|---|---|---|"]
    for study, j in rows:
        resolves = "-" if math.isnan(j.resolvable) else f"x{j.resolvable:.2f}"
        out.append(f"| {study.id} | {j.finding.id} ({cut(j.finding.source, 40)}) | "
                   f"{cut(j.published, 70)} | {cut(j.ours, 90)} {compared(j)} | {resolves} | "
                   f"{j.rule}, {could(j)} | **{j.verdict}**: {cut(j.why, 90)} |")
    return out


def evidence(samples: Sequence[Sample], layer: str) -> str:
    """What the collectors saw on ``layer``: the busiest core's share of NET_RX softirqs,
    drops on the lab's devices and TCP retransmissions, as medians over its trials."""
    mine = [s for s in samples if s.labels.get("layer") == layer]

    def per_trial(metric: str, pick: Callable[[Sample], bool] = lambda s: True
                  ) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for s in mine:
            if s.metric == metric and pick(s):
                out.setdefault(s.labels.get("trial", ""), []).append(s.value)
        return out

    parts = []
    cores = per_trial("net_rx_softirqs", lambda s: s.labels.get("cpu") not in (None, "all"))
    shares = [max(v) / sum(v) for v in cores.values() if sum(v) > 0]
    if shares:
        parts.append(f"busiest core took {median(shares):.0%} of NET_RX softirqs")
    for metric, what in (("rx_drops", "rx drops"), ("tx_drops", "tx drops"),
                         ("tcp_retrans_segs", "TCP retransmissions")):
        totals = [sum(v) for v in per_trial(metric).values()]
        if totals:
            parts.append(f"{what} {median(totals):g} per trial")
    return "; ".join(parts) or "no collector samples for this layer"


def verdict_html(study: Study, judgements: Sequence[Judgement],
                 samples: Sequence[Sample]) -> str:
    """The report's first section: published | ours | verdict, per finding."""
    esc = html.escape
    rows = []
    for j in judgements:
        c = j.finding.check
        extra = ""
        if j.verdict == "contradicts":
            extra = f'<div class="ci">evidence on {esc(c.layer)}: {esc(evidence(samples, c.layer))}</div>'
            extra += (f'<div class="ci">{esc(j.cause)}</div>' if j.cause else
                      '<div class="ci">no explanation given (none tested)</div>')
        if j.ratio is not None:
            extra += f'<div class="ci">resolves {esc(j.resolves)}</div>'
        extra += f'<div class="ci">rule: {esc(j.rule)}; {esc(could(j))}</div>'
        css = {"agrees": "better", "contradicts": "worse"}.get(j.verdict, "unresolved")
        rows.append(
            f"<tr><td><b>{esc(j.finding.id)}</b><div class=\"ci\">{esc(j.finding.claim)}</div>"
            f"</td><td>{esc(j.finding.source)}</td><td>{esc(j.published)}</td>"
            f"<td>{esc(j.ours)}<div class=\"ci\">{esc(compared(j))}, "
            f"{esc(c.workload)} {esc(c.metric)}</div></td>"
            f'<td class="{css}"><b>{esc(j.verdict)}</b><div class="ci">{esc(j.why)}</div>'
            f"{extra}</td></tr>")
    mapping = "".join(f"<li>{esc(m.study)} &rarr; <code>{esc(m.layer)}</code>"
                      f"{(' (' + esc(m.note) + ')') if m.note else ''}</li>"
                      for m in study.mapping)
    differences = "".join(f"<li>{esc(d)}</li>" for d in study.differences)
    used = sorted({j.rule for j in judgements if j.rule})
    rules = "".join(f"<li><b>{esc(r)}</b>: {esc(RULES.get(r, ''))}</li>" for r in used)
    return (f'<section id="reproduction"><h2>Study {esc(study.id)}: {esc(study.title)}</h2>'
            '<p class="lead">Each finding of the study beside this run: the published numbers '
            "(with their figure or table), ours as the ratio layer / baseline with "
            "its 95% interval (judged pair by pair where the run paired them), and the "
            "verdict computed from the finding's rule, named with whether the run could have "
            "produced the opposite verdict; "
            "<b>set by the lab</b> marks a comparison the lab's own setting decided (shown, "
            "never counted as agreement).</p>"
            '<table class="headline verdicts"><thead><tr><th>finding</th><th>source</th>'
            "<th>published</th><th>ours</th><th>verdict</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>"
            f"<h3>The rules that decided</h3><ul>{rules}</ul>"
            f"<h3>Systems and layers</h3><ul>{mapping}</ul>"
            + (f"<h3>How this lab differs from the study's testbed</h3><ul>{differences}</ul>"
               if differences else "") + "</section>")


def write_reproduction(study: Study, run_dirs: Sequence[Path]
                       ) -> tuple[list[Judgement], list[Path]]:
    """Judge the runs, write ``reproduction.json`` (beside a single run, else in the runs'
    common parent) and each run's report with the verdicts first."""
    from vnetbench.report.html import build_report

    judgements = judge_runs(study, run_dirs)
    where = run_dirs[0] if len(run_dirs) == 1 else run_dirs[0].parent
    table = json.dumps({
        "study": study.id, "name": study.name, "title": study.title,
        "findings": [{"id": j.finding.id, "source": j.finding.source,
                      "published": [p.model_dump() for p in j.finding.published],
                      "ours": j.ours, "verdict": j.verdict, "why": j.why,
                      "rule": j.rule, "could_fail": j.could_fail,
                      "floor_source": j.floor_source or None,
                      "resolvable": None if math.isnan(j.resolvable) else j.resolvable,
                      "cause": j.cause or None,
                      "layer": j.finding.check.layer, "baseline": j.finding.check.baseline,
                      "metric": j.finding.check.metric, "along": j.finding.check.along}
                     for j in judgements],
        "runs": [str(d) for d in run_dirs],
    }, indent=2)
    replace_file(where / "reproduction.json", "cannot write the verdicts to",
                 lambda tmp: tmp.write_text(table))  # never through a link planted there
    reports = [build_report(d, preface=verdict_html(study, judgements, load_run(d).samples))
               for d in run_dirs]
    return judgements, reports
