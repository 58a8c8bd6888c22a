"""Do the knees repeat? Two runs of ``scenarios/load.yaml`` set side by side.

    vnetbench run scenarios/load.yaml --out A && vnetbench run scenarios/load.yaml --out B
    python3 benchmarks/load_repeat.py A B

For every configuration and layer: each run's baseline capacity (found first), knee and
capacity, the knee's and the capacity's ratio to the baseline's with their 95 % bootstrap
intervals, and how far the two runs' knee ratios lie apart (the issue's target: within 10 %).
Then whether the userspace and wireguard knees lie well below the baseline's (a ratio under
0.5 with its interval's high end under 1). Exit 1 when a target fails.
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


def _run(path: Path) -> tuple[dict[str, dict[str, LoadCurve]], dict[str, dict[str, dict[str, LoadRatio]]],
                              dict[str, list[float]]]:
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs=2, type=Path)
    args = ap.parse_args()
    runs = [_run(p) for p in args.runs]
    failed = False
    for k, (_, _, caps) in enumerate(runs):
        for where, values in sorted(caps.items()):
            print(f"run {k + 1}: baseline capacity at {where}: {statistics.median(values):,.0f}/s "
                  f"(runs {', '.join(f'{v:,.0f}' for v in values)})")
    for config in sorted(runs[0][0]):
        print(f"\n{config}")
        print(f"  {'layer':<10} {'knee 1':>8} {'knee 2':>8}  {'knee/host 1':<22} "
              f"{'knee/host 2':<22} {'apart':>6}  {'capacity/host 1':<22} {'capacity/host 2':<22}")
        for layer in sorted(runs[0][0][config]):
            curves = [r[0].get(config, {}).get(layer) for r in runs]
            ratios = [r[1].get(config, {}).get(layer, {}) for r in runs]
            knees = [rs.get("knee") for rs in ratios]
            apart = "-"
            values = [k.ratio for k in knees if k is not None and k.ratio is not None]
            if layer != "host" and len(values) == 2:
                gap = abs(values[0] / values[1] - 1)
                apart = f"{gap:.1%}"
                failed |= gap > TARGET
            elif layer != "host":
                failed = True
                apart = "no knee"
            print(f"  {layer:<10} {_rate(curves[0].knee if curves[0] else None):>8} "
                  f"{_rate(curves[1].knee if curves[1] else None):>8}  "
                  f"{_ratio(knees[0]):<22} {_ratio(knees[1]):<22} {apart:>6}  "
                  f"{_ratio(ratios[0].get('capacity')):<22} {_ratio(ratios[1].get('capacity')):<22}")
        for layer in SLOW:
            for k, r in enumerate(runs):
                knee = r[1].get(config, {}).get(layer, {}).get("knee")
                ok = (knee is not None and knee.ratio is not None and knee.ratio < WELL_BELOW
                      and knee.high is not None and knee.high < 1)
                failed |= not ok
                print(f"  run {k + 1}: {layer}'s knee well below host's (x < {WELL_BELOW}, "
                      f"interval under 1): {'yes' if ok else 'NO'}")
    print(f"\nknee ratios within {TARGET:.0%} in both runs and the slow layers' knees well below: "
          f"{'no' if failed else 'yes'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
