#!/usr/bin/env python3
"""Lab build+teardown speed: vnetbench vs Mininet 2.3 from 8 to 1024 nodes, and 1024 nodes on
8 emulated hosts on every layer, with and without per-node ``resources``; one run.

Part 1 (the star): for each size, the whole ``vnetbench run`` of a scenario with no workloads
(one host, N nodes on ``bridge``: N namespaces with a veth each into one Linux bridge) against
Mininet building the same star (LinearTopo with one switch, ``mininet.nodelib.LinuxBridge``,
no controller) and stopping it. A Linux bridge takes at most 1023 ports, so past 1000 nodes
both sides use k = ceil(N / 1000) bridges: vnetbench k emulated hosts, Mininet
``LinearTopo(k, N / k)`` (k switches in a line). Both are timed as whole commands from process start to exit
(interpreter start and imports included); Mininet's in-process build+stop time is printed
beside it. Mininet gets ``--mininet-limit`` seconds per size (killed and cleaned up with
``mn -c`` past it); once it misses the limit it is not tried at larger sizes, and the ratio
is then a lower bound (``>``). Interleaved, repeated (stars up to 64 nodes, the quickest
and so the noisiest relative to their length, at least ``--small-repeat`` times); medians,
and each run's ratio to the Mininet run right after it (the pairs' range, and at 64 nodes
how many pairs meet the target: a median that passes while pairs fail is a close call).

Part 2 (every layer): the whole ``vnetbench run`` of 1024 nodes on 8 emulated hosts on each
namespace layer this kernel supports, plain and with ``resources: {cpus: 0.5, memory: 64M}``
(a cgroup per node with a CPU quota and a memory limit).

Between two commands the benchmark waits (at most ``--settle`` s) until the kernel has
finished freeing the previous lab's namespaces (it does so in the background after the
command exits) so each command starts from a quiet kernel; other load on the machine shows
in the figures, so run it twice and compare.

Targets (2-core machine): 64 nodes >= 10x Mininet; 1024 nodes on 8 hosts up and down in
< 5 s on ``bridge`` and < 10 s on every other layer (with or without resources).
Run as root: ``.venv/bin/python benchmarks/lab_setup.py [--sizes 8,64,256,1024] [--repeat 3]``.
Mininet: ``apt-get install mininet`` (Debian's package; not needed by vnetbench itself).
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import shutil
import signal
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
from mininet.topo import LinearTopo
setLogLevel("error")
n, switches = int(sys.argv[1]), int(sys.argv[2])
t = time.monotonic()
net = Mininet(topo=LinearTopo(k=switches, n=n // switches), switch=LinuxBridge, controller=None)
net.start()
net.stop()
print(time.monotonic() - t)
"""
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's mininet package installs for this one
LAYERS = ("host", "bridge", "nat", "macvlan", "ipvlan", "routed", "vxlan", "wireguard",
          "userspace")
RESOURCES = "resources: {cpus: 0.5, memory: 64M}\n"
STAR_TARGET_NODES, STAR_TARGET_RATIO = 64, 10.0
SMALL_STAR = 64
LAYER_HOSTS, LAYER_NODES = 8, 1024


def settle(limit: float) -> None:
    """Wait until the kernel's background work (freeing a lab's namespaces) has calmed down:
    system CPU time under a tenth of a core over half a second, at most ``limit`` s."""
    deadline = time.monotonic() + limit
    hz = os.sysconf("SC_CLK_TCK")
    while time.monotonic() < deadline:
        before = _system_jiffies()
        time.sleep(0.5)
        if (_system_jiffies() - before) / hz < 0.05:
            return


def _system_jiffies() -> int:
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[3]) + int(fields[6]) + int(fields[7])  # system, irq, softirq


def time_vnetbench(scenario: str, workdir: Path, name: str) -> float:
    path = workdir / f"{name}.yaml"
    path.write_text(f"name: {name}\n{scenario}")
    out = workdir / f"out-{name}-{time.monotonic_ns()}"
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "vnetbench", "run", str(path), "--out", str(out),
                           "--no-collect"], capture_output=True, text=True, check=False)
    took = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"vnetbench failed on {name}: {proc.stderr.strip()[-400:]}")
    shutil.rmtree(out, ignore_errors=True)
    return took


