"""Workloads driving ``vnetbench-probe`` inside a lab: rr, crr, stream, gaps, barrier, media.

Each mode has a pydantic options model (``extra="forbid"``, units accepted as text: ``5s``,
``2mbit``, ``64k``) and a Workload class. Client/server modes run ``vnetbench-probe serve``
on ``lab.nodes[0]`` (started in ``prepare``) and the client on ``lab.nodes[1]``; the client
reaches the server at ``lab.endpoint(...)`` (through NAT port publishing where the layer has
it: one TCP port plus the same UDP port number). ``barrier`` runs one rank per node. Raw
probe output is kept as ``raw_dir/<mode>-<detail>.jsonl``; parsing lives in ``probe_parse``.
After ``run`` a workload's ``histograms`` holds the latency histograms of that run (one
HistogramRecord per distribution, labelled like its samples) for merging across trials.

Options are bounded by what the probe itself accepts (message sizes, session length,
warmup, media packet rate: see probe/src/proto.rs and client.rs), so a scenario asking for
more is refused when it is loaded instead of failing in the lab.

``PROBE_WORKLOADS`` maps a mode name to (options model, factory) for the registry.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from vnetbench.errors import VnetbenchError, WorkloadError
from vnetbench.host.binaries import find_binary
from vnetbench.results.histogram import HistogramRecord
from vnetbench.results.model import Sample
from vnetbench.units import Duration, Rate, Size
from vnetbench.workloads.base import Entry, Offer, WorkloadBase, WorkloadOptions, native_sides, registry_entry
from vnetbench.workloads.paired import DEFAULT_PIECE, Slicing
from vnetbench.workloads.probe.parse import (
    ProbeResult,
    histogram_records,
    parse_output,
    to_samples,
)

if TYPE_CHECKING:
    from vnetbench.host.node import Node
    from vnetbench.workloads.labview import LabView

PROBE = "vnetbench-probe"
DEFAULT_PORT = 7000
BARRIER_PORT = 7100
RUN_SLACK_S = 30.0
"""Seconds a probe client may run beyond its duration (+ warmup) before it is killed."""


MAX_TCP_MESSAGE = 64 * 1024 * 1024
"""Largest TCP request/response the probe accepts (``MAX_TCP_MSG`` in probe/src/proto.rs)."""
MIN_UDP_MESSAGE = 32
"""Smallest UDP message: the probe's header (``UdpHeader::LEN``)."""
MAX_UDP_MESSAGE = 65507
"""Largest UDP payload (``MAX_UDP``)."""
MAX_SESSION_S = 86_400.0
"""Longest session the probe server accepts, warmup included (``MAX_DURATION``)."""
MAX_WARMUP_S = 3600.0
"""Longest warmup the probe client accepts (``check_warmup`` in probe/src/client.rs)."""
MAX_SHARE = 2.0
"""The highest share of the baseline's capacity an open loop may be offered (beyond 1: how a
layer behaves past the baseline's saturation)."""
MAX_MEDIA_BITRATE = 100e9
"""Highest media bit rate per stream the server accepts."""
MAX_MEDIA_PPS = 2e6
"""Most media packets per second in total the server accepts."""


def _message_size(key: str, value: int, protocol: str, low: int = 1) -> None:
    """ValueError unless ``value`` is a message size the probe accepts for ``protocol``."""
    lo, hi = ((max(low, MIN_UDP_MESSAGE), MAX_UDP_MESSAGE) if protocol == "udp"
              else (low, MAX_TCP_MESSAGE))
    if value < lo:
        raise ValueError(f"{key} of {value} bytes is less than the probe accepts over "
                         f"{protocol} ({lo} bytes)")
    if value > hi:
        limit = "65507 bytes, the largest UDP payload" if protocol == "udp" else "64 MiB"
        raise ValueError(f"{key} of {value} bytes is more than the probe accepts over "
                         f"{protocol} ({limit})")


def _session(duration: float, warmup: float) -> None:
    if duration + warmup > MAX_SESSION_S:
        raise ValueError(f"duration + warmup ({duration + warmup:g} s) is longer than the "
                         f"probe server accepts ({MAX_SESSION_S:g} s)")


