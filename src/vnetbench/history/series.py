"""The store's series: each headline cell's values over the runs, in the order the runs
started, with their change points (``changes``) and, at each, what else changed between
the two sides (the commit, the kernel, the programs' versions, the scenario, the machine)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from vnetbench.history.cells import Cell
from vnetbench.history.changes import ChangePoint, change_points
from vnetbench.history.store import Point, StoredRun


@dataclass(frozen=True)
class Found:
    """A change point of a series, with its runs and what changed across it."""

    point: ChangePoint
    run: StoredRun
    """The first run of the new side."""
    previous: StoredRun
    """The last run before it."""
    changed: tuple[str, ...]
    """What differs between the two sides besides the figure (``kernel 6.1 -> 6.18``)."""


@dataclass
class Series:
    """One cell over the runs (oldest first)."""

    key: str
    cells: list[Cell] = field(default_factory=list)
    runs: list[StoredRun] = field(default_factory=list)
    changes: list[Found] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.cells[-1].series if self.cells else self.key

    @property
    def kind(self) -> str:
        return self.cells[-1].kind if self.cells else ""


def _values(values: set[str]) -> str:
    shown = sorted(values)
    return ", ".join(shown) if len(shown) <= 3 else f"{len(shown)} values"


def _version_of(program: str) -> Callable[[StoredRun], str]:
    def of(r: StoredRun) -> str:
        return r.packages.get(program, "")

    return of


def _sides(runs: Sequence[StoredRun], at: int) -> tuple[str, ...]:
    """What differs across the change at ``at``: the commit of the last run before and of the
    first after (when they differ), then each fact whose values differ between the two
    sides (the kernel, the machine, the scenario, each program's version)."""
    before, after = runs[:at], runs[at:]
    out = []
    last, first = runs[at - 1], runs[at]
    if (last.commit, last.dirty) != (first.commit, first.dirty):
        out.append(f"commit {last.commit[:12] or '-'}{'+dirty' if last.dirty else ''} -> "
                   f"{first.commit[:12] or '-'}{'+dirty' if first.dirty else ''}")
    facts: dict[str, Callable[[StoredRun], str]] = {
        "kernel": lambda r: r.kernel,
        "machine": lambda r: r.machine,
        "scenario": lambda r: r.scenario_sha256[:12] + (
            f" ({' '.join(r.overrides)})" if r.overrides else ""),
    }
    for prog in sorted({p for r in runs for p in r.packages}):
        facts[prog] = _version_of(prog)
    for name, of in facts.items():
        a, b = {of(r) for r in before}, {of(r) for r in after}
        if a != b:
            out.append(f"{name} {_values(a) or '-'} -> {_values(b) or '-'}")
    return tuple(out)


def build_series(points: Sequence[Point]) -> list[Series]:
    """Every cell's series with its change points, in the order of their keys."""
    by_key: dict[str, Series] = {}
    for p in points:
        s = by_key.setdefault(p.cell.key, Series(p.cell.key))
        s.cells.append(p.cell)
        s.runs.append(p.run)
    for s in by_key.values():
        values = [c.value for c in s.cells]
        floors = [c.floor for c in s.cells]
        for cp in change_points(values, floors):
            s.changes.append(Found(cp, s.runs[cp.index], s.runs[cp.index - 1],
                                   _sides(s.runs, cp.index)))
    return [by_key[k] for k in sorted(by_key)]


def describe(found: Found, unit: str, kind: str) -> str:
    """``x1.31 -> x1.02 (-22%) from run R (commit abc); changed: kernel a -> b``."""
    cp = found.point

    def show(v: float) -> str:
        return f"x{v:.3g}" if kind == "ratio" else f"{v:.4g} {unit}".strip()

    pct = (cp.change - 1.0) * 100.0 if math.isfinite(cp.change) else math.nan
    where = f"run {found.run.run_id}" + (f" (commit {found.run.commit[:12]})"
                                          if found.run.commit else "")
    changed = "; changed: " + ", ".join(found.changed) if found.changed else \
        "; nothing else recorded changed"
    return (f"{show(cp.before)} -> {show(cp.after)} ({pct:+.0f}%, p={cp.p_value:.3f}, beyond "
            f"the {cp.floor:.0%} floor) from {where}{changed}")
