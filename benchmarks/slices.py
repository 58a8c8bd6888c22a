"""How long should an interleaved slice be? The A/A floors of each slice length, side by side.

    python3 benchmarks/slices.py [--slices 0.005,0.01,0.03,0.1,0.3] [--runs 2] [--load none]

For each slice length, runs a small interleaved comparison (1 host; host twice as the A/A
pair, bridge, nat; rr and crr, 100/200 B; each path measured for ``--seconds`` in total, so
every slice length gets the same measuring time) ``--runs`` times, alternating the order of
the lengths, optionally under a background load (``background.py``). Prints per length the
noise floors of rr and crr (p50, p99, tps), the nat/host rr p50 ratio of each run, and the
wall time. Short slices give more rounds (pairs closer in time); long ones run each path
warm for longer. Needs root.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from background import background
from pairing import floors
from repeatability import calls

METRICS = (("rr", "rtt_p50_us"), ("rr", "rtt_p99_us"), ("rr", "tps"), ("crr", "rtt_p50_us"),
           ("crr", "rtt_p99_us"), ("crr", "tps"))


def scenario(slice_s: float, seconds: float, seed: int) -> dict[str, object]:
    return {"name": f"slice-{slice_s * 1000:g}ms", "hosts": 1, "nodes": 2,
            "layers": ["host", "bridge", "nat"], "repeat": 1, "seed": seed,
            "pairing": {"slice": f"{slice_s * 1000:g}ms"},
            "workloads": [{"rr": {"duration": f"{seconds:g}s"}},
                          {"crr": {"duration": f"{seconds:g}s"}}]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slices", default="0.005,0.01,0.03,0.1,0.3")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="measured seconds per path and workload")
    parser.add_argument("--load", default="none", help="none, cpu, procs or cpu+procs")
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--analyse-only", action="store_true",
                        help="print the table of runs kept earlier in --keep (runs nothing)")
    args = parser.parse_args()
    if args.analyse_only and not args.keep:
        parser.error("--analyse-only needs --keep DIR")
    slices = [float(x) for x in args.slices.split(",")]
    work = args.keep or Path(tempfile.mkdtemp(prefix="vnb-slices-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[float, list[tuple[Path, float]]] = {s: [] for s in slices}
    for k in range(args.runs):
        for slice_s in (slices if k % 2 == 0 else slices[::-1]):
            path = work / f"s{slice_s * 1000:g}-{k}.yaml"
            out = work / f"s{slice_s * 1000:g}-{k}"
            if args.analyse_only:
                wall = float((out / "wall_s").read_text()) if (out / "wall_s").exists() else 0.0
                results[slice_s].append((out, wall))
                continue
            path.write_text(yaml.safe_dump(scenario(slice_s, args.seconds, 40 + k)))
            t0 = time.monotonic()
            with background(args.load, seconds=1800):
                proc = subprocess.run([sys.executable, "-m", "vnetbench", "run", str(path),
                                       "--out", str(out)], capture_output=True, text=True,
                                      check=False)
            if proc.returncode != 0:
                sys.exit(f"slice {slice_s}: run failed: {proc.stderr[-2000:]}")
            results[slice_s].append((out, time.monotonic() - t0))
            (out / "wall_s").write_text(f"{time.monotonic() - t0:.1f}\n")
            print(f"  slice {slice_s * 1000:g} ms run {k + 1}: {time.monotonic() - t0:.0f} s",
                  file=sys.stderr)
    print(f"\nA/A noise floor per slice length ({args.runs} runs, {args.seconds:g} s per path and "
          f"workload, load {args.load}); nat/host rr p50 per run; wall time")
    print(f"{'slice':>8}" + "".join(f"{w + ' ' + m.replace('rtt_', '').replace('_us', ''):>12}"
                                    for w, m in METRICS) + f"{'nat rr p50':>22}{'wall':>8}")
    for slice_s in slices:
        row = f"{slice_s * 1000:>6g}ms"
        fl = [floors(out) for out, _ in results[slice_s]]
        for workload, metric in METRICS:
            values = [v for f in fl for (_, w, m), v in f.items() if (w, m) == (workload, metric)]
            row += f"{max(values):>12.1%}" if values else f"{'-':>12}"
        nat = [next((v for key, v in calls(out).items()
                     if key[1:] == ("nat", "rr", "rtt_p50_us")), (float("nan"), ""))
               for out, _ in results[slice_s]]
        row += f"{' '.join(f'x{r:.3f}' for r, _ in nat):>22}"
        row += f"{statistics.median(w for _, w in results[slice_s]):>7.0f}s"
        print(row)
    print("(floors: the largest over the runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