ROUND_TRIPS = Slicing(0.1, DEFAULT_PIECE, warms=True)
"""rr and crr: 100 ms of each path a round, in 10 ms visits (ten cycles over the paths in a
fresh random order each), each visit's first round trips unrecorded (docs/measurements.md:
"Pieces")."""


class _Options(WorkloadOptions):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    min_nodes: ClassVar[int] = 2
    """Nodes the mode needs (server and client; barrier: two ranks at least)."""

    port: int = Field(DEFAULT_PORT, ge=1, le=65535)
    interval: Duration = Field(1.0, ge=0.01)
    """Seconds between interval events (at least 10 ms)."""

    def service_ports(self) -> tuple[int, ...]:
        return (self.port,)



Side = Literal["node", "host"]


class _PlacedOptions(_Options):
    """Client/server modes: each side in a lab node (the layer under test) or on its
    emulated host's own network stack (native): mixed placement, as a study's "client on
    the direct host, server in a container"."""

    paired_client: ClassVar[str] = "vnetbench.workloads.probe.paired:InterleavedSession"
    """The probe's paired client, for the modes that slice (rr, crr, stream)."""

    client: Side = "node"
    """Where the client runs: ``node`` (node 1, in the layer) or ``host`` (node 1's host)."""
    server: Side = "node"
    """Where the server runs: ``node`` (node 0, in the layer) or ``host`` (node 0's host)."""

    def labels(self) -> dict[str, str]:
        """Labels every sample of this workload's run carries (evidence included), so two
        runs of one mode in a trial stay apart: the placement, ``in-layer`` (the default)
        or the native sides (``client-host``, ...)."""
        return {"placement": native_sides(self.client, self.server) or "in-layer"}


class RrOptions(_PlacedOptions):
    """Request/response (netperf TCP_RR / UDP_RR)."""

    slicing: ClassVar[Slicing | None] = ROUND_TRIPS

    circuits: bool = False
    """Measure every pair of emulated hosts (a node of host i serving, one of host k
    measuring), one pair after another, labelled ``circuit=i-k``: a WAN's circuits, e.g. with
    ``link.pairs`` giving each its own delay."""

    protocol: Literal["tcp", "udp"] = "tcp"
    request: Size = Field(100, ge=1)
    response: Size = Field(200, ge=1)
    duration: Duration = Field(5.0, gt=0)
    burst: int = Field(1, ge=1, le=1024)
    warmup: Duration = Field(0.0, le=MAX_WARMUP_S)
    flows: int = Field(1, ge=1, le=1024)
    """TCP connections the transactions run over: each a closed loop of its own (neper's
    many flows) or, with ``rate``, sharing the open loop's arrivals in turn."""
    rate: float = Field(0.0, ge=0.0, le=1e6)
    """Open loop: requests a second in all, each sent at its arrival time whether or not
    earlier replies came back; latency counted from the arrival time (coordinated omission
    corrected, as wrk2 does). 0: closed loop."""
    share: float = Field(0.0, ge=0.0, le=MAX_SHARE)
    """Open loop at this share of the baseline's capacity (0.5: half of it), found first in
    the run (``run.capacity``): the rate the baseline's path sustains as a closed loop over
    the same flows, one request in flight on each; every layer is then offered the same
    rate. An open loop can go beyond it (requests queue on a flow), hence shares above 1.
    0: ``rate`` says."""
    arrivals: Literal["poisson", "constant"] = "poisson"
    """Open loop: exponential gaps between arrivals (Poisson) or even ones."""
    wait: Literal["block", "spin"] = "block"
    """Open loop: how the client waits for each send time and for the replies. ``block``
    sleeps and blocks a reader per flow (an idle CPU's wake-up is then part of the latency,
    tens of microseconds on a VM); ``spin`` busy-polls every flow from one thread, as
    sockperf's fixed-rate mode paces (one CPU kept busy for the run). Labelled
    ``wait=spin``."""

    def measurements(self, hosts: int) -> int:
        return hosts * (hosts - 1) // 2 if self.circuits else 1

    def labels(self) -> dict[str, str]:
        """The placement; ``flows`` for many flows and ``loop=open`` for an open loop (each a
        variant of the workload of its own in the headline), the open loop's ``offered``
        rate (``2000/s``: a configuration, so a sweep of ``rate`` draws one curve) and
        ``wait=spin`` for a spinning client."""
        out = super().labels()
        if self.flows != 1:
            out["flows"] = str(self.flows)
        if self.rate or self.share:
            out["loop"] = "open"
        if self.rate:
            out["offered"] = f"{self.rate:g}/s"
        if self.wait != "block":
            out["wait"] = self.wait
        return out

    def capacity_probe(self) -> RrOptions | None:
        if not self.share:
            return None
        return self.model_copy(update={"share": 0.0, "rate": 0.0, "wait": "block"})  # closed

    def at_capacity(self, capacity: float) -> RrOptions:
        if not self.share:
            return self
        return self.model_copy(update={"rate": float(max(1, round(self.share * capacity)))})

    def offer(self) -> Offer:
        return Offer(self.protocol)

    def interleave_refusal(self) -> str | None:
        if self.protocol != "tcp" or self.burst != 1 or self.circuits:
            return "interleaves over TCP with one transaction in flight, without circuits"
        if self.flows != 1 or self.rate or self.share:
            return ("interleaves one closed-loop flow only (flows, rate and share run whole "
                    "each round)")
        return None

    @model_validator(mode="after")
    def _sizes(self) -> RrOptions:
        if self.protocol == "udp" and (self.flows != 1 or self.rate or self.share):
            raise ValueError("flows, rate and share apply to TCP only")
        if self.rate and self.share:
            raise ValueError("give the open loop's load once: rate (requests a second) or "
                             "share (of the baseline's capacity), not both")
        if (self.rate or self.share) and self.burst != 1:
            raise ValueError("burst applies to the closed loop; an open loop (rate, share) "
                             "has no fixed number in flight")
        if self.wait != "block" and not (self.rate or self.share):
            raise ValueError("wait applies to the open loop; give rate or share (a closed "
                             "loop blocks on its one reply)")
        if self.protocol == "udp" and min(self.request, self.response) < MIN_UDP_MESSAGE:
            raise ValueError("UDP request and response must be at least 32 bytes (header)")
        _message_size("request", self.request, self.protocol)
        _message_size("response", self.response, self.protocol)
        _session(self.duration, self.warmup)
        return self


