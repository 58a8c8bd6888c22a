"""``vnetbench history check STORE``: the newest runs against their history, for CI.

Every series of the store is searched for change points (``series``); a change point of a
layer's cost (a ``ratio`` series) whose first run is among the store's newest ``window`` runs
(default 5) fails the check (exit 1): the layer's cost moved, beyond 5 % and the runs' own
floors, and stayed moved, within the runs a CI job just added. Older change points are
listed, not failed (they were the news of an earlier check). The baseline's own ``level``
moves with the machine as much as with the code (this VM's native round trip sits at 12.5,
17 or 30 µs for minutes at a time, whatever runs): its change points are listed as the
machine's, and fail the check only with ``levels`` (a dedicated, quiet machine). As text,
Markdown (a job summary) or JUnit XML (a testcase per series, a ``<failure>`` per new
change), the formats ``compare`` gives.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from vnetbench.history.series import Found, Series, build_series, describe
from vnetbench.history.store import HistoryStore, StoredRun

WINDOW = 5
FORMATS = ("text", "markdown", "junit")


@dataclass(frozen=True)
class CheckResult:
    store: str
    window: int
    runs: tuple[StoredRun, ...]
    series: tuple[Series, ...]
    levels: bool = False
    """Whether the baseline's level series fail the check too."""

    def judged(self, s: Series) -> bool:
        return s.kind == "ratio" or self.levels

    @property
    def newest(self) -> frozenset[str]:
        return frozenset(r.run_id for r in self.runs[-self.window:]) if self.window else \
            frozenset()

    def new_changes(self) -> list[tuple[Series, Found]]:
        """Change points whose first run is among the newest ``window`` runs."""
        return [(s, f) for s in self.series for f in s.changes
                if f.run.run_id in self.newest and self.judged(s)]

    def old_changes(self) -> list[tuple[Series, Found]]:
        """The other change points: older ones, and the baseline's level (unless judged)."""
        return [(s, f) for s in self.series for f in s.changes
                if f.run.run_id not in self.newest or not self.judged(s)]

    @property
    def exit_code(self) -> int:
        return 1 if self.new_changes() else 0

    def summary_line(self) -> str:
        new, old = self.new_changes(), self.old_changes()
        verdict = "FAILED" if new else "passed"
        return (f"history check {verdict}: {len(self.runs)} runs, {len(self.series)} series; "
                f"{len(new)} change point(s) among the newest {min(self.window, len(self.runs))}"
                f" run(s), {len(old)} earlier")


def check(store: str | Path, window: int = WINDOW, levels: bool = False) -> CheckResult:
    """The check of ``store`` (see the module docstring)."""
    with closing(HistoryStore.open(store, create=False)) as s:
        runs = tuple(s.runs())
        series = tuple(build_series(s.points()))
    return CheckResult(str(store), window, runs, series, levels)


def _lines(found: Sequence[tuple[Series, Found]]) -> list[str]:
    return [f"{s.name}: {describe(f, s.cells[-1].unit, s.kind)}" for s, f in found]


def as_text(result: CheckResult) -> str:
    new, old = result.new_changes(), result.old_changes()
    lines = [f"NEW   {line}" for line in _lines(new)] + [f"      {line}" for line in _lines(old)]
    return "\n".join([*lines, result.summary_line()])


def as_markdown(result: CheckResult) -> str:
    new, old = result.new_changes(), result.old_changes()
    verdict = "FAILED" if new else "passed"
    out = [f"### vnetbench history check: {verdict}", "",
           f"`{result.store}`: {len(result.runs)} runs, {len(result.series)} series; a change "
           "point is a lasting move beyond 5 % and the runs' A/A floors (E-divisive means, "
           f"permutation test); the newest {result.window} runs are checked.", ""]
    rows = [("**new**", s, f) for s, f in new] + [("earlier", s, f) for s, f in old]
    if rows:
        out += ["| | series | change |", "|---|---|---|"]
        out += [f"| {tag} | {s.name.replace('|', '/')} | "
                f"{describe(f, s.cells[-1].unit, s.kind).replace('|', '/')} |"
                for tag, s, f in rows]
    else:
        out.append("No change point in any series.")
    return "\n".join([*out, "", result.summary_line()])


def as_junit(result: CheckResult) -> str:
    new = {(s.key, f.point.index) for s, f in result.new_changes()}
    suite = ET.Element("testsuite", name="vnetbench history", tests=str(len(result.series)),
                       failures=str(len(result.new_changes())))
    for s in result.series:
        case = ET.SubElement(suite, "testcase", classname=f"vnetbench.history.{s.cells[-1].workload}",
                             name=s.name)
        for f in s.changes:
            if (s.key, f.point.index) in new:
                failure = ET.SubElement(case, "failure", message="change point among the "
                                        f"newest {result.window} runs")
                failure.text = describe(f, s.cells[-1].unit, s.kind)
    return ET.tostring(suite, encoding="unicode")


def render(result: CheckResult, fmt: str) -> str:
    return {"text": as_text, "markdown": as_markdown, "junit": as_junit}[fmt](result)
