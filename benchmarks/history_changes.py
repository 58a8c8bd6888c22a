"""Does the history find a planted change, and only that one? Real runs into a store.

    sudo .venv/bin/python benchmarks/history_changes.py OUT [--runs 20] [--from 16]
        [--set link.delay=1ms]

Runs ``scenarios/history.yaml`` ``--runs`` times one after another (each a real ``vnetbench
run``), from run ``--from`` on with ``--set`` (the planted change), adds every run to the
store ``OUT/planted.db``; then as many runs again without the change into ``OUT/quiet.db``.
Prints, for each store, every series' change points (run, before, after, what changed) and
``history check``'s exit code; then in how many of the series the planted change moved (their
medians before and after it differ beyond 5 % and the runs' floors, the rule a change point
must pass) its change point was found at that run, and how many change points lie elsewhere.
The issue's bar: exactly the planted one in every cell it touches and none elsewhere, check
exit 1; the quiet store at most one false change point in all, check exit 0.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from vnetbench.history.changes import FACTOR
from vnetbench.history.check import check
from vnetbench.history.series import Series, build_series, describe
from vnetbench.history.store import HistoryStore

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "history.yaml"


def _runs(store: Path, out: Path, count: int, planted_from: int | None, change: str) -> float:
    t0 = time.monotonic()
    for k in range(1, count + 1):
        extra = ["--set", change] if planted_from is not None and k >= planted_from else []
        cmd = [sys.executable, "-m", "vnetbench", "run", str(SCENARIO), "--out",
               str(out / f"{store.stem}-{k:02d}"), "--history", str(store), *extra]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            sys.exit(f"run {k} failed ({proc.returncode}): {proc.stderr[-2000:]}")
        print(f"{store.stem} run {k}/{count}{' (planted)' if extra else ''}: "
              f"{time.monotonic() - t0:.0f} s", flush=True)
    return time.monotonic() - t0


def _touched(s: Series, at: int) -> bool:
    """Whether the planted change moved this series: its medians before and from run ``at``
    differ by more than 5 % and the runs' median floor (the rule a change point must pass)."""
    before = statistics.median(c.value for c in s.cells[:at])
    after = statistics.median(c.value for c in s.cells[at:])
    floors = [c.floor for c in s.cells if math.isfinite(c.floor)]
    floor = max(FACTOR, statistics.median(floors) if floors else 0.0)
    return abs(math.log(after / before)) > math.log1p(floor)


def _report(store: Path, planted_from: int | None) -> tuple[int, int, int, int]:
    """(touched series whose change was found, touched series, change points anywhere else,
    check's exit code); a series is touched when the planted change moved it (``_touched``)."""
    with closing(HistoryStore.open(store, create=False)) as h:
        series = build_series(h.points())
    found = elsewhere = touched = 0
    at = planted_from - 1 if planted_from is not None else None
    for s in series:
        moved = at is not None and _touched(s, at)
        touched += int(moved)
        hits = [f for f in s.changes if at is not None and f.point.index == at]
        found += int(moved and bool(hits))
        elsewhere += len(s.changes) - (len(hits) if moved else 0)
        mark = "touched" if moved else "       "
        print(f"  {mark} {s.name}: {len(s.changes)} change point(s)")
        for f in s.changes:
            print(f"      {describe(f, s.cells[-1].unit, s.kind)}")
    code = check(store).exit_code
    print(f"{store.name}: {len(series)} series, {touched} moved by the planted change; its "
          f"change point found in {found} of them; {elsewhere} change point(s) elsewhere; "
          f"history check exit {code}")
    return found, touched, elsewhere, code


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--from", dest="planted_from", type=int, default=16)
    ap.add_argument("--set", dest="change", default="link.delay=1ms")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    planted, quiet = args.out / "planted.db", args.out / "quiet.db"
    took = _runs(planted, args.out, args.runs, args.planted_from, args.change)
    took += _runs(quiet, args.out, args.runs, None, args.change)
    print(f"{2 * args.runs} runs in {took / 60:.1f} min")
    _report(planted, args.planted_from)
    _report(quiet, None)


if __name__ == "__main__":
    main()