class CrrOptions(_PlacedOptions):
    """Connect, request, response, close (netperf TCP_CRR)."""

    slicing: ClassVar[Slicing | None] = ROUND_TRIPS

    request: Size = Field(100, ge=12)
    response: Size = Field(200, ge=1)
    duration: Duration = Field(5.0, gt=0)
    warmup: Duration = Field(0.0, le=MAX_WARMUP_S)

    @model_validator(mode="after")
    def _sizes(self) -> CrrOptions:
        _message_size("request", self.request, "tcp", low=12)
        _message_size("response", self.response, "tcp")
        _session(self.duration, self.warmup)
        return self


class StreamOptions(_PlacedOptions):
    """Bulk transfer client -> server."""

    slicing: ClassVar[Slicing | None] = Slicing(0.25, 0.025)
    """250 ms a round (a stream needs time to fill its window) in ten 25 ms visits spread
    over the round, the connections kept open between them: a pause of the machine or one of
    its slower modes falls on a tenth of a path's slice, not on the whole of it (one visit a
    round left the A/A goodput floor at up to 5.8 %, ten at up to 4.3 %, in two stream-only
    runs of each on 2026-12-07; docs/measurements.md "Streams in pieces")."""

    protocol: Literal["tcp", "udp"] = "tcp"
    streams: int = Field(1, ge=1, le=1024)
    send_size: Size | None = Field(None, ge=1)
    duration: Duration = Field(5.0, gt=0)
    bitrate: Rate | None = Field(None, gt=0)
    warmup: Duration = Field(0.0, le=MAX_WARMUP_S)
    nodelay: bool = False
    """TCP_NODELAY on the data connections; off (Nagle on) as iperf3 and netperf do."""
    direction: Literal["forward", "reverse", "both"] = "forward"
    """``forward``: node 1 sends to node 0; ``reverse``: node 0 sends to node 1; ``both``:
    the two at once (each flow's samples labelled ``flow``). Every sample of a reverse or
    bidirectional run, the CPU evidence included, is labelled ``direction``, so the CPU cost
    of sending and of receiving is charged separately."""

    def labels(self) -> dict[str, str]:
        return {**super().labels(), "direction": self.direction}

    def offer(self) -> Offer:
        return Offer(self.protocol, self.bitrate or 0.0)

    def interleave_refusal(self) -> str | None:
        if self.protocol != "tcp" or self.direction != "forward":
            return "interleaves forward TCP streams only"
        return None

    @model_validator(mode="after")
    def _bitrate_udp_only(self) -> StreamOptions:
        if self.bitrate is not None and self.protocol != "udp":
            raise ValueError("bitrate applies to UDP streams only")
        if self.nodelay and self.protocol != "tcp":
            raise ValueError("nodelay applies to TCP streams only")
        if self.send_size is not None:
            _message_size("send_size", self.send_size, self.protocol)
        _session(self.duration, self.warmup)
        return self