def bridges_for(nodes: int) -> int:
    """Bridges (vnetbench hosts, Mininet switches) a star of ``nodes`` is split over."""
    return -(-nodes // 1000)


def time_mininet(nodes: int, limit: float) -> tuple[float, float] | None:
    """(whole command, in-process build+stop) seconds; None past ``limit`` or on failure."""
    start = time.monotonic()
    proc = subprocess.Popen([SYSTEM_PYTHON, "-c", MININET, str(nodes), str(bridges_for(nodes))],
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        print(f"  mininet: {nodes} nodes not done after {limit:.0f} s; stopped, `mn -c`",
              file=sys.stderr)
        subprocess.run(["mn", "-c"], capture_output=True, check=False)
        return None
    whole = time.monotonic() - start
    if proc.returncode != 0:
        print(f"  mininet failed at {nodes}: {err.strip()[-300:]}", file=sys.stderr)
        subprocess.run(["mn", "-c"], capture_output=True, check=False)
        return None
    return whole, float(out.strip().splitlines()[-1])


def compile_package() -> None:
    """Byte-compile vnetbench as ``pip install`` does (and Debian does for Mininet), so a
    checkout run with PYTHONDONTWRITEBYTECODE does not compile its sources on every start."""
    spec = importlib.util.find_spec("vnetbench")
    if spec is not None and spec.origin:
        compileall.compile_dir(str(Path(spec.origin).parent), quiet=1)


def supported_layers() -> list[str]:
    from vnetbench.backends.catalog import LAYERS as KNOWN
    from vnetbench.host.features import kernel_features

    features = kernel_features()
    return [n for n in LAYERS if all(features.get(f) for f in KNOWN[n].requires)]


def repeats_for(nodes: int, repeat: int, small_repeat: int) -> int:
    """Repetitions at a size: small stars (quick, and the noisiest relative to their length)
    get at least ``small_repeat``."""
    return max(repeat, small_repeat) if nodes <= SMALL_STAR else repeat


def star(sizes: list[int], repeat: int, small_repeat: int, limit: float, settle_s: float,
         tmp: Path) -> bool:
    have_mininet = Path(SYSTEM_PYTHON).exists() and subprocess.run(
        [SYSTEM_PYTHON, "-c", "import mininet.net"], capture_output=True).returncode == 0
    if not have_mininet:
        print("Mininet is not installed (apt-get install mininet): vnetbench alone")
    ours: dict[int, list[float]] = {n: [] for n in sizes}
    theirs: dict[int, list[tuple[float, float]]] = {n: [] for n in sizes}
    pairs: dict[int, list[float]] = {n: [] for n in sizes}  # mininet / vnetbench, run by run
    over: set[int] = set()  # sizes at which Mininet missed the limit
    for k in range(max(repeats_for(n, repeat, small_repeat) for n in sizes)):
        for n in sizes:  # interleaved: drift hits both tools alike
            if k >= repeats_for(n, repeat, small_repeat):
                continue
            ours[n].append(time_vnetbench(
                f"hosts: {bridges_for(n)}\nnodes: {n}\nlayers: [bridge]\n", tmp, f"star{n}"))
            settle(settle_s)
            if not have_mininet or any(m <= n for m in over):
                continue
            got = time_mininet(n, limit)
            if got is None:
                over.add(n)
            else:
                theirs[n].append(got)
                pairs[n].append(got[0] / ours[n][-1])
            settle(settle_s)
    print("\nStar: N nodes into one bridge (ceil(N / 1000) past 1000: a bridge takes 1023 "
          f"ports); whole commands, median of {repeat} ({small_repeat} up to {SMALL_STAR} "
          "nodes), (range)")
    print(f"{'nodes':>6} {'vnetbench s':>12} {'(range)':>13} {'mininet s':>10} "
          f"{'(in-process)':>13} {'ratio':>8} {'(pairs)':>13}  target")
    ok = True
    for n in sizes:
        a = statistics.median(ours[n])
        each = f"{'':>13}"
        if theirs[n] and n not in over:
            b = statistics.median(w for w, _ in theirs[n])
            inner = f"{statistics.median(i for _, i in theirs[n]):>13.2f}"
            mn, ratio = f"{b:>10.2f}", f"{b / a:>7.1f}x"
            value = b / a
            each = f"({min(pairs[n]):.1f}-{max(pairs[n]):.1f}x)".rjust(13)
        elif n in over or any(m <= n for m in over):
            mn, inner, ratio = f"{'>' + format(limit, '.0f'):>10}", f"{'':>13}", \
                f"{'>' + format(limit / a, '.0f'):>7}x"
            value = limit / a
        else:
            mn, inner, ratio, value = f"{'-':>10}", f"{'':>13}", f"{'-':>8}", float("nan")
        target = ""
        if n == STAR_TARGET_NODES:
            passed = value >= STAR_TARGET_RATIO
            held = sum(r >= STAR_TARGET_RATIO for r in pairs[n])
            target = (f">= {STAR_TARGET_RATIO:.0f}x: {'PASS' if passed else 'FAIL'} "
                      f"({held} of {len(pairs[n])} pairs)")
            ok &= passed
        spread = f"({min(ours[n]):.2f}-{max(ours[n]):.2f})"
        print(f"{n:>6} {a:>12.2f} {spread:>13} {mn} {inner} {ratio} {each}  {target}")
    print("ratio = mininet / vnetbench (medians); pairs = each vnetbench run against the "
          "Mininet run right after it; `vnetbench run` includes start, checks, build, "
          "teardown, results; mininet `python3 -c <build+stop>`.")
    return ok


def layers(repeat: int, settle_s: float, tmp: Path) -> bool:
    names = supported_layers()
    rows: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in names}
    base = f"hosts: {LAYER_HOSTS}\nnodes: {LAYER_NODES}\n"
    for _ in range(repeat):
        for layer in names:
            for k, extra in enumerate(("", RESOURCES)):
                rows[layer][k].append(time_vnetbench(f"{base}layers: [{layer}]\n{extra}", tmp,
                                                     f"{layer}{'-res' if k else ''}"))
                settle(settle_s)
    print(f"\n{LAYER_NODES} nodes on {LAYER_HOSTS} emulated hosts, whole `vnetbench run` up and "
          f"down, median of {repeat} (range)")
    print(f"{'layer':>10} {'plain s':>18} {'resources s':>18}  target")
    ok = True
    for layer in names:
        limit = 5.0 if layer == "bridge" else 10.0
        cells = []
        for values in rows[layer]:
            m = statistics.median(values)
            cells.append(f"{m:>6.2f} ({min(values):.2f}-{max(values):.2f})")
            ok &= m < limit
        passed = all(statistics.median(v) < limit for v in rows[layer])
        print(f"{layer:>10} {cells[0]:>18} {cells[1]:>18}  < {limit:.0f} s: "
              f"{'PASS' if passed else 'FAIL'}")
    print(f"resources = {RESOURCES.strip()} (a cgroup per node with a quota and a limit)")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,64,256,1024")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--small-repeat", type=int, default=7,
                        help=f"repetitions of stars up to {SMALL_STAR} nodes (default 7)")
    parser.add_argument("--layer-repeat", type=int, default=2)
    parser.add_argument("--mininet-limit", type=float, default=120.0,
                        help="seconds Mininet gets per size (default 120)")
    parser.add_argument("--settle", type=float, default=30.0,
                        help="at most this long to wait for the kernel between commands")
    parser.add_argument("--skip-layers", action="store_true", help="part 1 only")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("run as root: the labs are real namespaces", file=sys.stderr)
        return 2
    sizes = [int(s) for s in args.sizes.split(",")]
    compile_package()
    with tempfile.TemporaryDirectory() as tmp:
        ok = star(sizes, args.repeat, args.small_repeat, args.mininet_limit, args.settle,
                  Path(tmp))
        if not args.skip_layers:
            ok &= layers(args.layer_repeat, args.settle, Path(tmp))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
