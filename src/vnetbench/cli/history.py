"""``vnetbench history``: runs over time in one store (``vnetbench.history``).

    history add STORE RUN...     put runs into the store (made when absent); idempotent
    history series STORE         every series: its newest value and its change points
    history check STORE          exit 1 when a change point lies among the newest runs
    history report STORE         the store's page: a trend chart per series
    history export STORE         OpenMetrics text, a push gateway, a Grafana dashboard
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from contextlib import closing
from functools import partial
from pathlib import Path

from vnetbench.errors import VnetbenchError

Command = Callable[..., argparse.ArgumentParser]


def add_history_command(command: Command, fn: Callable[[argparse.Namespace], None]) -> None:
    """The ``history`` subcommand (``fn``: its handler, ``main.cmd_history``)."""
    p = command("history", fn, "runs over time in one store: add runs, their series "
                "per headline cell, change points, a check for CI, a page, exports")
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    a = sub.add_parser("add", help="put run directories into the store (made when absent); "
                       "a run already there is left as it is")
    a.add_argument("store", type=Path)
    a.add_argument("runs", type=Path, nargs="+", help="run directories")
    s = sub.add_parser("series", help="every series of the store: runs, newest value, change "
                       "points")
    s.add_argument("store", type=Path)
    s.add_argument("--json", action="store_true", help="print them as JSON")
    c = sub.add_parser("check", help="exit 1 when a change point lies among the newest runs")
    c.add_argument("store", type=Path)
    c.add_argument("--window", type=int, default=5, metavar="N",
                   help="how many of the newest runs a change point fails the check in "
                   "(default 5)")
    c.add_argument("--levels", action="store_true",
                   help="the baseline's own level fails the check too (by default only a "
                   "layer's cost, its ratio to the baseline, does: the level moves with the "
                   "machine)")
    c.add_argument("--format", choices=("text", "markdown", "junit"), default="text",
                   help="text (default); markdown for a CI job summary; junit XML (a testcase "
                   "per series, a failure per new change point). The exit code is the same")
    r = sub.add_parser("report", help="write the store's page: a trend chart per series, "
                       "change points marked, links to the runs' reports")
    r.add_argument("store", type=Path)
    r.add_argument("--out", type=Path, help="the page (default: STORE with .html)")
    e = sub.add_parser("export", help="the series as OpenMetrics text (every run at its start "
                       "time), pushed to a Prometheus push gateway, or as a Grafana dashboard")
    e.add_argument("store", type=Path)
    e.add_argument("--openmetrics", type=Path, metavar="FILE", help="write OpenMetrics text")
    e.add_argument("--push", metavar="URL", help="PUT the newest run's values to the push "
                   "gateway at URL (http://HOST:9091)")
    e.add_argument("--grafana", type=Path, metavar="FILE",
                   help="write a Grafana dashboard (JSON) drawing the exported metrics")


def run_history(args: argparse.Namespace) -> int:
    """Carry out ``history ACTION``; its exit code."""
    actions: dict[str, Callable[[argparse.Namespace], int | None]] = {
        "add": _add, "series": _series, "check": _check, "report": _report, "export": _export}
    return actions[args.action](args) or 0


def _add(args: argparse.Namespace) -> None:
    from vnetbench.history.store import add_runs
    from vnetbench.results.store import load_run

    runs = [load_run(path) for path in args.runs]  # every run read before the store is
    for run_id, added in add_runs(args.store, runs):  # touched: a bad one adds nothing
        print(f"{'added' if added else 'already stored'}: {run_id}")


def _series(args: argparse.Namespace) -> None:
    from vnetbench.history.series import build_series, describe
    from vnetbench.history.store import HistoryStore

    with closing(HistoryStore.open(args.store, create=False)) as store:
        series = build_series(store.points())
    if args.json:
        print(json.dumps([{
            "key": s.key, "name": s.name, "kind": s.kind, "runs": len(s.runs),
            "values": [_finite(c.value) for c in s.cells],
            "floors": [_finite(c.floor) for c in s.cells],
            "run_ids": [r.run_id for r in s.runs],
            "changes": [{"index": f.point.index, "run": f.run.run_id, "before": f.point.before,
                         "after": f.point.after, "p_value": f.point.p_value,
                         "changed": list(f.changed)} for f in s.changes]}
            for s in series], indent=2, allow_nan=False))
        return None
    for s in series:
        newest = s.cells[-1]
        print(f"{s.name}: {len(s.runs)} runs, newest {newest.value:.4g}"
              + (f" {newest.unit}" if s.kind == "level" else ""))
        for f in s.changes:
            print(f"  change: {describe(f, newest.unit, s.kind)}")


def _finite(value: float) -> float | None:
    """A number for JSON (null where there is none: a run without an A/A floor)."""
    return value if math.isfinite(value) else None


def _check(args: argparse.Namespace) -> int:
    from vnetbench.history.check import check, render

    if args.window < 1:
        raise VnetbenchError(f"--window must be at least 1, got {args.window}")
    result = check(args.store, args.window, args.levels)
    print(render(result, args.format))
    return result.exit_code


def _report(args: argparse.Namespace) -> None:
    from vnetbench.history.page import render_page
    from vnetbench.history.series import build_series
    from vnetbench.history.store import HistoryStore
    from vnetbench.userpaths import output_file, replace_file

    out = output_file(args.out or Path(args.store).with_suffix(".html"), "history page")
    with closing(HistoryStore.open(args.store, create=False)) as store:
        series = build_series(store.points())
    page = render_page(series, str(args.store), out)
    replace_file(out, "history page", lambda tmp: tmp.write_text(page))
    print(f"history page: {out}")


def _export(args: argparse.Namespace) -> None:
    from vnetbench.history.export import dashboard_json, openmetrics, push
    from vnetbench.history.store import HistoryStore
    from vnetbench.userpaths import replace_file

    if not (args.openmetrics or args.push or args.grafana):
        raise VnetbenchError("history export: give --openmetrics FILE, --push URL or "
                             "--grafana FILE (or several)")
    with closing(HistoryStore.open(args.store, create=False)) as store:
        points = store.points()
    for path, make in ((args.openmetrics, openmetrics), (args.grafana, dashboard_json)):
        if path is not None:
            body = make(points)
            target = replace_file(path, "export file", partial(Path.write_text, data=body))
            print(f"wrote {target}")
    if args.push:
        print(f"pushed {push(points, args.push)} point(s) of the newest run to {args.push}",
              file=sys.stderr)