class GapsOptions(_PlacedOptions):
    """Constant-rate UDP messages; send and receive gap distributions."""

    rate: float = Field(1000.0, gt=0, le=1e6)
    size: Size = Field(64, ge=32, le=65507)
    duration: Duration = Field(5.0, gt=0)


class BarrierOptions(_Options):
    """Dissemination barrier, one rank per node: a fixed number of rounds or a duration."""

    port: int = Field(BARRIER_PORT, ge=1, le=65535)
    rounds: int | None = Field(None, ge=1, le=1_000_000_000)
    duration: Duration | None = Field(None, gt=0)
    connect_timeout: Duration = Field(30.0, gt=0)

    @model_validator(mode="after")
    def _rounds_or_duration(self) -> BarrierOptions:
        if self.rounds is not None and self.duration is not None:
            raise ValueError("give rounds or duration, not both")
        if self.rounds is None and self.duration is None:
            self.rounds = 1000
        return self


class MediaOptions(_PlacedOptions):
    """K constant-bitrate UDP streams server -> client."""

    streams: int = Field(4, ge=1, le=1024)
    bitrate: Rate = Field(2e6, gt=0, le=MAX_MEDIA_BITRATE)
    packet_size: Size = Field(1316, ge=32, le=65507)
    duration: Duration = Field(5.0, gt=0)

    def offer(self) -> Offer:
        return Offer(None, self.bitrate, summed_senders=self.streams)

    @model_validator(mode="after")
    def _packet_rate(self) -> MediaOptions:
        pps = self.bitrate / (self.packet_size * 8) * self.streams
        if pps > MAX_MEDIA_PPS:
            raise ValueError(f"{self.streams} stream(s) of {self.bitrate:g} bit/s in "
                             f"{self.packet_size}-byte packets is {pps:.0f} packets/s; the probe "
                             "sends at most 2e6: lower bitrate or streams, or raise packet_size")
        return self


def _fmt(value: float) -> str:
    return f"{value:g}"


def hostport(addr: str, port: int) -> str:
    """``addr:port`` (``[addr]:port`` for IPv6)."""
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def _save(raw_dir: Path, name: str, result: subprocess.CompletedProcess[str]) -> Path:
    raw_dir.mkdir(parents=True, exist_ok=True)
    path = raw_dir / name
    path.write_text(result.stdout or "")
    if result.stderr and result.stderr.strip():
        path.with_suffix(".stderr").write_text(result.stderr)
    return path


def _parsed(mode: str, result: subprocess.CompletedProcess[str]) -> ProbeResult:
    parsed = parse_output(result.stdout or "", mode, result.stderr or "")
    if result.returncode != 0:
        tail = " | ".join((result.stderr or result.stdout or "").strip().splitlines()[-3:])
        raise WorkloadError(f"{PROBE} {mode} exited {result.returncode}: {tail}")
    return parsed


@dataclass(frozen=True)
class Pair:
    """One client/server run of a mode: who serves, who measures, the labels that tell this
    run from the others of the same workload, and the suffix of its raw file."""

    server: Node
    client: Node
    labels: dict[str, str] = field(default_factory=dict)
    suffix: str = ""


