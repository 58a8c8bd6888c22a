"""Paired against unpaired measurement, on a quiet and on a busy machine: the default comparison.

    python3 benchmarks/pairing.py [--runs 3] [--load cpu+procs] [--keep DIR] [--analyse-only]
                                  [--settings "paired quiet,slices quiet,..."]

Runs the default comparison (``vnetbench run`` with no scenario) ``--runs`` times in each
setting: paired (the default: 100 ms slices in 10 ms pieces), unpaired (``pairing: off``) and,
when asked for, paired in whole slices (``slices``: each path one 100 ms visit a round, the
design before pieces), each quiet and with a background load that the script starts and stops
itself (``background.py``: a bounded busy loop on one CPU and a loop starting short-lived
processes). Settings alternate run by run, so slow drift of the machine falls on all of them.
Prints, side by side per setting:

* the noise floor of each headline metric (median over the runs, and the largest);
* how many headline medians flip direction between repetitions of a setting (a ratio above 1
  in one run, below in another), and how many calls reverse (starred worse, then better);
* how far the native baseline moved between repetitions (largest relative change);
* the wall time of a run.

Then, for the busy settings, the starred ratios against the same setting's quiet runs: calls
reversed, and the largest relative change of a starred ratio; for latencies and CPU per
transaction also the added time (a load that lengthens every round trip shrinks a layer's
ratio toward 1 while its added microseconds stay). Needs root.
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import yaml
from background import background
from repeatability import calls

from vnetbench.report.tables import HeadlineTable, headline_configs, headline_table
from vnetbench.results.derive import derive_cpu_costs
from vnetbench.results.store import load_run

DEFAULT = Path(__file__).resolve().parents[1] / "src" / "vnetbench" / "data" / "default.yaml"
SETTINGS = ("paired quiet", "paired busy", "unpaired quiet", "unpaired busy")
EXTRA_SETTINGS = ("slices quiet", "slices busy")
"""Asked for by name only: paired in whole slices."""
CALLED = {"better", "worse"}
ADDITIVE = {"rtt_p50_us", "rtt_p99_us", "cpu_us_per_tx"}
"""Metrics whose layer cost adds to the baseline's (compared as added time, too)."""


def scenario_for(setting: str) -> dict[str, object]:
    data = yaml.safe_load(DEFAULT.read_text())
    if setting.startswith("unpaired"):
        data["pairing"] = "off"
    if setting.startswith("slices"):
        data["pairing"] = {"piece": "10s"}  # longer than any slice: one piece, the whole slice
    return dict(data)


