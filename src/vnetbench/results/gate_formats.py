"""The compare gate for CI: as Markdown (a job summary) and as JUnit XML (a test report).

``vnetbench compare A B --format markdown`` writes what a CI job summary shows (GitHub's
``$GITHUB_STEP_SUMMARY``, GitLab's Markdown artefacts): a heading with the verdict, a table of
the changes (by default the called and the collapsed ones; every group with ``--all``), the
gate's problems and its summary line.

``--format junit`` writes one ``<testcase>`` per compared group (``classname``
``vnetbench.<workload>``, ``name`` the metric and the group's labels): a regression is a
``<failure>``, a group the gate could not judge (too few repetitions, collapsed values) is
``<skipped>`` with why; then one testcase per gate problem (``vnetbench.gate``), a
``<failure>`` unless allowed (then ``<skipped>``). The failures are exactly what fails the
gate, so a CI reading the report agrees with the exit code.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from vnetbench.results.compare import Change, Gate

FORMATS = ("text", "markdown", "junit")


def _order(changes: Sequence[Change]) -> list[Change]:
    return sorted(changes, key=lambda c: (not c.collapsed, not c.regression, not c.called,
                                          c.metric))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _group(change: Change) -> str:
    return " ".join(f"{k}={v}" for k, v in change.labels.items())


def _num(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else "-"


def gate_markdown(gate: Gate, run_a: str, run_b: str, tolerance: float,
                  show_all: bool = False) -> str:
    """The gate as Markdown (see the module docstring)."""
    verdict = "passed" if gate.passed else "FAILED"
    lines = [f"### vnetbench compare: gate {verdict}", "",
             f"`{_cell(run_a)}` (A) against `{_cell(run_b)}` (B); a change is called beyond "
             f"x{1 + tolerance:g} and the A/A noise floor, and significant.", ""]
    rows = _order(gate.changes)
    if not show_all:
        rows = [c for c in rows if c.called or c.collapsed]
    if rows:
        lines += ["| verdict | metric | group | A | B | ratio | 95% interval | p | floor | n |",
                  "|---|---|---|---:|---:|---:|---|---:|---:|---:|"]
        for c in rows:
            verdict_cell = f"**{c.verdict}**" if c.regression or c.collapsed else c.verdict
            interval = (f"[{c.ci.low:.3f}, {c.ci.high:.3f}]" if math.isfinite(c.ci.low)
                        else "none")
            p_value = f"{c.p_value:.3f}" if math.isfinite(c.p_value) else "-"
            floor = f"{c.floor:.1%}" if math.isfinite(c.floor) else "-"
            lines.append(
                f"| {verdict_cell} | `{_cell(c.metric)}` | {_cell(_group(c))} | "
                f"{_num(c.median_a)} {_cell(c.unit)} | {_num(c.median_b)} {_cell(c.unit)} | "
                f"x{c.ratio:.3f} | {interval} | {p_value} | {floor} | {c.n_a}/{c.n_b} |")
        lines.append("")
    elif gate.changes:
        lines += ["No change was called (`--all` lists every group).", ""]
    if gate.problems:
        lines.append("Problems:")
        lines += [f"- {_cell(line)}" for line in gate.problem_lines()]
        lines.append("")
    notes = gate.note_lines()
    if notes:
        lines += ["Notes:", *[f"- {_cell(line)}" for line in notes], ""]
    lines.append(f"**{_cell(gate.summary_line())}**")
    return "\n".join(lines)


def gate_junit(gate: Gate, run_a: str, run_b: str) -> str:
    """The gate as JUnit XML (see the module docstring)."""
    suite = ET.Element("testsuite", name=f"vnetbench compare {run_a} -> {run_b}")
    props = ET.SubElement(suite, "properties")
    for name, value in (("run_a", run_a), ("run_b", run_b), ("summary", gate.summary_line())):
        ET.SubElement(props, "property", name=name, value=value)
    failures = skipped = 0
    for c in _order(gate.changes):
        case = ET.SubElement(suite, "testcase", name=f"{c.metric} [{_group(c)}]",
                             classname=f"vnetbench.{c.labels.get('workload') or 'run'}",
                             time="0")
        if c.regression:
            failures += 1
            ET.SubElement(case, "failure", type="regression",
                          message=f"x{c.ratio:.3f}, beyond the tolerance and the noise floor "
                                  "and significant").text = c.describe()
        elif c.collapsed or not c.judgeable:
            skipped += 1
            why = c.collapse if c.collapsed else (f"too few repetitions ({c.n_a} vs {c.n_b}) "
                                                  "for any difference to be significant")
            ET.SubElement(case, "skipped", message=f"{c.verdict}: {why}")
        else:
            ET.SubElement(case, "system-out").text = c.describe()
    for problem in gate.problems:
        case = ET.SubElement(suite, "testcase", name=problem.kind, classname="vnetbench.gate",
                             time="0")
        if problem.kind in gate.allowed:
            skipped += 1
            ET.SubElement(case, "skipped", message=f"allowed: {problem.message}")
        else:
            failures += 1
            ET.SubElement(case, "failure", type=problem.kind,
                          message=problem.short).text = problem.message
    total = len(gate.changes) + len(gate.problems)
    suite.set("tests", str(total))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    root = ET.Element("testsuites", name="vnetbench compare", tests=str(total),
                      failures=str(failures), errors="0", skipped=str(skipped))
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")