def _circuits(lab: LabView) -> list[Pair]:
    """One pair per two emulated hosts: the first node of host i serves, the first node of
    host k measures (labels ``circuit=i-k``), as a WAN's sites measure each circuit."""
    firsts: dict[int, Node] = {}
    for node in lab.nodes:
        firsts.setdefault(node.host, node)
    if len(firsts) < 2:
        raise WorkloadError("circuits needs nodes on at least 2 emulated hosts")
    hosts = sorted(firsts)
    return [Pair(firsts[i], firsts[k], {"circuit": f"{i}-{k}"}, f"-{i}-{k}")
            for n, i in enumerate(hosts) for k in hosts[n + 1:]]


class ProbeClientServer(WorkloadBase):
    """A client/server probe mode: ``serve`` on node 0, the client on node 1 (either side on
    its host's own stack with ``client``/``server: host``; a stream's ``direction`` swaps
    them, or runs both pairs at once)."""

    def __init__(self, mode: str, options: _PlacedOptions, client_args: list[str],
                 run_seconds: float, uses_udp: bool, detail: str) -> None:
        self.mode = mode
        self.name = f"probe-{mode}"
        self.options = options
        self.client_args = client_args
        self.run_seconds = run_seconds
        self.uses_udp = uses_udp
        self.detail = detail
        self._servers: list[subprocess.Popen[bytes]] = []
        self._ports: dict[int, int] = {}
        """Port each server (by ``id``) listens on."""
        self._prepared: list[Pair] = []
        self._log_dir: Path | None = None
        self.histograms: list[HistogramRecord] = []
        """The latency histograms of the last ``run`` (labelled like its samples)."""

    def _pairs(self, lab: LabView) -> list[Pair]:
        if len(lab.nodes) < 2:
            raise WorkloadError(f"{self.name} needs 2 nodes, the lab has {len(lab.nodes)}")
        o = self.options
        if isinstance(o, RrOptions) and o.circuits:
            return _circuits(lab)
        first, second = lab.nodes[0], lab.nodes[1]
        server = lab.host_node(first.host) if o.server == "host" else first
        client = lab.host_node(second.host) if o.client == "host" else second
        direction = o.direction if isinstance(o, StreamOptions) else "forward"
        if direction == "reverse":
            return [Pair(client, server)]
        if direction == "both":
            return [Pair(server, client, {"flow": "forward"}, "-forward"),
                    Pair(client, server, {"flow": "reverse"}, "-reverse")]
        return [Pair(server, client)]

    def server_pids(self) -> list[int]:
        """After ``prepare``: the PIDs of the servers it started."""
        return [proc.pid for proc in self._servers]

    def served(self) -> list[tuple[Pair, int]]:
        """After ``prepare``: each client/server pair with the port its server listens on."""
        return [(pair, self._ports[id(pair.server)]) for pair in self._prepared]

    @property
    def _concurrent(self) -> bool:
        """Both directions of a bidirectional stream run at once; circuits one by one."""
        return isinstance(self.options, StreamOptions) and self.options.direction == "both"

    def prepare(self, lab: LabView) -> None:
        """Start a server on every pair's server node; on any failure, what it started is
        stopped and its log directory removed before the error goes on. The logs go in the
        run's work directory, which ``vnetbench clean`` removes after a killed run (in the
        system's temporary directory a SIGKILL left them)."""
        probe = find_binary(PROBE)
        self._log_dir = Path(tempfile.mkdtemp(prefix="vnbp-serve-", dir=lab.work_dir))
        try:
            self._prepared = self._pairs(lab)
            servers = {id(p.server): p.server for p in self._prepared}
            for k, server in enumerate(servers.values()):
                port = lab.listen_port(server, self.options.port)
                self._ports[id(server)] = port
                self._servers.append(server.spawn([str(probe), "serve", "--port", str(port)],
                                                  log=self._log_dir / f"serve{k}.log"))
                server.wait_listening(port, proto="tcp", timeout=10.0)
                if self.uses_udp:
                    server.wait_listening(port, proto="udp", timeout=10.0)
        except BaseException:
            with contextlib.suppress(VnetbenchError, OSError):
                self.cleanup(lab)
            raise

    def run(self, lab: LabView, raw_dir: Path) -> list[Sample]:
        self.histograms = []
        if not self._servers:
            raise WorkloadError(f"{self.name}: run() before prepare()")
        pairs = self._prepared
        probe = find_binary(PROBE)
        argvs = []
        for pair in pairs:
            addr, published = lab.endpoint(pair.client, pair.server,
                                           self._ports[id(pair.server)],
                                           proto="tcp+udp" if self.uses_udp else "tcp")
            argvs.append([str(probe), self.mode, "--server", hostport(addr, published),
                          "--interval", _fmt(self.options.interval), *self.client_args])
        timeout = self.run_seconds + RUN_SLACK_S

        def one(k: int) -> subprocess.CompletedProcess[str]:
            return pairs[k].client.run(argvs[k], timeout=timeout, check=False)

        if self._concurrent:
            with ThreadPoolExecutor(max_workers=len(pairs)) as pool:
                results = list(pool.map(one, range(len(pairs))))
        else:
            results = [one(k) for k in range(len(pairs))]
        samples: list[Sample] = []
        for pair, result in zip(pairs, results, strict=True):
            _save(raw_dir, f"{self.mode}-{self.detail}{pair.suffix}.jsonl", result)
            labels = {"server": pair.server.name, "client": pair.client.name, **pair.labels}
            parsed = _parsed(self.mode, result)
            samples += to_samples(parsed, labels)
            self.histograms += histogram_records(parsed, labels)
        return samples

    def cleanup(self, lab: LabView) -> None:
        """Stop every server started (each tried, the first error raised after), then remove
        the log directory whatever happened."""
        servers, self._servers, self._ports, self._prepared = self._servers, [], {}, []
        try:
            failed: list[BaseException] = []
            for proc in servers:
                try:
                    lab.stop(proc)
                except (VnetbenchError, OSError) as exc:
                    failed.append(exc)
            if failed:
                raise failed[0]
        finally:
            if self._log_dir is not None:
                shutil.rmtree(self._log_dir, ignore_errors=True)
                self._log_dir = None


