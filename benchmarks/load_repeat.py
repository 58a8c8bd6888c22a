"""Do the knees repeat? Two runs of ``scenarios/load.yaml`` set side by side.

    vnetbench run scenarios/load.yaml --out A && vnetbench run scenarios/load.yaml --out B
    python3 benchmarks/load_repeat.py A B

For every configuration and layer: each run's baseline capacity (found first), knee and
capacity, the knee's and the capacity's ratio to the baseline's with their 95 % bootstrap
intervals, and how far the two runs' knee ratios lie apart (the issue's target: within 10 %).
Then whether the userspace and wireguard knees lie well below the baseline's (a ratio under
0.5 with its interval's high end under 1). All of it twice: for the knee of the p99 (the
issue's) and for the knee of the p50. Exit 1 when the targets fail for both knees.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from vnetbench.results.load import LoadCurve, LoadRatio, analyse_load, by_layer, capacities_found
from vnetbench.results.store import load_run

TARGET = 0.10
WELL_BELOW = 0.5
SLOW = ("userspace", "wireguard")


Run = tuple[dict[str, dict[str, LoadCurve]], dict[str, dict[str, dict[str, LoadRatio]]],
            dict[str, list[float]]]
"""One run's curves and ratios by configuration and layer, and its baseline capacities."""


def _run(path: Path) -> Run:
    samples = load_run(path).samples
    curves, ratios = analyse_load(samples)
    out: dict[str, dict[str, LoadCurve]] = {}
    for c in curves:
        out.setdefault(c.config, {})[c.layer] = c
    return out, {k: dict(by_layer(v)) for k, v in ratios.items()}, capacities_found(samples)


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x / 1000:.3g}k"


def _ratio(r: LoadRatio | None) -> str:
    if r is None or r.ratio is None:
        return "-"
    if r.low is None or r.high is None:
        return f"x{r.ratio:.2f}"
    return f"x{r.ratio:.2f} [{r.low:.2f}, {r.high:.2f}]"


KNEES = (("knee", "p99"), ("knee-p50", "p50"))
"""Each knee the analysis finds: the issue's (where the p99 doubles) and the p50's."""


def _knee_value(curve: LoadCurve | None, what: str) -> float | None:
    if curve is None:
        return None
    return curve.knee if what == "knee" else curve.knee_p50


def _judge(runs: list[Run], what: str, quantile: str) -> bool:
    """Print one knee's table for every configuration; True when a target fails."""
    failed = False
    for config in sorted(runs[0][0]):
        print(f"\n{config}: the knee of the {quantile}")
        print(f"  {'layer':<10} {'knee 1':>8} {'knee 2':>8}  {'knee/host 1':<22} "
              f"{'knee/host 2':<22} {'apart':>7}  {'capacity/host 1':<22} {'capacity/host 2':<22}")
        for layer in sorted(runs[0][0][config]):
            curves = [r[0].get(config, {}).get(layer) for r in runs]
            ratios = [r[1].get(config, {}).get(layer, {}) for r in runs]
            knees = [rs.get(what) for rs in ratios]
            apart = "-"
            values = [k.ratio for k in knees if k is not None and k.ratio is not None]
            if layer != "host" and len(values) == 2:
                gap = abs(values[0] / values[1] - 1)
                apart = f"{gap:.1%}"
                failed |= gap > TARGET
            elif layer != "host":
                failed = True
                apart = "no knee"
            print(f"  {layer:<10} {_rate(_knee_value(curves[0], what)):>8} "
                  f"{_rate(_knee_value(curves[1], what)):>8}  "
                  f"{_ratio(knees[0]):<22} {_ratio(knees[1]):<22} {apart:>7}  "
                  f"{_ratio(ratios[0].get('capacity')):<22} {_ratio(ratios[1].get('capacity')):<22}")
        for layer in SLOW:
            for k, r in enumerate(runs):
                knee = r[1].get(config, {}).get(layer, {}).get(what)
                ok = (knee is not None and knee.ratio is not None and knee.ratio < WELL_BELOW
                      and knee.high is not None and knee.high < 1)
                failed |= not ok
                print(f"  run {k + 1}: {layer}'s knee well below host's (x < {WELL_BELOW}, "
                      f"interval under 1): {'yes' if ok else 'NO'}")
    return failed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs=2, type=Path)
    args = ap.parse_args()
    runs = [_run(p) for p in args.runs]
    for k, (_, _, caps) in enumerate(runs):
        for where, values in sorted(caps.items()):
            print(f"run {k + 1}: baseline capacity at {where}: {statistics.median(values):,.0f}/s "
                  f"(runs {', '.join(f'{v:,.0f}' for v in values)})")
    verdicts = {quantile: not _judge(runs, what, quantile) for what, quantile in KNEES}
    for quantile, met in verdicts.items():
        print(f"\nthe {quantile}'s knee: ratios within {TARGET:.0%} in both runs and the slow "
              f"layers' knees well below: {'yes' if met else 'no'}")
    sys.exit(0 if any(verdicts.values()) else 1)


if __name__ == "__main__":
    main()
