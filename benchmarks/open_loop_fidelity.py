"""The probe's open loop beside sockperf's fixed-rate ping-pong, on loopback, at three loads.

    .venv/bin/python benchmarks/open_loop_fidelity.py [--rates 1000,4000,10000] [--reps 7]
        [--duration 3]

For each rate, ``--reps`` times, interleaved: ``sockperf ping-pong --tcp --mps RATE
--full-rtt -m 100`` against ``sockperf server --tcp``, and ``vnetbench-probe rr --rate RATE
--arrivals constant`` (100 B both ways, as sockperf sends, one flow) against ``vnetbench-probe
serve``, once with ``--wait spin`` (busy-polling between send times, as sockperf paces
``--mps``: the comparison of like with like, which the target judges) and once with ``--wait
block`` (the default: sleeping to each send time, a reader blocked on the socket; printed
beside, not judged: its latency also holds the idle CPU's wake-ups); every server and every
client on CPU 0 (``taskset``; on a VM waking another, idle vCPU costs tens of microseconds:
sockperf's p50 at 10,000/s was 72 us with its server on CPU 1, 5-9 us on CPU 0). sockperf
measures each message from its actual send, so the probe's figure beside it is the open
loop's ``service_us`` (from the actual write); its ``rtt_us`` (from the arrival time, what
the open loop reports as latency) and how late its writes left are printed beside. The
issue's target: the probe's p50 and p99 within 5 % of sockperf's at each load below the knee
(the ratio of the medians over the repetitions). Beside a failing ratio, sockperf against
itself (the median of its odd runs over that of its even ones) when that misses the target
too: the machine's own noise then exceeds the 5 %. Exit 1 when a target fails.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from vnetbench.host.binaries import find_binary
from vnetbench.run.platform import IdleStateHold
from vnetbench.workloads.sockperf import parse_sockperf

PROBE = str(find_binary("vnetbench-probe"))
CPU = "0"
TARGET = 1.05


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _server(argv: list[str]) -> Iterator[None]:
    proc = subprocess.Popen(["taskset", "-c", CPU, *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        if proc.poll() is not None:
            sys.exit(f"{argv[0]} server exited at once ({proc.returncode})")
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def sockperf(port: int, rate: int, duration: float) -> dict[str, float]:
    out = subprocess.run(["taskset", "-c", CPU, "sockperf", "ping-pong", "--tcp", "-i",
                          "127.0.0.1", "-p", str(port), "-m", "100", "-t", f"{duration:g}",
                          "--mps", str(rate), "--full-rtt"],
                         capture_output=True, text=True, timeout=duration + 60)
    values = {s.metric: s.value for s in parse_sockperf(out.stdout + out.stderr)}
    return {"p50": values["rtt_p50_us"], "p99": values["rtt_p99_us"]}


def probe(port: int, rate: int, duration: float, wait: str) -> dict[str, float]:
    out = subprocess.run(["taskset", "-c", CPU, PROBE, "rr", "--server", f"127.0.0.1:{port}",
                          "--duration", f"{duration:g}", "--warmup", "0.5", "--rate", str(rate),
                          "--request", "100", "--response", "100",
                          "--arrivals", "constant", "--wait", wait],
                         capture_output=True, text=True, timeout=duration + 60, check=True)
    end = json.loads(out.stdout.splitlines()[-1])
    return {"p50": end["service_us"]["p50"], "p99": end["service_us"]["p99"],
            "from_arrival_p50": end["rtt_us"]["p50"], "from_arrival_p99": end["rtt_us"]["p99"],
            "late_p99": end["send_late_us"]["p99"], "share": end["achieved_share"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="1000,4000,10000")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--duration", type=float, default=3.0)
    args = ap.parse_args()
    if shutil.which("sockperf") is None:
        sys.exit("sockperf is not installed (apt-get install sockperf)")
    rates = [int(r) for r in args.rates.split(",")]
    sp_port, pr_port = _free_port(), _free_port()
    hold = IdleStateHold()
    print(f"idle states: {hold.open().detail}", flush=True)
    try:
        failed = _compare(rates, args.reps, args.duration, sp_port, pr_port)
    finally:
        hold.close()
    sys.exit(1 if failed else 0)


def _within(ratio: float) -> bool:
    return 1 / TARGET <= ratio <= TARGET


def _compare(rates: list[int], reps: int, duration: float, sp_port: int, pr_port: int) -> bool:
    """Print the table; True when a target failed."""
    failed = False
    with _server(["sockperf", "server", "--tcp", "-i", "127.0.0.1", "-p", str(sp_port)]), \
            _server([PROBE, "serve", "--bind", "127.0.0.1", "--port", str(pr_port)]):
        print(f"{'rate/s':>8} {'tool':<10} {'p50 us':>8} {'p99 us':>8}   (medians of "
              f"{reps}; probe: --wait spin, probe/blk: --wait block, not judged; from the write, "
              f"[from the arrival], writes late p99)")
        for rate in rates:
            sp: list[dict[str, float]] = []
            pr: list[dict[str, float]] = []
            blocked: list[dict[str, float]] = []
            for _ in range(reps):
                sp.append(sockperf(sp_port, rate, duration))
                pr.append(probe(pr_port, rate, duration, "spin"))
                blocked.append(probe(pr_port, rate, duration, "block"))

            def med(rows: list[dict[str, float]], key: str) -> float:
                return statistics.median(r[key] for r in rows)

            print(f"{rate:>8} {'sockperf':<10} {med(sp, 'p50'):>8.1f} {med(sp, 'p99'):>8.1f}")
            for tool, rows in (("probe", pr), ("probe/blk", blocked)):
                print(f"{rate:>8} {tool:<10} {med(rows, 'p50'):>8.1f} {med(rows, 'p99'):>8.1f}   "
                      f"[{med(rows, 'from_arrival_p50'):.1f}, "
                      f"{med(rows, 'from_arrival_p99'):.1f}] late p99 "
                      f"{med(rows, 'late_p99'):.1f} us, achieved {med(rows, 'share'):.3f}")
            for q in ("p50", "p99"):
                ratio = med(pr, q) / med(sp, q)
                ok = _within(ratio)
                failed |= not ok
                # sockperf against itself (its odd runs over its even ones): where that is
                # outside the target too, this machine cannot resolve the target at all
                itself = med(sp[0::2], q) / med(sp[1::2], q)
                why = "" if ok or _within(itself) else (
                    f", below this machine's noise: sockperf against itself x{itself:.3f}")
                print(f"{'':>8} {q} probe/sockperf x{ratio:.3f} "
                      f"{'PASS' if ok else 'FAIL'} (within {TARGET - 1:.0%}{why})")
    return failed


if __name__ == "__main__":
    main()
