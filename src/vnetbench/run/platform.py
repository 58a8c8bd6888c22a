"""Platform control for a run: CPU idle states held off, the frequency governor, a quiet machine.

A round trip of 20 µs measures wake-ups more than the network when idle CPUs halt: on this
KVM guest (cpuidle haltpoll) native RTT p50 measured 70-80 µs with idle states allowed and
19-23 µs with them held off. So:

* **idle states**, around each workload that wants them held: ``/dev/cpu_dma_latency`` is
  opened and 0 written, and the file is held open (the kernel drops the request when it is
  closed), as tuned's latency-performance profile does; read back to check it took effect;
* **governor**, for the run: where the machine has cpufreq, every CPU's governor is set to
  ``performance`` and restored by the last run holding it (``host.holds``; ``clean`` after a
  killed one) (a VM usually has none: recorded as such);
* **quiet check** before each trial: the CPU busy time of the whole machine is sampled from
  ``/proc/stat`` (nothing of the next trial runs yet, so all of it is outside the lab); the
  trial waits, up to a bound, until it falls below a threshold, then runs either way and
  the run records how busy it was.

Each control says in ``run.json`` (``controls``) whether it was asked for and whether it took
effect. Nothing here changes the machine beyond the run.
"""

from __future__ import annotations

import contextlib
import os
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

DMA_LATENCY = Path("/dev/cpu_dma_latency")
CPU_SYSFS = Path("/sys/devices/system/cpu")
PROC_STAT = Path("/proc/stat")
QUIET_WINDOW_S = 0.25


@dataclass
class ControlStatus:
    """One control: asked for, took effect, and what was seen."""

    requested: bool
    effective: bool = False
    detail: str = ""

    def to_dict(self) -> dict[str, bool | str]:
        return {"requested": self.requested, "effective": self.effective, "detail": self.detail}


class IdleStateHold:
    """Holds ``/dev/cpu_dma_latency`` at 0 µs while open."""

    def __init__(self, path: Path = DMA_LATENCY) -> None:
        self.path = path
        self._fd: int | None = None
        self.status = ControlStatus(True)

    def open(self) -> ControlStatus:
        try:
            fd = os.open(self.path, os.O_RDWR)
        except OSError as exc:
            self.status.detail = f"cannot open {self.path}: {exc.strerror}"
            return self.status
        try:
            os.write(fd, struct.pack("i", 0))
            seen = _read_back(fd)
        except OSError as exc:
            os.close(fd)
            self.status.detail = f"writing {self.path} failed: {exc.strerror}"
            return self.status
        self._fd = fd
        value = struct.unpack("i", seen)[0] if len(seen) == 4 else None
        self.status.effective = value == 0
        self.status.detail = (f"{self.path} held at 0 us (read back {value})"
                              if value is not None else f"{self.path} written; no read-back")
        return self.status

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def _read_back(fd: int) -> bytes:
    """The 4 bytes at the start of the file: pread where it can seek (the device, a regular
    file), else the next read (a pipe)."""
    try:
        return os.pread(fd, 4, 0)
    except OSError:
        return os.read(fd, 4)


HOLD = "governor"
"""The name of the governor's hold (``host.holds``): the machine's own governors, and the
runs holding ``performance``."""


class GovernorHold:
    """Sets every CPU's cpufreq governor to ``performance``; the last run holding it puts
    the machine's own governors back (``host.holds``: two runs ending in either order, or
    ``clean`` after a killed one)."""

    def __init__(self, root: Path = CPU_SYSFS, wanted: str = "performance") -> None:
        self.root = root
        self.wanted = wanted
        self._held = False
        self.status = ControlStatus(True)

    def open(self) -> ControlStatus:
        from vnetbench.host import holds

        files = sorted(self.root.glob("cpu[0-9]*/cpufreq/scaling_governor"))
        if not files:
            self.status.detail = "no cpufreq on this machine (nothing to set)"
            return self.status
        current = {}
        for path in files:
            with contextlib.suppress(OSError):
                current[str(path)] = path.read_text().strip()
        holds.take(HOLD, current)
        self._held = True
        problems = []
        for path in files:
            try:
                if current.get(str(path)) != self.wanted:
                    path.write_text(self.wanted)
            except OSError as exc:
                problems.append(f"{path.parent.parent.name}: {exc.strerror}")
        self.status.effective = not problems
        self.status.detail = (f"{self.wanted} on {len(files)} CPU(s)" if not problems
                              else "could not set: " + "; ".join(problems))
        return self.status

    def close(self) -> None:
        from vnetbench.host import holds

        if self._held:
            self._held = False
            restore_governors(holds.release(HOLD))


