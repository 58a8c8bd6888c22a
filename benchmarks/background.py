"""Background load for the benchmarks: ordinary other work, started and stopped by PID.

    with background("cpu+procs", seconds=600):
        ...  # measure while the machine is busy

``cpu``: a busy loop pinned to one CPU (the last one this process may use); ``procs``: a loop
starting a short-lived process every 10 ms (``/bin/true``), as a build or a shell script
does. Both are bounded in time (they stop by themselves after ``seconds``) and are stopped
by PID when the block ends. Needs nothing but Python.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

BUSY = """
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    pass
"""

SPAWNER = """
import subprocess, sys, time
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    subprocess.run(["/bin/true"], check=False)
    time.sleep(0.01)
"""

KINDS = ("cpu", "procs")


def start(kind: str, seconds: float) -> list[subprocess.Popen[bytes]]:
    """Start the load ``kind`` (``cpu``, ``procs`` or ``cpu+procs``); its processes."""
    parts = kind.split("+")
    unknown = [p for p in parts if p not in KINDS]
    if unknown:
        raise ValueError(f"unknown load {'+'.join(unknown)}; known: {', '.join(KINDS)}")
    procs = []
    if "cpu" in parts:
        cpu = max(os.sched_getaffinity(0))
        procs.append(subprocess.Popen([sys.executable, "-c", BUSY, str(cpu), str(seconds)]))
    if "procs" in parts:
        procs.append(subprocess.Popen([sys.executable, "-c", SPAWNER, str(seconds)]))
    return procs


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


@contextmanager
def background(kind: str, seconds: float) -> Iterator[None]:
    """Run the block with the load ``kind`` in the background (no load for ``none``)."""
    procs = [] if kind == "none" else start(kind, seconds)
    try:
        yield
    finally:
        stop(procs)
