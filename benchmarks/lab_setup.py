#!/usr/bin/env python3
"""Lab build+teardown speed: vnetbench vs Mininet 2.3, same star, same run.

For each size, times the whole ``vnetbench run`` of a scenario with no workloads (one host,
N nodes on the ``bridge`` layer: N namespaces with a veth each into one Linux bridge), and
Mininet building the same star (SingleSwitchTopo, ``mininet.nodelib.LinuxBridge`` switch, no
controller) and stopping it. Both sides are timed the same way, as whole commands from
process start to exit (interpreter start and imports included); Mininet's in-process
build+stop time is printed beside it. Interleaved, repeated; prints medians and the ratio.
Targets (2-core machine): 128 nodes up and down in < 3 s; >= 5x faster than Mininet at 64.
Run as root: ``python3 benchmarks/lab_setup.py [--sizes 8,32,64,128] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MININET = """
import sys, time
from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.nodelib import LinuxBridge
from mininet.topo import SingleSwitchTopo
setLogLevel("error")
n = int(sys.argv[1])
t = time.monotonic()
net = Mininet(topo=SingleSwitchTopo(k=n), switch=LinuxBridge, controller=None)
net.start()
net.stop()
print(time.monotonic() - t)
"""
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's mininet package installs for this one


def time_vnetbench(nodes: int, workdir: Path) -> float:
    scenario = workdir / f"build-{nodes}.yaml"
    scenario.write_text(f"name: build{nodes}\nhosts: 1\nnodes: {nodes}\nlayers: [bridge]\n")
    out = workdir / f"out-{nodes}-{time.monotonic_ns()}"
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "vnetbench", "run", str(scenario), "--out", str(out),
                    "--no-collect"], check=True, capture_output=True)
    return time.monotonic() - start


def time_mininet(nodes: int) -> tuple[float, float] | None:
    """(whole command, in-process build+stop) seconds, or None if Mininet failed."""
    start = time.monotonic()
    proc = subprocess.run([SYSTEM_PYTHON, "-c", MININET, str(nodes)], capture_output=True,
                          text=True, check=False)
    whole = time.monotonic() - start
    if proc.returncode != 0:
        print(f"  mininet failed at {nodes}: {proc.stderr.strip()[-300:]}", file=sys.stderr)
        subprocess.run(["mn", "-c"], capture_output=True, check=False)
        return None
    return whole, float(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,32,64,128")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    ours: dict[int, list[float]] = {n: [] for n in sizes}
    theirs: dict[int, list[float]] = {n: [] for n in sizes}
    theirs_inner: dict[int, list[float]] = {n: [] for n in sizes}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for n in sizes:  # interleaved: drift hits both tools alike
                ours[n].append(time_vnetbench(n, Path(tmp)))
                mn = time_mininet(n)
                if mn is not None:
                    theirs[n].append(mn[0])
                    theirs_inner[n].append(mn[1])
    print(f"{'nodes':>6} {'vnetbench s':>12} {'mininet s':>10} {'(in-process)':>13} "
          f"{'ratio':>7}  target")
    ok = True
    for n in sizes:
        a = statistics.median(ours[n])
        b = statistics.median(theirs[n]) if theirs[n] else float("nan")
        ratio = b / a if theirs[n] else float("nan")
        target = ""
        if n == 128:
            target = f"< 3 s: {'PASS' if a < 3 else 'FAIL'}"
            ok &= a < 3
        if n == 64:
            target = f">= 5x: {'PASS' if ratio >= 5 else 'FAIL'}"
            ok &= ratio >= 5
        inner = statistics.median(theirs_inner[n]) if theirs_inner[n] else float("nan")
        print(f"{n:>6} {a:>12.2f} {b:>10.2f} {inner:>13.2f} {ratio:>6.1f}x  {target}")
    print("Whole commands on both sides: `vnetbench run` (start, checks, build, teardown, "
          "results) vs `python3 -c <mininet build+stop>`; ratio = mininet / vnetbench.")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
