"""Fidelity benchmark of vnetbench-probe against reference tools, on loopback and a bridge.

In one run, interleaved, N repetitions each (default 5), per path:
  * probe ``rr`` (TCP, 100/200 B, mean RTT of each run) vs ``sockperf ping-pong`` and ``qperf tcp_lat``
    (both report one-way latency = RTT/2; converted to RTT here; they echo 100 B both ways,
    which if anything favours them). Targets: the probe's mean RTT
    is at most 1.05x the lowest of the tools' mean RTTs, and its coefficient of variation over
    the repetitions is under 5%. Ratios compare the medians over repetitions (means printed).
  * probe ``stream`` (TCP, 1 stream) vs ``iperf3 -J``. Target: probe goodput >= 0.95x iperf3's.
Paths: loopback (host namespace, 127.0.0.1) and a Linux bridge between two namespaces
(``vnetbench.backends.lab.open_lab(layer="bridge", hosts=1, nodes=2)`` when importable, else namespaces
named ``vnbp*`` made here with ``ip`` and deleted in a ``finally``). Needs root for the bridge.

CPU placement is the same for every tool (``taskset``): servers on CPU 0, latency clients on
CPU 0 too (on a VM an idle vCPU's wake-up costs tens of microseconds and, unpinned, comes and
goes with the scheduler's placement, swamping the differences between tools), bulk clients on
CPU 1. ``--no-pin`` leaves placement to the scheduler. CPU idle states are held off for the
whole benchmark (``/dev/cpu_dma_latency`` = 0, as ``vnetbench run`` does; ``--idle-states``
lets them be). Every stream tool runs with Nagle on (their default; the probe's too).

Usage: python benchmarks/probe_fidelity.py [--reps 5] [--duration 8] [--paths loopback,bridge]
Prints a table of figures and ratios and PASS/FAIL per target; exits 1 if a target fails.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from vnetbench.host.binaries import find_binary
from vnetbench.run.platform import IdleStateHold
from vnetbench.workloads.probe.parse import parse_output

SERVER_CPU: int | None = 0
RR_CLIENT_CPU: int | None = 0
BULK_CLIENT_CPU: int | None = 1 if (os.cpu_count() or 1) > 1 else 0

BUSY_LOAD = 3.0
"""1-minute load average above which the run is flagged as disturbed (it adds ~2 itself)."""

PROBE_PORT = 17300
SOCKPERF_PORT = 17301
QPERF_PORT = 17302
IPERF_PORT = 17303


class Side(Protocol):
    """Where a program runs: the host, a lab node or a namespace made here."""

    def run(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]: ...

    def spawn(self, argv: Sequence[str]) -> subprocess.Popen[bytes]: ...

    def stop(self, proc: subprocess.Popen[bytes]) -> None: ...


class Local:
    """Runs programs in the current namespace (optionally through ``ip netns exec``)."""

    def __init__(self, netns: str | None = None) -> None:
        self.prefix = ["ip", "netns", "exec", netns] if netns else []

    def run(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix, *argv], capture_output=True, text=True,
                              timeout=timeout, check=False)

    def spawn(self, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen([*self.prefix, *argv], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class LabSide:
    """A node of a vnetbench lab."""

    def __init__(self, lab: Any, node: Any) -> None:
        self.lab, self.node = lab, node

    def run(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        result: subprocess.CompletedProcess[str] = self.node.run(list(argv), timeout=timeout,
                                                                  check=False)
        return result

    def spawn(self, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        proc: subprocess.Popen[bytes] = self.node.spawn(list(argv))
        return proc

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        self.lab.stop(proc)


@dataclass
class PathSetup:
    name: str
    server: Side
    client: Side
    server_ip: str


@contextlib.contextmanager
def loopback() -> Iterator[PathSetup]:
    side = Local()
    yield PathSetup("loopback", side, side, "127.0.0.1")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextlib.contextmanager
def manual_bridge() -> Iterator[PathSetup]:
    """Two namespaces on a bridge in a third, all named vnbp*, deleted afterwards."""
    spaces = ["vnbpfbr", "vnbpfa", "vnbpfb"]
    try:
        for ns in spaces:
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", "vnbpfbr", "link", "add", "vnbpbr0", "type", "bridge")
        _ip("-n", "vnbpfbr", "link", "set", "vnbpbr0", "up")
        for ns, addr in (("vnbpfa", "10.251.77.1/24"), ("vnbpfb", "10.251.77.2/24")):
            _ip("link", "add", f"{ns}0", "type", "veth", "peer", "name", f"{ns}1")
            _ip("link", "set", f"{ns}0", "netns", ns)
            _ip("link", "set", f"{ns}1", "netns", "vnbpfbr")
            _ip("-n", "vnbpfbr", "link", "set", f"{ns}1", "master", "vnbpbr0", "up")
            _ip("-n", ns, "addr", "add", addr, "dev", f"{ns}0")
            _ip("-n", ns, "link", "set", f"{ns}0", "up")
        yield PathSetup("bridge(ip)", Local("vnbpfa"), Local("vnbpfb"), "10.251.77.1")
    finally:
        for ns in spaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


@contextlib.contextmanager
def bridge() -> Iterator[PathSetup]:
    try:
        from vnetbench.backends.lab import open_lab
        from vnetbench.lab.spec import LabSpec
    except ImportError:
        with manual_bridge() as setup:
            yield setup
        return
    with open_lab(LabSpec(layer="bridge", hosts=1, nodes=2)) as lab:
        server, client = lab.nodes[0], lab.nodes[1]
        yield PathSetup("bridge(lab)", LabSide(lab, server), LabSide(lab, client), server.ip)


# ------------------------------------------------------------------------------- measurements

def pin(cpu: int | None, argv: Sequence[str]) -> list[str]:
    """``argv`` run on one CPU (taskset), or as is."""
    return ["taskset", "-c", str(cpu), *argv] if cpu is not None else list(argv)


def _check(result: subprocess.CompletedProcess[str], what: str) -> str:
    if result.returncode != 0:
        raise RuntimeError(f"{what} exited {result.returncode}: "
                           f"{(result.stderr or result.stdout).strip()[-300:]}")
    return result.stdout


def probe_rr(p: PathSetup, probe: str, duration: float) -> float:
    out = _check(p.client.run(pin(RR_CLIENT_CPU, [probe, "rr", "--server", f"{p.server_ip}:{PROBE_PORT}",
                               "--protocol", "tcp", "--request", "100", "--response", "200",
                               "--duration", str(duration), "--warmup", "0.5"]),
                              timeout=duration + 30), "probe rr")
    return parse_output(out, "rr").rtt.mean


def sockperf_rtt(p: PathSetup, duration: float) -> float:
    out = _check(p.client.run(pin(RR_CLIENT_CPU, ["sockperf", "ping-pong", "--tcp", "-i", p.server_ip,
                               "-p", str(SOCKPERF_PORT), "-m", "100", "-t", str(int(duration)),
                               "--mps", "max"]), timeout=duration + 30), "sockperf")
    match = re.search(r"avg-latency=([0-9.]+)", out)
    if not match:
        raise RuntimeError(f"sockperf output without avg-latency: {out[-300:]}")
    return 2.0 * float(match.group(1))  # one-way -> RTT


def qperf_rtt(p: PathSetup, duration: float) -> float:
    out = _check(p.client.run(pin(RR_CLIENT_CPU, ["qperf", "-lp", str(QPERF_PORT), p.server_ip,
                                                  "-m", "100", "-t", str(int(duration)),
                                                  "tcp_lat"]), timeout=duration + 30),
                 "qperf")
    match = re.search(r"latency\s*=\s*([0-9.]+)\s*(ns|us|ms|sec)", out)
    if not match:
        raise RuntimeError(f"qperf output without latency: {out[-300:]}")
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "sec": 1e6}[match.group(2)]
    return 2.0 * float(match.group(1)) * scale  # one-way -> RTT


def probe_stream(p: PathSetup, probe: str, duration: float) -> float:
    out = _check(p.client.run(pin(BULK_CLIENT_CPU, [probe, "stream", "--server", f"{p.server_ip}:{PROBE_PORT}",
                               "--protocol", "tcp", "--streams", "1",
                               "--duration", str(duration)]), timeout=duration + 30),
                 "probe stream")
    return parse_output(out, "stream").number("goodput_bps")


def iperf3_goodput(p: PathSetup, duration: float) -> float:
    out = _check(p.client.run(pin(BULK_CLIENT_CPU, ["iperf3", "-c", p.server_ip,
                                                    "-p", str(IPERF_PORT),
                                                    "-t", str(int(duration)), "-J"]), timeout=duration + 30),
                 "iperf3")
    data = json.loads(out)
    return float(data["end"]["sum_received"]["bits_per_second"])


@dataclass
class Figures:
    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, key: str, value: float) -> None:
        self.values.setdefault(key, []).append(value)

    def mean(self, key: str) -> float:
        return statistics.fmean(self.values[key])

    def median(self, key: str) -> float:
        return statistics.median(self.values[key])

    def cv(self, key: str) -> float:
        vals = self.values[key]
        return statistics.stdev(vals) / statistics.fmean(vals) if len(vals) > 1 else 0.0


def _wait_port(side: Side, port: int, proto: str = "tcp", timeout: float = 10.0) -> None:
    flag = "-ltnH" if proto == "tcp" else "-lunH"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = side.run(["ss", flag, f"sport = :{port}"], timeout=5).stdout
        if out.strip():
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {proto} port {port}")


def measure(p: PathSetup, probe: str, reps: int, duration: float) -> Figures:
    servers = [
        p.server.spawn(pin(SERVER_CPU, [probe, "serve", "--bind", "0.0.0.0",
                                        "--port", str(PROBE_PORT)])),
        p.server.spawn(pin(SERVER_CPU, ["sockperf", "server", "--tcp", "-i", p.server_ip,
                                        "-p", str(SOCKPERF_PORT)])),
        p.server.spawn(pin(SERVER_CPU, ["qperf", "-lp", str(QPERF_PORT)])),
        p.server.spawn(pin(SERVER_CPU, ["iperf3", "-s", "-p", str(IPERF_PORT)])),
    ]
    figures = Figures()
    try:
        for port in (PROBE_PORT, SOCKPERF_PORT, QPERF_PORT, IPERF_PORT):
            _wait_port(p.server, port)
        for rep in range(reps):
            figures.add("probe_rtt_us", probe_rr(p, probe, duration))
            figures.add("sockperf_rtt_us", sockperf_rtt(p, duration))
            figures.add("qperf_rtt_us", qperf_rtt(p, duration))
            figures.add("probe_goodput_bps", probe_stream(p, probe, duration))
            figures.add("iperf3_goodput_bps", iperf3_goodput(p, duration))
            print(f"  [{p.name}] rep {rep + 1}/{reps}: "
                  + ", ".join(f"{k}={v[-1]:.6g}" for k, v in figures.values.items()),
                  flush=True)
    finally:
        for proc in servers:
            p.server.stop(proc)
    return figures


def report(name: str, f: Figures) -> list[tuple[str, bool]]:
    """Print the table and check the targets. As the target is written, the RTT check
    compares the probe's mean RTT (mean over repetitions of each run's mean) with the lowest
    tool's; medians over repetitions are printed beside the means for a noisy machine."""
    best_tool = min(f.median("sockperf_rtt_us"), f.median("qperf_rtt_us"))
    rtt_ratio = f.median("probe_rtt_us") / best_tool
    rtt_ratio_mean = f.mean("probe_rtt_us") / min(f.mean("sockperf_rtt_us"),
                                                  f.mean("qperf_rtt_us"))
    cv = f.cv("probe_rtt_us")
    gp_ratio = f.median("probe_goodput_bps") / f.median("iperf3_goodput_bps")
    gp_ratio_mean = f.mean("probe_goodput_bps") / f.mean("iperf3_goodput_bps")
    print(f"\n== {name}")
    print(f"{'figure':<22}{'median':>10}{'mean':>10}{'cv':>9}   per repetition")
    for key, vals in f.values.items():
        scale = 1e9 if key.endswith("_bps") else 1.0
        shown = key.replace("_bps", "_gbps") if scale > 1 else key
        reps = " ".join(f"{v / scale:.3f}" for v in vals)
        print(f"{shown:<22}{f.median(key) / scale:>10.3f}{f.mean(key) / scale:>10.3f}"
              f"{f.cv(key) * 100:>8.2f}%   {reps}")
    checks = [
        (f"{name}: probe mean RTT / lowest tool's = {rtt_ratio_mean:.3f} "
         f"({rtt_ratio:.3f} by medians) (<= 1.05)", rtt_ratio_mean <= 1.05),
        (f"{name}: probe RTT CV over repetitions = {cv * 100:.2f}% (< 5%)", cv < 0.05),
        (f"{name}: probe goodput / iperf3 = {gp_ratio:.3f} median "
         f"({gp_ratio_mean:.3f} mean) (>= 0.95)", gp_ratio >= 0.95),
    ]
    for text, ok in checks:
        print(f"  {'PASS' if ok else 'FAIL'}  {text}")
    return checks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--duration", type=float, default=8.0, help="seconds per measurement")
    parser.add_argument("--paths", default="loopback,bridge")
    parser.add_argument("--manual-bridge", action="store_true",
                        help="build the bridge with ip commands even if vnetbench.backends.lab exists")
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    parser.add_argument("--idle-states", action="store_true",
                        help="let CPUs enter idle states (default: held off, as vnetbench run)")
    args = parser.parse_args(argv)
    hold = IdleStateHold()
    if not args.idle_states:
        print(f"idle states: {hold.open().detail}", flush=True)
    try:
        return _measure_all(args, parser)
    finally:
        hold.close()


