"""Does the history find a planted change, and only that one? Real runs into a store.

    sudo .venv/bin/python benchmarks/history_changes.py OUT [--runs 20] [--from 16]
        [--set link.delay=1ms]

Runs ``scenarios/history.yaml`` ``--runs`` times one after another (each a real ``vnetbench
run``), from run ``--from`` on with ``--set`` (the planted change), adds every run to the
store ``OUT/planted.db``; then as many runs again without the change into ``OUT/quiet.db``.
Prints, for each store, every series' change points (run, before, after, what changed) and
``history check``'s exit code; then in how many of the series the planted change touches its
change point was found at that run, and how many change points lie elsewhere. Which series a
change touches: for a ``link.*`` change, by construction, the cells whose nodes sit on more
than one host (on one host no link is crossed); for any other change, the series whose
medians before and after it differ beyond 5 % and the runs' floors (the rule a change point
must pass). The series that rule would call moved although the change cannot reach them are
counted apart: on this machine a level series (native's own microseconds) switches between
two modes from run to run, so its medians can differ by chance on either side.
The issue's bar: exactly the planted one in every cell it touches and none elsewhere, check
exit 1; the quiet store at most one false change point in all, check exit 0.

    .venv/bin/python benchmarks/history_changes.py OUT --judge-only   # the stores again
"""

from __future__ import annotations

import argparse
import math
import re
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


def _crosses_hosts(s: Series) -> bool:
    """Whether the series' cell has its nodes on more than one host (its config says
    ``N hosts``), so that a change of the links between hosts reaches it."""
    match = re.search(r"(\d+) hosts?\b", s.cells[-1].config if s.cells else "")
    return match is not None and int(match.group(1)) > 1


def _report(store: Path, planted_from: int | None, change: str) -> tuple[int, int, int, int]:
    """(touched series whose change was found, touched series, change points anywhere else,
    check's exit code); which series are touched: see the module docstring."""
    with closing(HistoryStore.open(store, create=False)) as h:
        series = build_series(h.points())
    found = elsewhere = touched = drifted = 0
    at = planted_from - 1 if planted_from is not None else None
    by_link = change.startswith("link.")
    for s in series:
        moved = at is not None and _touched(s, at)
        reached = at is not None and (_crosses_hosts(s) if by_link else moved)
        touched += int(reached)
        drifted += int(moved and not reached)
        hits = [f for f in s.changes if at is not None and f.point.index == at]
        found += int(reached and bool(hits))
        elsewhere += len(s.changes) - (len(hits) if reached else 0)
        mark = "touched" if reached else ("moved  " if moved else "       ")
        print(f"  {mark} {s.name}: {len(s.changes)} change point(s)")
        for f in s.changes:
            print(f"      {describe(f, s.cells[-1].unit, s.kind)}")
    code = check(store).exit_code
    rule = "crossing hosts, where the link change reaches" if by_link else "moved by it"
    apart = (f" ({drifted} more whose medians differ across run {planted_from} although the "
             f"change cannot reach them: 'moved')") if drifted else ""
    print(f"{store.name}: {len(series)} series, {touched} touched by the planted change "
          f"({rule}){apart}; its change point found in {found} of the {touched}; {elsewhere} "
          f"change point(s) elsewhere; history check exit {code}")
    return found, touched, elsewhere, code


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--from", dest="planted_from", type=int, default=16)
    ap.add_argument("--set", dest="change", default="link.delay=1ms")
    ap.add_argument("--judge-only", action="store_true",
                    help="judge the stores an earlier run left in OUT (no new runs)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    planted, quiet = args.out / "planted.db", args.out / "quiet.db"
    if not args.judge_only:
        took = _runs(planted, args.out, args.runs, args.planted_from, args.change)
        took += _runs(quiet, args.out, args.runs, None, args.change)
        print(f"{2 * args.runs} runs in {took / 60:.1f} min")
    _report(planted, args.planted_from, args.change)
    _report(quiet, None, args.change)


if __name__ == "__main__":
    main()
