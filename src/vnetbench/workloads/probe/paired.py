"""The probe's paired client: one ``vnetbench-probe paired`` process measures every path of
a session in alternation (``workloads.paired``: what the run hands it and takes back).

The labs of every layer under comparison (and two of the baseline, the A/A pair) are alive
at once. Each runs the probe's server as its single-path mode would (``ProbeClientServer``:
node 0, or its host's own stack); the client joins each lab's client namespace in turn to
open that path's connections, then measures in rounds, pinned to the CPU the client node of
every lab is placed on (the same for every path). A round gives every path a slice (rr and
crr 100 ms in 10 ms pieces, ten cycles over the paths in a fresh random order each, the first
round trips of a visit run unrecorded; a stream 250 ms in 25 ms pieces). A round is the unit of
evidence: a layer's slice and its baseline's slices of that round were measured in the same
tenths of a second (``results.pairing``).

Each slice becomes the samples and histograms its single-path run would give (labelled with
its path's trial labels, ``pair`` = ``<session>.<round>`` and ``design`` = ``interleaved``),
plus the CPU spent in that slice: ``cgroup_cpu_s`` of the server's node and of the lab's
daemons (``infra``), read by the probe around the slice, and the client's own CPU as
``cgroup_cpu_s`` of the client node (it runs in no lab's cgroup; ``source`` says where it
was read), so CPU per transaction is charged as in a single-path trial; and the machine's
CPU by state (``cpu_*_s``, ``cpu=all``).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vnetbench.errors import WorkloadError
from vnetbench.host.binaries import find_binary
from vnetbench.host.realtime import PRIORITY, realtime
from vnetbench.results.histogram import HistogramRecord, LatencyHistogram
from vnetbench.results.model import DESIGN_LABEL, PAIR_LABEL, Sample
from vnetbench.workloads.base import WorkloadOptions
from vnetbench.workloads.paired import (
    INTERLEAVED,
    PassSettings,
    SessionLab,
    SessionPath,
    SessionResult,
    session_seconds,
)
from vnetbench.workloads.probe.parse import ProbeResult, histogram_records, parse_events, to_samples
from vnetbench.workloads.probe.workload import (
    PROBE,
    RUN_SLACK_S,
    CrrOptions,
    ProbeClientServer,
    RrOptions,
    StreamOptions,
    crr_workload,
    hostport,
    rr_workload,
    stream_workload,
)

PAUSE_US = 1000.0
"""A round trip longer than this (and than ``PAUSE_FACTOR`` times its slice's median) is a
pause: on a quiet VM the hypervisor stops the guest for milliseconds, invisibly to it (no
steal time); on a busy machine other work takes the CPU for its turn; whichever path was
running pays the whole pause."""
PAUSE_FACTOR = 20.0

_STAT_METRICS = {"user": "cpu_core_user_s", "nice": "cpu_nice_s", "system": "cpu_core_sys_s",
                 "idle": "cpu_idle_s", "iowait": "cpu_iowait_s", "irq": "cpu_irq_s",
                 "softirq": "cpu_softirq_s", "steal": "cpu_steal_s"}
_BUSY = ("user", "nice", "system", "irq", "softirq", "steal")


def _single_path(kind: str, options: WorkloadOptions) -> ProbeClientServer:
    if isinstance(options, RrOptions):
        return rr_workload(options)
    if isinstance(options, CrrOptions):
        return crr_workload(options)
    if isinstance(options, StreamOptions):
        return stream_workload(options)
    raise WorkloadError(f"{kind} cannot be interleaved")


def _counter_file(lab: SessionLab, which: str) -> tuple[str, str] | None:
    """(cgroup name, CPU counter file) of node 0's cgroup (``n0``) or the daemons' (``infra``)."""
    cgroup = lab.infra() if which == "infra" else lab.nodes[0].cgroup
    if cgroup is None:
        return None
    wanted = "cpuacct.usage" if cgroup.version == 1 else "cpu.stat"
    for d in cgroup.dirs:
        if (d / wanted).exists():
            return (which, str(d / wanted))
    return None


class InterleavedSession:
    """One workload measured over every path of a session (see the module docstring)."""

    def __init__(self, kind: str, options: WorkloadOptions, paths: Sequence[SessionPath],
                 settings: PassSettings) -> None:
        if len(paths) < 2:
            raise WorkloadError("interleaving needs at least two paths")
        self.kind = kind
        self.options = options
        self.paths = list(paths)
        self.settings = settings
        self.session = settings.session
        self.rounds = settings.rounds
        self.slice_s = settings.slice_s
        self.piece_s = min(settings.piece_s, self.slice_s) if settings.piece_s else self.slice_s
        """One visit to a path (the whole slice, or cycles of pieces within a round)."""
        self.settle_s = settings.settle_s
        self.warm = settings.warm
        self.warmup_rounds = settings.warmup_rounds
        self.seed = settings.seed
        self.first_round = settings.first_round
        """Number of the first round (a session continued with more rounds goes on counting)."""
        self.realtime = settings.realtime
        """Run the client, the servers and the layers' daemons under SCHED_FIFO (``realtime``)."""
        self.realtime_set = 0
        self.realtime_missed: list[str] = []
        self.singles = [_single_path(kind, options) for _ in self.paths]

    def expected_seconds(self) -> float:
        return session_seconds(self.rounds, self.warmup_rounds, len(self.paths), self.slice_s)

    def run(self, raw_dir: Path) -> SessionResult:
        with contextlib.ExitStack() as stack:  # every path cleaned up, even if one fails
            for single, path in zip(self.singles, self.paths, strict=True):
                single.prepare(path.lab)  # cleans up after itself when it fails
                stack.callback(single.cleanup, path.lab)
            if self.realtime:
                self._make_realtime()
            specs, cgroups = self._specs()
            return self._measure(specs, cgroups, raw_dir)

    def _make_realtime(self) -> None:
        """SCHED_FIFO for every path's servers and its lab's daemons (the client asks for it
        itself, ``--fifo``); what could not be set is kept for the run's record."""
        for path, single in zip(self.paths, self.singles, strict=True):
            what = {f"{path.name} server": pid for pid in single.server_pids()}
            what |= {f"{path.name} {role}": pid for role, pid in path.lab.daemon_pids().items()}
            for name, pid in what.items():
                if realtime(pid):
                    self.realtime_set += 1
                else:
                    self.realtime_missed.append(name)

    def _specs(self) -> tuple[list[dict[str, Any]], list[list[str]]]:
        specs: list[dict[str, Any]] = []
        names: list[list[str]] = []
        for path, single in zip(self.paths, self.singles, strict=True):
            pair, served = single.served()[0]
            addr, port = path.lab.endpoint(pair.client, pair.server, served, proto="tcp")
            netns = pair.client.namespace(f"interleaved {self.kind}")
            counters = [c for c in (_counter_file(path.lab, "n0"),
                                    _counter_file(path.lab, "infra")) if c is not None]
            specs.append({"name": path.name, "netns": f"/run/netns/{netns}",
                          "server": hostport(addr, port),
                          "cpu_files": [f for _, f in counters]})
            names.append([n for n, _ in counters])
        return specs, names

    def _argv(self, specs: list[dict[str, Any]]) -> list[str]:
        o: Any = self.options
        argv = [str(find_binary(PROBE)), "paired", "--mode", self.kind,
                "--paths", json.dumps(specs), "--slice", f"{self.slice_s:g}",
                "--piece", f"{self.piece_s:g}",
                "--settle", f"{self.settle_s:g}", "--rounds", str(self.rounds),
                "--warmup-rounds", str(self.warmup_rounds), "--seed", str(self.seed)]
        if self.kind in ("rr", "crr"):
            argv += ["--request", str(o.request), "--response", str(o.response),
                     "--warm", str(self.warm)]
        if self.kind == "stream":
            argv += ["--streams", str(o.streams)]
            if o.send_size is not None:
                argv += ["--send-size", str(o.send_size)]
            if o.nodelay:
                argv.append("--nodelay")
        client = self.paths[0].lab.placement.for_node(1)
        if client:
            argv += ["--cpu", str(client[0])]
        if self.realtime:
            argv += ["--fifo", str(PRIORITY)]
        return argv

    def _measure(self, specs: list[dict[str, Any]], cgroups: list[list[str]],
                 raw_dir: Path) -> SessionResult:
        argv = self._argv(specs)
        timeout = self.expected_seconds() * 3 + RUN_SLACK_S
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                check=False)
        raw_dir.mkdir(parents=True, exist_ok=True)
        out = raw_dir / f"paired-{self.kind}-s{self.session}-r{self.first_round}.jsonl"
        out.write_text(result.stdout or "")
        if result.stderr.strip():
            out.with_suffix(".stderr").write_text(result.stderr)
        events = parse_events(result.stdout or "")
        for event in events:
            if event["event"] == "error":
                raise WorkloadError(f"{PROBE} paired {self.kind}: {event.get('message')}")
        if result.returncode != 0 or not any(e["event"] == "end" for e in events):
            tail = " | ".join((result.stderr or result.stdout or "").strip().splitlines()[-3:])
            raise WorkloadError(f"{PROBE} paired {self.kind} exited {result.returncode}: {tail}")
        by_name = {p.name: (p, names) for p, names in zip(self.paths, cgroups, strict=True)}
        session = SessionResult()
        merged: dict[tuple[str, str], list[HistogramRecord]] = {}
        for event in events:
            if event["event"] == "slice":
                path, names = by_name[str(event["path"])]
                for hist in self._slice(event, path, names, session):
                    merged.setdefault((path.name, hist.metric), []).append(hist)
            elif event["event"] == "end":
                session.wall_s = float(event.get("wall_s", 0.0))
        # one histogram per path and pass: every slice's merged (each round's percentiles are
        # samples of their own), labelled with the pass's first round
        for (_path, metric), hists in merged.items():
            labels = {k: v for k, v in hists[0].labels.items() if k != PAIR_LABEL}
            labels["repetition"] = str(self.first_round)
            session.histograms.append(HistogramRecord(
                metric, hists[0].unit, labels, LatencyHistogram.merge(h.hist for h in hists)))
        return session

    def _labels(self, path: SessionPath, round_: int) -> dict[str, str]:
        pair, _ = self.singles[self.paths.index(path)].served()[0]
        extra = self.options.labels()
        return {**path.labels, "workload": self.kind, **extra, "server": pair.server.name,
                "client": pair.client.name, "repetition": str(round_),
                PAIR_LABEL: f"{self.session}.{round_}", DESIGN_LABEL: INTERLEAVED}

    def _slice(self, event: dict[str, Any], path: SessionPath, cgroups: list[str],
               session: SessionResult) -> list[HistogramRecord]:
        """The slice's samples into ``session``; its latency histograms."""
        labels = self._labels(path, self.first_round + int(event["round"]))
        # what the single-path run's end event says too (its samples carry it as a label)
        result = ProbeResult(mode=self.kind, start={}, end={**event, "protocol": "tcp"})
        for sample in to_samples(result, labels):
            session.samples.append(sample.with_labels(workload=self.kind))
        hists = [h.with_labels(workload=self.kind) for h in histogram_records(result, labels)]
        t_ns = result.t_ns
        session.samples += paused_samples(hists, t_ns=t_ns)
        if isinstance(event.get("unrecorded_s"), int | float):
            session.samples.append(Sample("unrecorded_s", float(event["unrecorded_s"]), "s",
                                          dict(labels), t_ns))
        for name, value in zip(cgroups, event.get("cgroup_cpu_s", []), strict=False):
            if isinstance(value, int | float):
                session.samples.append(Sample("cgroup_cpu_s", float(value), "s",
                                              {**labels, "cgroup": name}, t_ns))
        client = labels["client"]
        session.samples.append(Sample("cgroup_cpu_s", result.cpu_user_s + result.cpu_sys_s, "s",
                                      {**labels, "cgroup": client, "source": "probe-rusage"},
                                      t_ns))
        stat = event.get("proc_stat_s", {})
        if isinstance(stat, dict):
            for key, metric in _STAT_METRICS.items():
                if isinstance(stat.get(key), int | float):
                    session.samples.append(Sample(metric, float(stat[key]), "s",
                                                  {**labels, "cpu": "all",
                                                   "source": "proc_stat"}, t_ns))
            busy = sum(float(stat.get(k, 0.0)) for k in _BUSY)
            session.samples.append(Sample("cpu_busy_s", busy, "s",
                                          {**labels, "cpu": "all", "source": "proc_stat"},
                                          t_ns))
        return hists


def paused_samples(hists: Sequence[HistogramRecord], *, t_ns: int) -> list[Sample]:
    """``paused_s`` of a slice: the seconds its round trips spent in pauses (``PAUSE_US``)."""
    out = []
    for h in hists:
        if h.metric != "rtt_us" or h.hist.count == 0:
            continue
        threshold = max(PAUSE_US, PAUSE_FACTOR * h.hist.percentile(50))
        out.append(Sample("paused_s", h.hist.time_above(threshold) / 1e6, "s", dict(h.labels),
                          t_ns))
    return out