def _measure_all(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.no_pin:
        global SERVER_CPU, RR_CLIENT_CPU, BULK_CLIENT_CPU
        SERVER_CPU = RR_CLIENT_CPU = BULK_CLIENT_CPU = None
    probe = str(find_binary("vnetbench-probe"))
    checks: list[tuple[str, bool]] = []
    for name in [x.strip() for x in args.paths.split(",") if x.strip()]:
        if name == "loopback":
            ctx = loopback()
        elif name == "bridge":
            ctx = manual_bridge() if args.manual_bridge else bridge()
        else:
            parser.error(f"unknown path {name!r}: use loopback and/or bridge")
        load_before = os.getloadavg()[0]
        with ctx as setup:
            print(f"measuring on {setup.name} ({args.reps} reps x {args.duration:g}s, "
                  f"interleaved; CPUs server={SERVER_CPU} rr-client={RR_CLIENT_CPU} "
                  f"bulk-client={BULK_CLIENT_CPU}) ...", flush=True)
            figures = measure(setup, probe, args.reps, args.duration)
        load_after = os.getloadavg()[0]
        checks += report(setup.name, figures)
        print(f"  load average (1 min) before/after: {load_before:.2f}/{load_after:.2f}")
        if max(load_before, load_after) > BUSY_LOAD:
            print("  WARNING: the machine was busy with other work; figures and CVs include "
                  "that interference (all tools alike)")
    failed = [text for text, ok in checks if not ok]
    print(f"\n{len(checks) - len(failed)}/{len(checks)} targets PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
