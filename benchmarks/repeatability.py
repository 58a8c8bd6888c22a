"""Do two runs of one scenario give the same answers? Their headline calls, side by side.

    .venv/bin/python benchmarks/repeatability.py RUN_A RUN_B

For every headline cell (configuration, layer, metric) of both runs: the ratio to native and
the call in each (``*`` called, ``?`` not resolved, blank same). Prints the cells whose calls
differ, then counts: cells called in both, called in one only, calls that flip direction
(one run starred worse, the other better: the failure this tool must never show), and cells
starred better than native on a latency p50 (a layer cannot beat no layer at all).
Exit 1 if any call flips direction.
"""

from __future__ import annotations

import sys
from pathlib import Path

from vnetbench.report.tables import HeadlineTable, headline_configs, headline_table
from vnetbench.results.derive import derive_cpu_costs
from vnetbench.results.store import load_run

Key = tuple[str, str, str, str]
MARKS = {"better": "*", "worse": "*", "not resolved": "?"}


def calls(run_dir: Path) -> dict[Key, tuple[float, str]]:
    """(config, layer, workload, metric) -> (ratio, verdict) of every headline cell."""
    run = load_run(run_dir)
    samples = [*run.samples, *derive_cpu_costs(run.samples, scenario=run.meta.recorded)]
    out: dict[Key, tuple[float, str]] = {}
    for config in headline_configs(samples):
        table: HeadlineTable | None = headline_table(samples, config=config,
                                                     histograms=run.histograms)
        if table is None:
            continue
        where = table.describe_config()
        for (layer, col), cell in table.cells.items():
            if cell.ratio is not None:
                out[(where, layer, col.workload, col.metric)] = (
                    cell.ratio.ratio.value, cell.ratio.verdict(table.factor))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = calls(Path(argv[0])), calls(Path(argv[1]))
    both = sorted(set(a) & set(b))
    differ = [k for k in both if a[k][1] != b[k][1]]
    flips = [k for k in both if {a[k][1], b[k][1]} == {"better", "worse"}]
    better_p50 = [(k, run) for run, c in (("A", a), ("B", b)) for k in both
                  if k[3].endswith("_p50_us") and c[k][1] == "better"]
    called_both = sum(1 for k in both if a[k][1] in {"better", "worse"}
                      and b[k][1] in {"better", "worse"})
    called_one = sum(1 for k in both if (a[k][1] in {"better", "worse"})
                     != (b[k][1] in {"better", "worse"}))
    print(f"{len(both)} headline cells in both runs; calls differ in {len(differ)}:")
    for k in differ:
        ra, va = a[k]
        rb, vb = b[k]
        print(f"  {k[0]:22} {k[1]:10} {k[2]:6} {k[3]:16} x{ra:.2f}{MARKS.get(va, ' ')}  "
              f"x{rb:.2f}{MARKS.get(vb, ' ')}")
    print(f"called in both: {called_both}; called in one run only: {called_one}; "
          f"flipped direction: {len(flips)}; starred better than native on a p50: "
          f"{len(better_p50)}")
    for k in flips:
        print(f"  FLIP {k}: {a[k]} vs {b[k]}")
    for k, run in better_p50:
        print(f"  run {run} starred {k[1]} better than native on {k[2]} {k[3]} at {k[0]}")
    return 1 if flips else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