def run_once(setting: str, k: int, args: argparse.Namespace, work: Path) -> tuple[Path, float]:
    slug = setting.replace(" ", "-")
    path = work / f"{slug}-{k}.yaml"
    path.write_text(yaml.safe_dump(scenario_for(setting)))
    out = work / f"{slug}-{k}"
    load = args.load if setting.endswith("busy") else "none"
    t0 = time.monotonic()
    with background(load, seconds=3600):
        proc = subprocess.run([sys.executable, "-m", "vnetbench", "run", str(path), "--out",
                               str(out)], capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"{setting} run {k} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    (out / "wall_s").write_text(f"{wall:.1f}\n")
    print(f"  {setting} run {k + 1}: {wall:.0f} s", file=sys.stderr)
    return out, wall


def tables(run_dir: Path) -> Iterator[HeadlineTable]:
    """The run's headline tables, one per headline configuration."""
    run = load_run(run_dir)
    samples = [*run.samples, *derive_cpu_costs(run.samples, scenario=run.meta.recorded)]
    for config in headline_configs(samples):
        table = headline_table(samples, config=config, histograms=run.histograms)
        if table is not None:
            yield table


def floors(run_dir: Path) -> dict[tuple[str, str, str], float]:
    """(config, workload, metric) -> the run's noise floor."""
    return {(table.describe_config(), col.workload, col.metric): nf.floor
            for table in tables(run_dir) for col, nf in table.floors.items()}


def baselines(run_dir: Path) -> dict[tuple[str, str, str], float]:
    """(config, workload, metric) -> the native baseline's value in the headline."""
    return {(table.describe_config(), col.workload, col.metric): cell.median
            for table in tables(run_dir) for (_layer, col), cell in table.cells.items()
            if cell.ratio is None}


def flips(runs: list[dict[tuple[str, str, str, str], tuple[float, str]]]
          ) -> tuple[int, int, int, int]:
    """(cells, medians flipping direction between any two runs, of those the cells starred
    in some run, calls reversed)."""
    keys = set.intersection(*(set(r) for r in runs)) if runs else set()
    direction = starred = reversed_ = 0
    for key in keys:
        ratios = [r[key][0] for r in runs]
        if any((a > 1) != (b > 1) for a, b in itertools.combinations(ratios, 2)
               if not math.isnan(a) and not math.isnan(b)):
            direction += 1
            starred += any(r[key][1] in CALLED for r in runs)
        if {"better", "worse"} <= {r[key][1] for r in runs}:
            reversed_ += 1
    return len(keys), direction, starred, reversed_


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per setting")
    parser.add_argument("--load", default="cpu+procs", help="background load of the busy "
                        "settings: cpu, procs or cpu+procs")
    parser.add_argument("--settings", default=",".join(SETTINGS),
                        help="comma-separated subset of: " + ", ".join(SETTINGS + EXTRA_SETTINGS))
    parser.add_argument("--keep", type=Path, help="keep the runs under this directory")
    parser.add_argument("--analyse-only", action="store_true",
                        help="print the tables of runs kept earlier in --keep (runs nothing)")
    args = parser.parse_args()
    settings = [s.strip() for s in args.settings.split(",")]
    if any(s not in SETTINGS + EXTRA_SETTINGS for s in settings):
        parser.error(f"--settings: choose from {', '.join(SETTINGS + EXTRA_SETTINGS)}")
    if args.analyse_only and not args.keep:
        parser.error("--analyse-only needs --keep DIR")
    work = args.keep or Path(tempfile.mkdtemp(prefix="vnb-pairing-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"pairing: {args.runs} runs per setting ({', '.join(settings)}), load "
          f"{args.load!r}, in {work}", file=sys.stderr)
    runs: dict[str, list[Path]] = {s: [] for s in settings}
    walls: dict[str, list[float]] = {s: [] for s in settings}
    for k in range(args.runs):
        order = settings if k % 2 == 0 else settings[::-1]
        for setting in order:
            if args.analyse_only:
                out = work / f"{setting.replace(' ', '-')}-{k}"
                wall = float((out / "wall_s").read_text()) if (out / "wall_s").exists() else math.nan
            else:
                out, wall = run_once(setting, k, args, work)
            runs[setting].append(out)
            walls[setting].append(wall)

    cells = {s: [calls(d) for d in runs[s]] for s in settings}
    floor = {s: [floors(d) for d in runs[s]] for s in settings}
    native = {s: [baselines(d) for d in runs[s]] for s in settings}
    metrics = sorted({(w, m) for s in settings for f in floor[s] for (_, w, m) in f})
    print(f"\nnoise floor per headline metric (median over {args.runs} runs and configurations; "
          "largest in brackets)")
    print(f"{'metric':22}" + "".join(f"{s:>22}" for s in settings))
    for workload, metric in metrics:
        row = f"{workload + ' ' + metric:22}"
        for s in settings:
            values = [v for f in floor[s] for (_, w, m), v in f.items()
                      if (w, m) == (workload, metric) and not math.isnan(v)]
            text = (f"{statistics.median(values):.1%} ({max(values):.0%})" if values else "-")
            row += f"{text:>22}"
        print(row)
    print(f"\n{'per setting':22}" + "".join(f"{s:>22}" for s in settings))
    summary = {s: flips(cells[s]) for s in settings}
    for label, index in (("headline cells", 0), ("medians flipping", 1),
                         ("  of them starred", 2), ("calls reversed", 3)):
        print(f"{label:22}" + "".join(f"{summary[s][index]:>22}" for s in settings))
    moved = {}
    for s in settings:
        keys = set.intersection(*(set(n) for n in native[s])) if native[s] else set()
        worst = max((max(n[k] for n in native[s]) / min(n[k] for n in native[s]) - 1
                     for k in keys if min(n[k] for n in native[s]) > 0), default=math.nan)
        moved[s] = worst
    print(f"{'native moved (max)':22}" + "".join(f"{moved[s]:>22.1%}" for s in settings))
    print(f"{'wall time (median)':22}" + "".join(
        f"{statistics.median(walls[s]):>21.0f}s" if walls[s] else f"{'-':>22}" for s in settings))
    for design in ("paired", "slices", "unpaired"):
        quiet, busy = f"{design} quiet", f"{design} busy"
        if quiet not in settings or busy not in settings:
            continue
        reversed_ = 0
        changes: list[float] = []
        added: list[float] = []  # latencies: the added time (baseline x (ratio - 1))
        for (a, na), (b, nb) in itertools.product(
                zip(cells[quiet], native[quiet], strict=True),
                zip(cells[busy], native[busy], strict=True)):
            for key in set(a) & set(b):
                if {a[key][1], b[key][1]} == CALLED:
                    reversed_ += 1
                if a[key][1] in CALLED and b[key][1] in CALLED:
                    changes.append(abs(b[key][0] / a[key][0] - 1))
                    base = (key[0], key[2], key[3])
                    if key[3] in ADDITIVE and base in na and base in nb:
                        qa, qb = na[base] * (a[key][0] - 1), nb[base] * (b[key][0] - 1)
                        added.append(abs(qb / qa - 1) if qa else math.nan)
        within = sum(1 for c in changes if c <= 0.15)
        print(f"\n{design}: busy against quiet: {reversed_} call(s) reversed; starred in both: "
              f"{len(changes)} ratio pairs, {within} within 15% "
              f"(largest change {max(changes, default=math.nan):.0%})")
        if added:
            print(f"{design}: of them latencies and CPU per transaction, as added time: "
                  f"{sum(1 for c in added if c <= 0.15)} of {len(added)} within 15%, "
                  f"median change {statistics.median(added):.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
