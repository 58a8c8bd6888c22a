"""Do streams resolve? The stream goodput noise floor of the default comparison, run by run.

    python3 benchmarks/stream_floor.py [--runs 4] [--keep DIR]
    python3 benchmarks/stream_floor.py --analyse-only DIR...

Runs the default comparison (``vnetbench run`` with no scenario) ``--runs`` times, quiet, one
after another, then prints for every run and headline configuration the stream goodput's A/A
noise floor (the issue's target: at most 5 % in every configuration of four runs) and, round
by round, the two baseline paths' goodput and their ratio: a round far from the rest names
what widened the floor (one visit cut short, a mode of the machine) where the floor alone
cannot. ``--analyse-only`` reads kept runs. Exit 1 when a floor is above the target. Needs
root.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from pairing import floors, run_once

from vnetbench.results.model import AA_LABEL, PAIR_LABEL
from vnetbench.results.store import load_run

TARGET = 0.05
METRIC = "goodput_bps"


def rounds(run_dir: Path) -> dict[str, list[tuple[str, float, float]]]:
    """Per host count: (round, host/a goodput, host/b goodput) of the stream's rounds."""
    by: dict[tuple[str, str], dict[str, float]] = {}
    for s in load_run(run_dir).samples:
        if (s.metric != METRIC or s.labels.get("workload") != "stream"
                or s.labels.get("layer") != "host" or "interval" in s.labels):
            continue
        key = (s.labels.get("hosts", ""), s.labels.get(PAIR_LABEL, s.labels.get("repetition", "")))
        by.setdefault(key, {})[s.labels.get(AA_LABEL, "a")] = s.value
    out: dict[str, list[tuple[str, float, float]]] = {}
    for (hosts, pair), ab in sorted(by.items()):
        if {"a", "b"} <= set(ab):
            out.setdefault(hosts, []).append((pair, ab["a"], ab["b"]))
    return out


def analyse(dirs: list[Path]) -> bool:
    """Print the floors and rounds; True when a floor is above the target."""
    failed = False
    for k, run_dir in enumerate(dirs):
        mine = {config: f for (config, wl, metric), f in floors(run_dir).items()
                if wl.startswith("stream") and metric == METRIC}
        for config, floor in sorted(mine.items()):
            ok = floor <= TARGET
            failed |= not ok
            print(f"run {k + 1} ({run_dir.name}) {config}: stream goodput floor {floor:.1%} "
                  f"{'ok' if ok else 'ABOVE'} (target {TARGET:.0%})")
        for hosts, rows in rounds(run_dir).items():
            ratios = [b / a for _, a, b in rows if a > 0]
            med = statistics.median(ratios) if ratios else float("nan")
            print(f"  hosts={hosts}: {len(rows)} rounds, b/a median {med:.3f}; by round: "
                  + ", ".join(f"{a / 1e9:.1f}/{b / 1e9:.1f}G" for _, a, b in rows))
    return failed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--analyse-only", nargs="*", type=Path)
    args = ap.parse_args()
    args.load = "none"
    if args.analyse_only:
        sys.exit(1 if analyse(args.analyse_only) else 0)
    work = args.keep or Path(tempfile.mkdtemp(prefix="vnb-stream-floor-"))
    work.mkdir(parents=True, exist_ok=True)
    dirs = [run_once("paired quiet", k, args, work)[0] for k in range(args.runs)]
    sys.exit(1 if analyse(dirs) else 0)


if __name__ == "__main__":
    main()
