"""Real-time priority for the processes a measurement consists of (a platform control).

A busy neighbour on a client's CPU delays every wake-up of the client by up to its scheduler
slice: a 10 µs round trip becomes 28 µs, and every layer's ratio to native shrinks toward 1
by as much, however carefully the layer and its baseline were paired. Under ``SCHED_FIFO``
(lowest real-time priority, 1) the probe's client and servers and the layers' daemons run as
soon as they are woken, before any ordinary process, so the load outside the lab no longer
sits inside the measured round trip. The kernel's real-time throttling (95% of each second by
default) keeps a runaway real-time task from taking a CPU whole.

Every thread of a process is set (a Go daemon's threads exist before it is asked); threads
made later inherit the policy of the thread that makes them.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PRIORITY = 1
"""The lowest SCHED_FIFO priority: above every ordinary process, below the kernel's own."""


def realtime(pid: int, priority: int = PRIORITY) -> int:
    """Put every thread of ``pid`` under SCHED_FIFO at ``priority``; the threads set (0 when
    the process is gone or the kernel refuses: the caller records that)."""
    done = 0
    for task in _tasks(pid):
        with contextlib.suppress(OSError):
            os.sched_setscheduler(task, os.SCHED_FIFO, os.sched_param(priority))
            done += 1
    return done


def _tasks(pid: int) -> list[int]:
    try:
        return [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir() if t.name.isdigit()]
    except OSError:
        return []


def is_realtime(pid: int) -> bool:
    """Whether ``pid``'s main thread runs under SCHED_FIFO."""
    try:
        return os.sched_getscheduler(pid) == os.SCHED_FIFO
    except OSError:
        return False