def restore_governors(originals: dict[str, str]) -> list[str]:
    """Write each CPU's recorded governor back; a line per CPU restored."""
    done = []
    for name, old in originals.items():
        with contextlib.suppress(OSError):
            Path(name).write_text(old)
            done.append(f"restored {name} to {old}")
    return done


def cpu_times(stat: Path = PROC_STAT) -> tuple[float, float]:
    """(busy, total) jiffies summed over all CPUs; busy excludes idle and iowait."""
    fields = stat.read_text().splitlines()[0].split()[1:]
    values = [float(v) for v in fields[:8]]
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)
    total = sum(values)
    return total - idle, total


def busy_cores(window_s: float = QUIET_WINDOW_S, stat: Path = PROC_STAT) -> float:
    """CPUs' worth of busy time over a short window (0.5 = half a core busy)."""
    b0, t0 = cpu_times(stat)
    time.sleep(window_s)
    b1, t1 = cpu_times(stat)
    ncpu = os.cpu_count() or 1
    return (b1 - b0) / (t1 - t0) * ncpu if t1 > t0 else 0.0


class QuietSeen(TypedDict):
    """What one wait before a trial saw: the busy cores at its end, how long it waited."""

    trial: int
    busy_cores: float
    waited_s: float
    quiet: bool


@dataclass
class QuietCheck:
    """Waits before a trial until the machine is quiet (or ``wait_s`` passes)."""

    threshold_cores: float
    wait_s: float
    results: list[QuietSeen] = field(default_factory=list)
    record_only: bool = False
    """Record the load outside the lab, never wait for it (paired measurement compares each
    layer with its baseline in the same seconds)."""

    def wait(self, trial: int, record: bool = True) -> QuietSeen:
        """Sample until quiet or out of time; return what was seen (and record it, unless
        ``record`` is false: warmup trials)."""
        start = time.monotonic()
        busy = busy_cores()
        while (not self.record_only and busy > self.threshold_cores
               and time.monotonic() - start < self.wait_s):
            busy = busy_cores()
        seen: QuietSeen = {"trial": trial, "busy_cores": round(busy, 3),
                           "waited_s": round(time.monotonic() - start, 2),
                           "quiet": busy <= self.threshold_cores}
        if record:
            self.results.append(seen)
        return seen


