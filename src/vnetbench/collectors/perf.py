"""Perf collector: the hot functions of the whole machine while a trial runs.

``perf record -e cpu-clock -a`` samples every CPU on a software clock, which works on
machines without hardware counters (this kind of VM has none); the first snapshot starts it,
the second stops it (SIGINT) and reads ``perf report`` (by library and symbol). The delta is
one ``profile_share`` sample per hot function (its share of the busy samples, idle loops left
out), labelled ``function`` and ``dso`` (``[kernel.kallsyms]`` for the kernel), at most
``top`` of them. The profile is of the machine, not of the lab: whatever else runs shows too.
A software clock cannot interrupt code that runs with interrupts off: that code's time is
counted where it turns them back on (``_raw_spin_unlock_irqrestore``, ``handle_softirqs``),
so read those as "with interrupts off", not as time in the function itself.

Only trials are profiled (an interleaved session alternates every path within a second, so
one profile would mix them). ``perf record`` is bounded by ``limit_s`` (its workload is a
``sleep``) and dies with the process that started it, so a trial that fails between the two
snapshots leaves nothing running.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import tempfile
from collections.abc import Mapping

from vnetbench.collectors.base import Collector, Snapshot, now_ns, sample
from vnetbench.errors import UnsupportedError
from vnetbench.results.model import Sample

EVENT = "cpu-clock"
IDLE = frozenset({"poll_idle", "pv_native_safe_halt", "default_idle", "cpuidle_enter_state",
                  "acpi_idle_do_entry", "native_safe_halt", "intel_idle", "mwait_idle",
                  "do_idle", "cpu_idle_poll"})
"""Idle loops: time a CPU had nothing to do, not a cost."""
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def parse_report(text: str) -> dict[tuple[str, str], float]:
    """``{(dso, function): percent}`` from ``perf report --stdio --sort dso,sym -q``."""
    out: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or not parts[0].endswith("%") or parts[2] not in ("[k]", "[.]"):
            continue
        try:
            share = float(parts[0].rstrip("%"))
        except ValueError:
            continue
        key = (parts[1], " ".join(parts[3:]))
        out[key] = out.get(key, 0.0) + share
    return out


def busy_shares(profile: Mapping[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    """Each function's share of the busy samples (idle loops left out, renormalised)."""
    busy = {k: v for k, v in profile.items() if k[1] not in IDLE}
    total = sum(busy.values())
    return {k: v / total for k, v in busy.items()} if total > 0 else {}


class PerfProfile(Collector):
    """A machine-wide profile between two snapshots (see the module docstring)."""

    name = "perf"

    def __init__(self, perf: str, *, frequency: int = 499, top: int = 12,
                 limit_s: float = 900.0) -> None:
        super().__init__()
        self.perf = perf
        self.frequency = frequency
        self.top = top
        self.limit_s = limit_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._path = ""

    def snapshot(self) -> Snapshot:
        if self._proc is None:
            self._start()
            return Snapshot(now_ns(), {})
        return Snapshot(now_ns(), {"profile": self._stop()})

    def _start(self) -> None:
        fd, self._path = tempfile.mkstemp(prefix="vnetbench-perf-", suffix=".data")
        os.close(fd)
        argv = [self.perf, "record", "-e", EVENT, "-a", "-F", str(self.frequency), "-q",
                "-o", self._path, "--", "sleep", f"{self.limit_s:g}"]
        try:
            self._proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE,
                                          preexec_fn=_die_with_parent)
        except OSError as exc:
            os.unlink(self._path)
            raise UnsupportedError(f"{self.perf}: {exc}") from exc

    def _stop(self) -> dict[str, int]:
        proc, self._proc = self._proc, None
        assert proc is not None
        try:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
            report = subprocess.run([self.perf, "report", "-i", self._path, "--stdio",
                                     "--no-children", "--sort", "dso,sym", "-q"],
                                    capture_output=True, text=True, timeout=120, check=False)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return {}
        finally:
            with contextlib.suppress(OSError):
                os.unlink(self._path)
        shares = busy_shares(parse_report(report.stdout))
        ranked = sorted(shares.items(), key=lambda kv: -kv[1])[:self.top]
        # parts per million, as the counters of a Snapshot are integers
        return {f"{dso}\t{fn}": round(share * 1e6) for (dso, fn), share in ranked}

    def delta(self, before: Snapshot, after: Snapshot,
              labels: Mapping[str, str] | None = None) -> list[Sample]:
        base = {**(labels or {}), "source": "perf"}
        out = []
        for key, ppm in after.counters.get("profile", {}).items():
            dso, _, function = key.partition("\t")
            out.append(sample("profile_share", ppm / 1e6, "ratio", base, after.t_ns,
                              function=function, dso=dso))
        return out