def rr_workload(options: RrOptions) -> ProbeClientServer:
    o = options
    if o.share and not o.rate:
        raise WorkloadError("rr: an open loop's share becomes a rate once the run has found "
                            "the baseline's capacity (run.capacity); it cannot run before")
    args = ["--protocol", o.protocol, "--request", str(o.request), "--response",
            str(o.response), "--burst", str(o.burst), "--duration", _fmt(o.duration),
            "--warmup", _fmt(o.warmup)]
    if o.flows != 1:
        args += ["--flows", str(o.flows)]
    if o.rate:
        args += ["--rate", _fmt(o.rate), "--arrivals", o.arrivals, "--wait", o.wait]
    return ProbeClientServer("rr", o, args, o.duration + o.warmup, o.protocol == "udp",
                             f"{o.protocol}-{o.request}-{o.response}")


def crr_workload(options: CrrOptions) -> ProbeClientServer:
    o = options
    args = ["--request", str(o.request), "--response", str(o.response),
            "--duration", _fmt(o.duration), "--warmup", _fmt(o.warmup)]
    return ProbeClientServer("crr", o, args, o.duration + o.warmup, False,
                             f"tcp-{o.request}-{o.response}")


def stream_workload(options: StreamOptions) -> ProbeClientServer:
    o = options
    args = ["--protocol", o.protocol, "--streams", str(o.streams),
            "--duration", _fmt(o.duration), "--warmup", _fmt(o.warmup)]
    if o.send_size is not None:
        args += ["--send-size", str(o.send_size)]
    if o.bitrate is not None:
        args += ["--bitrate", str(round(o.bitrate))]
    if o.nodelay:
        args.append("--nodelay")
    return ProbeClientServer("stream", o, args, o.duration + o.warmup, o.protocol == "udp",
                             f"{o.protocol}-x{o.streams}{'-nodelay' if o.nodelay else ''}")