@dataclass
class PlatformControls:
    """The controls of a run: the governor held from the first trial to the last, the idle
    states held around each workload that asks for them (``idle_for``), the quiet check
    before each trial, and the record of how trials were placed."""

    idle: bool = True
    """Whether any workload of the run may ask for idle states to be held."""
    governor: bool = True
    quiet: QuietCheck | None = None
    _governor: GovernorHold | None = None
    statuses: dict[str, ControlStatus] = field(default_factory=dict)
    placements: dict[str, int] = field(default_factory=dict)
    """How each trial was placed (description -> number of trials)."""
    placement_misses: list[str] = field(default_factory=list)
    placement_requested: str = "off"
    placement_note: str = ""
    idle_held: int = 0
    """Workload runs during which idle states were held off."""
    idle_free: int = 0
    """Workload runs that did not ask for it."""
    idle_failed: str = ""
    """Why a hold did not take, if one did not."""
    realtime: bool = False
    """Whether the run asks for SCHED_FIFO on its interleaved sessions' processes."""
    realtime_set: int = 0
    """Processes (probe servers, layer daemons) put under SCHED_FIFO."""
    realtime_missed: list[str] = field(default_factory=list)
    """Processes that could not be (gone, or refused)."""

    def note_realtime(self, done: int, missed: list[str]) -> None:
        """Record one session's real-time priorities: processes set, and those missed."""
        self.realtime_set += done
        self.realtime_missed += missed

    def note_placement(self, requested: str, description: str, note: str = "") -> None:
        """Record one trial's CPU placement (``note``: why it differs from the request)."""
        self.placement_requested = requested
        self.placements[description] = self.placements.get(description, 0) + 1
        if note:
            self.placement_note = note

    def note_misses(self, misses: list[str]) -> None:
        self.placement_misses += misses

    @contextlib.contextmanager
    def idle_for(self, hold: bool) -> Iterator[None]:
        """Hold idle states off around one workload (when ``hold``), and count it."""
        if not hold:
            self.idle_free += 1
            yield
            return
        holder = IdleStateHold()
        status = holder.open()
        if status.effective:
            self.idle_held += 1
        else:
            self.idle_failed = status.detail
        try:
            yield
        finally:
            holder.close()

    def open(self) -> None:
        if self.idle:
            probe = IdleStateHold()  # can it be held here? (each workload holds its own)
            self.statuses["idle_states"] = probe.open()
            probe.close()
        else:
            self.statuses["idle_states"] = ControlStatus(False, detail="off in the scenario")
        if self.governor:
            self._governor = GovernorHold()
            self.statuses["governor"] = self._governor.open()
        else:
            self.statuses["governor"] = ControlStatus(False, detail="off in the scenario")

    def close(self) -> None:
        if self._governor is not None:
            self._governor.close()
            self._governor = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: s.to_dict() for name, s in self.statuses.items()}
        idle = out.get("idle_states")
        if idle is not None and (self.idle_held or self.idle_free or self.idle_failed):
            idle["effective"] = self.idle_held > 0 and not self.idle_failed
            idle["detail"] = (f"{DMA_LATENCY} held at 0 us during {self.idle_held} workload "
                              f"run(s), left free during {self.idle_free}"
                              + (f"; failed: {self.idle_failed}" if self.idle_failed else ""))
        if self.realtime:
            out["realtime"] = {
                "requested": True,
                "effective": self.realtime_set > 0 and not self.realtime_missed,
                "detail": (f"SCHED_FIFO priority 1 for the interleaved sessions' probe client, "
                           f"servers and layer daemons: {self.realtime_set} process(es) set"
                           + (f"; not set: {', '.join(self.realtime_missed[:5])}"
                              if self.realtime_missed else "")
                           if self.realtime_set or self.realtime_missed
                           else "no interleaved session ran")}
        else:
            out["realtime"] = {"requested": False, "effective": False,
                               "detail": "off in the scenario"}
        pinned = [d for d in self.placements if d != "not pinned"]
        detail = "; ".join(f"{d} ({n} trials)" for d, n in self.placements.items())
        if self.placement_note:
            detail = f"{self.placement_note}; {detail}"
        if self.placement_misses:
            detail += "; affinity not as placed: " + "; ".join(self.placement_misses[:5])
        # deliberately unpinned trials (applications, a cpuset) did not ask for pinning
        asked = self.placement_requested != "off" and not (self.placement_note and not pinned)
        out["placement"] = {"requested": asked,
                            "mode": self.placement_requested,
                            "effective": bool(pinned) and not self.placement_misses,
                            "detail": detail or "no trial yet"}
        if self.quiet is None:
            out["quiet"] = {"requested": False, "effective": False, "detail": "off"}
        elif self.quiet.record_only:  # recorded, not waited for: paired measurement
            noisy = [r for r in self.quiet.results if not r["quiet"]]
            out["quiet"] = {
                "requested": False, "effective": False,
                "detail": (f"recorded, not waited for (paired measurement compares each layer "
                           f"with its baseline in the same seconds): {len(noisy)} of "
                           f"{len(self.quiet.results)} measurement(s) started with more than "
                           f"{self.quiet.threshold_cores:g} cores busy outside the lab"),
                "trials": self.quiet.results,
            }
        else:
            noisy = [r for r in self.quiet.results if not r["quiet"]]
            out["quiet"] = {
                "requested": True, "effective": not noisy,
                "detail": (f"threshold {self.quiet.threshold_cores:g} cores busy outside the "
                           f"lab, wait up to {self.quiet.wait_s:g} s; {len(noisy)} of "
                           f"{len(self.quiet.results)} trial(s) started on a busy machine"),
                "trials": self.quiet.results,
            }
        return out
