"""Does a run's answer repeat? host vs bridge, with the platform controls on and off.

    .venv/bin/python benchmarks/stability.py [--runs 4] [--repeat 3] [--hosts 1]

Runs the same small scenario (layers host and bridge; rr 100/200 B, crr, stream; the host
as A/A groups) ``--runs`` times with the platform controls on (idle states held off, CPU
placement cross, quiet-machine check: the defaults) and as many times with them off,
alternating so drift of the machine hits both alike. Each run is a whole
``vnetbench run``. Prints, per headline metric and setting:

* the median, standard deviation and CV of the per-trial values of host and of bridge over
  all runs of that setting (the SD in the metric's own unit: the controls lower the baseline
  itself, so a CV alone can rise while the spread in microseconds falls);
* the bridge/host ratio of every run, with its mark (``*`` called, ``?`` not resolved);
* how often the direction of the ratio (above or below 1) changes from run to run, and how
  many pairs of runs made opposite calls (one starred better, another starred worse).

Then the ratio off/on of each SD (how much the controls steady the numbers). Needs root.
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
from collections.abc import Sequence
from pathlib import Path

import yaml

from vnetbench.report.tables import HeadlineTable, headline_table
from vnetbench.results.stats import coefficient_of_variation, median
from vnetbench.results.store import load_run

METRICS = (("rr", "rtt_p50_us"), ("rr", "rtt_p99_us"), ("rr", "tps"), ("crr", "rtt_p50_us"),
           ("crr", "tps"), ("stream", "goodput_bps"))
OFF = {"placement": "off", "idle_states": False, "governor": False, "quiet": None}
SETTINGS = ("on", "off")


def scenario(setting: str, repeat: int, hosts: int, seed: int) -> dict[str, object]:
    return {
        "name": f"stability-{setting}", "hosts": hosts, "nodes": 2,
        "layers": ["host", "bridge"], "repeat": repeat, "seed": seed,
        "workloads": [{"rr": {"duration": "1s"}}, {"crr": {"duration": "500ms"}},
                      {"stream": {"duration": "1s", "interval": "250ms"}}],
        **({"platform": OFF} if setting == "off" else {}),
    }


def run_once(setting: str, k: int, args: argparse.Namespace, work: Path) -> Path:
    path = work / f"{setting}-{k}.yaml"
    path.write_text(yaml.safe_dump(scenario(setting, args.repeat, args.hosts, seed=100 + k)))
    out = work / f"{setting}-{k}"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "vnetbench", "run", str(path), "--out", str(out)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"run {setting} {k} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    print(f"  {setting} run {k + 1}: {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return out


def trial_values(run_dir: Path, layer: str, workload: str, metric: str) -> list[float]:
    return [s.value for s in load_run(run_dir).samples
            if s.metric == metric and not s.is_evidence and s.labels.get("layer") == layer
            and s.labels.get("workload") == workload]


def table_of(run_dir: Path) -> HeadlineTable:
    run = load_run(run_dir)
    table = headline_table(run.samples, histograms=run.histograms)
    if table is None:
        sys.exit(f"{run_dir}: no headline table")
    return table


def cell(table: HeadlineTable, workload: str, metric: str) -> tuple[float, str]:
    """(bridge/host ratio, verdict) of one column."""
    for (layer, col), c in table.cells.items():
        if layer == "bridge" and col.workload == workload and col.metric == metric and c.ratio:
            return c.ratio.ratio.value, c.ratio.verdict(table.factor)
    return math.nan, "unknown"


def sd(values: Sequence[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else math.nan


def short(value: float, metric: str) -> str:
    """``13.2us``, ``21.4G``, ``45.1k``: compact, in the metric's unit."""
    if math.isnan(value):
        return "-"
    if metric.endswith("_us"):
        return f"{value:.1f}us"
    if metric.endswith("_bps"):
        return f"{value / 1e9:.1f}G"
    return f"{value / 1e3:.1f}k"


def direction_changes(ratios: Sequence[float]) -> int:
    signs = [r > 1.0 for r in ratios if not math.isnan(r)]
    return sum(1 for a, b in itertools.pairwise(signs) if a != b)


def opposite_calls(verdicts: Sequence[str]) -> int:
    better, worse = verdicts.count("better"), verdicts.count("worse")
    return better * worse


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="runs per setting")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per run")
    parser.add_argument("--hosts", type=int, default=1, choices=(1, 2))
    parser.add_argument("--keep", type=Path, help="keep the runs under this directory")
    parser.add_argument("--analyse-only", action="store_true",
                        help="print the tables of runs kept earlier in --keep (runs nothing)")
    args = parser.parse_args()
    if args.analyse_only and not args.keep:
        parser.error("--analyse-only needs --keep DIR")
    work = args.keep or Path(tempfile.mkdtemp(prefix="vnb-stability-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"stability: {args.runs} runs per setting, repeat {args.repeat}, {args.hosts} host(s), "
          f"in {work}", file=sys.stderr)
    runs: dict[str, list[Path]] = {s: [] for s in SETTINGS}
    for k in range(args.runs):
        for setting in (SETTINGS if k % 2 == 0 else SETTINGS[::-1]):
            kept = work / f"{setting}-{k}"
            runs[setting].append(kept if args.analyse_only else run_once(setting, k, args, work))
    tables = {s: [table_of(d) for d in runs[s]] for s in SETTINGS}
    print(f"\n{args.runs} runs per setting, {args.repeat} repetitions each, host and bridge at "
          f"{args.hosts} host(s); CV over every trial of the setting; bridge/host ratio per run "
          "(* called, ? not resolved); 'flips' = direction changes between consecutive runs, "
          "'opposite' = pairs of runs with opposite starred calls")
    header = (f"{'metric':18} {'set':4} {'host':>9} {'SD':>7} {'CV':>6} {'bridge':>9} {'SD':>7} "
              f"{'CV':>6}  {'bridge/host per run':34} {'flips':>5} {'opposite':>8}")
    print(header)
    sds: dict[tuple[str, str, str], float] = {}
    for workload, metric in METRICS:
        for setting in SETTINGS:
            host = [v for d in runs[setting] for v in trial_values(d, "host", workload, metric)]
            bridge = [v for d in runs[setting] for v in trial_values(d, "bridge", workload, metric)]
            sds[(workload, metric, setting)] = sd(host)
            cells = [cell(t, workload, metric) for t in tables[setting]]
            marks = {"better": "*", "worse": "*", "not resolved": "?"}
            shown = " ".join(f"x{r:.2f}{marks.get(v, '')}" for r, v in cells)
            print(f"{workload + ' ' + metric:18} {setting:4} {short(median(host), metric):>9} "
                  f"{short(sd(host), metric):>7} {coefficient_of_variation(host):6.1%} "
                  f"{short(median(bridge), metric):>9} {short(sd(bridge), metric):>7} "
                  f"{coefficient_of_variation(bridge):6.1%}  {shown:34} "
                  f"{direction_changes([r for r, _ in cells]):5d} "
                  f"{opposite_calls([v for _, v in cells]):8d}")
    print("\nSD of the host's trials, controls off / on (above 1: the controls steady it):")
    for workload, metric in METRICS:
        on, off = sds[(workload, metric, "on")], sds[(workload, metric, "off")]
        ratio = off / on if on > 0 else math.nan
        print(f"  {workload + ' ' + metric:18} {ratio:5.2f}x  ({short(off, metric)} -> "
              f"{short(on, metric)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