def gaps_workload(options: GapsOptions) -> ProbeClientServer:
    o = options
    args = ["--rate", _fmt(o.rate), "--size", str(o.size), "--duration", _fmt(o.duration)]
    return ProbeClientServer("gaps", o, args, o.duration, True, f"{_fmt(o.rate)}-{o.size}")


def media_workload(options: MediaOptions) -> ProbeClientServer:
    o = options
    args = ["--streams", str(o.streams), "--bitrate", str(round(o.bitrate)),
            "--packet-size", str(o.packet_size), "--duration", _fmt(o.duration)]
    return ProbeClientServer("media", o, args, o.duration, True,
                             f"x{o.streams}-{_fmt(o.bitrate)}")


class BarrierWorkload(WorkloadBase):
    """One barrier rank per node; every rank's samples are labelled with its ``rank``."""

    def __init__(self, options: BarrierOptions) -> None:
        self.name = "probe-barrier"
        self.options = options
        self.histograms: list[HistogramRecord] = []
        """The ``sync_us`` histograms of every rank in the last ``run`` (label ``node``)."""

    def prepare(self, lab: LabView) -> None:
        if len(lab.nodes) < 2:
            raise WorkloadError(f"{self.name} needs at least 2 nodes")
        find_binary(PROBE)

    def _argv(self, lab: LabView, rank: int, ports: list[int]) -> list[str]:
        me = lab.nodes[rank]
        peers = []
        for j, node in enumerate(lab.nodes):
            if j == rank:
                peers.append(hostport(me.ip, ports[j]))
            else:
                addr, port = lab.endpoint(me, node, ports[j], proto="tcp")
                peers.append(hostport(addr, port))
        o = self.options
        argv = [str(find_binary(PROBE)), "barrier", "--rank", str(rank),
                "--peers", ",".join(peers), "--listen", f"0.0.0.0:{ports[rank]}",
                "--connect-timeout", _fmt(o.connect_timeout), "--interval", _fmt(o.interval)]
        if o.duration is not None:
            argv += ["--duration", _fmt(o.duration)]
        else:
            argv += ["--rounds", str(o.rounds)]
        return argv

    def run(self, lab: LabView, raw_dir: Path) -> list[Sample]:
        o = self.options
        self.histograms = []
        raw_dir.mkdir(parents=True, exist_ok=True)
        n = len(lab.nodes)
        ports = [lab.listen_port(node, o.port) for node in lab.nodes]
        budget = o.connect_timeout + (o.duration if o.duration is not None else 600.0)
        others: list[tuple[int, subprocess.Popen[bytes], Path]] = []
        try:
            for rank in range(1, n):
                log = raw_dir / f"barrier-n{n}-rank{rank}.jsonl"
                proc = lab.nodes[rank].spawn(self._argv(lab, rank, ports), log=log)
                others.append((rank, proc, log))
            result = lab.nodes[0].run(self._argv(lab, 0, ports), timeout=budget + RUN_SLACK_S,
                                      check=False)
            _save(raw_dir, f"barrier-n{n}-rank0.jsonl", result)
            labels = {"node": lab.nodes[0].name}
            parsed = _parsed("barrier", result)
            samples = to_samples(parsed, labels)
            histograms = histogram_records(parsed, labels)
            for rank, proc, log in others:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10.0)
                lab.stop(proc)
                parsed = parse_output(log.read_text(errors="replace"), "barrier")
                labels = {"node": lab.nodes[rank].name}
                samples += to_samples(parsed, labels)
                histograms += histogram_records(parsed, labels)
            self.histograms = histograms
        finally:
            for _, proc, _ in others:
                if proc.poll() is None:
                    lab.stop(proc)
        return samples

    def cleanup(self, lab: LabView) -> None:
        """Nothing to stop: ranks end with ``run``."""


PROBE_WORKLOADS: dict[str, Entry] = {
    "rr": registry_entry(RrOptions, rr_workload),
    "crr": registry_entry(CrrOptions, crr_workload),
    "stream": registry_entry(StreamOptions, stream_workload),
    "gaps": registry_entry(GapsOptions, gaps_workload),
    "barrier": registry_entry(BarrierOptions, BarrierWorkload),
    "media": registry_entry(MediaOptions, media_workload),
}
"""Probe mode -> (options model, factory building the Workload from validated options)."""
