"""``iperf3`` as a workload: a tool people trust beside the probe's ``stream``.

``iperf3 -s`` runs in node 0 (or its host's own stack with ``server: host``), ``iperf3 -c
... -J`` in node 1, reaching the server through the layer (a published port on ``nat``:
iperf3's control and data connections share the port, TCP and UDP on the same number).
Options mirror iperf3's: ``protocol`` (-u), ``streams`` (-P), ``bitrate`` (-b, UDP; iperf3's
own 1 Mbit/s when unset), ``length`` (-l), ``reverse`` (-R), ``omit`` (-O: seconds left out
at the start), ``duration`` (-t) and ``interval`` (-i). The whole JSON result is kept as
``raw/.../iperf3-<protocol>-x<streams>[-reverse]-client.out``.

Samples, named as the probe's so a report sets them side by side: ``goodput_bps`` (the
receiver's bits per second), ``bytes`` (received), ``sent_bps``; TCP ``retransmits``; UDP
``jitter_us``, ``lost``, ``loss`` (a fraction) and ``packets``; ``goodput_interval_bps`` per
full interval (label ``interval``); and the client process's CPU as ``cpu_user_s`` /
``cpu_sys_s`` (from iperf3's ``host_user``/``host_system`` percentages of the test's
duration), from which the report derives the CPU cost per Gbit/s.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from vnetbench.errors import WorkloadError
from vnetbench.results.model import Sample
from vnetbench.units import Duration, Rate, Size
from vnetbench.workloads.base import Entry, Offer, WorkloadOptions, native_sides, registry_entry
from vnetbench.workloads.served import ClientRun, Pair, ServedWorkload, find_tool, first_pair

if TYPE_CHECKING:
    from vnetbench.host.node import Node
    from vnetbench.workloads.labview import LabView

IPERF3_PORT = 5201
RUN_SLACK_S = 30.0
"""Seconds a client may run beyond its test (connecting, the final exchange of results)."""
MAX_UDP_LENGTH = 65507
MIN_UDP_LENGTH = 16
"""iperf3's smallest UDP block ("block size invalid (minimum = 16 bytes ...)")."""
MAX_TCP_LENGTH = 1024 * 1024
"""iperf3's largest TCP block (MAX_BLOCKSIZE: "block size too large (maximum = 1048576
bytes)")."""


def tool() -> str:
    return find_tool("iperf3")


class Iperf3Options(WorkloadOptions):
    """iperf3 client in node 1 against ``iperf3 -s`` in node 0."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    min_nodes: ClassVar[int] = 2

    port: int = Field(IPERF3_PORT, ge=1, le=65535)
    protocol: Literal["tcp", "udp"] = "tcp"
    streams: int = Field(1, ge=1, le=128)
    """Parallel streams (-P; iperf3 allows at most 128)."""
    duration: Duration = Field(5.0, ge=1.0, le=86_400.0)
    """Seconds of test (-t; whole seconds at least 1)."""
    omit: Duration = Field(0.0, ge=0.0, le=3600.0)
    """Seconds left out at the start (-O, the slow-start phase)."""
    interval: Duration = Field(1.0, ge=0.1, le=60.0)
    """Seconds between interval reports (-i)."""
    bitrate: Rate | None = Field(None, gt=0)
    """Target rate (-b); UDP only."""
    length: Size | None = Field(None, ge=1)
    """Bytes per write (-l)."""
    reverse: bool = False
    """The server sends (-R)."""
    client: Literal["node", "host"] = "node"
    """Where the client runs: node 1 (in the layer) or node 1's host's own stack."""
    server: Literal["node", "host"] = "node"
    """Where the server runs: node 0 (in the layer) or node 0's host's own stack."""

    @model_validator(mode="after")
    def _consistent(self) -> Iperf3Options:
        if self.bitrate is not None and self.protocol != "udp":
            raise ValueError("bitrate applies to UDP (iperf3 -u -b); TCP runs at full speed")
        if self.length is not None and self.protocol == "udp" and self.length > MAX_UDP_LENGTH:
            raise ValueError(f"length of {self.length} bytes is more than a UDP datagram "
                             f"carries ({MAX_UDP_LENGTH})")
        if self.length is not None and self.protocol == "udp" and self.length < MIN_UDP_LENGTH:
            raise ValueError(f"length of {self.length} bytes is less than iperf3 sends over "
                             f"UDP ({MIN_UDP_LENGTH}: its header)")
        if self.length is not None and self.protocol == "tcp" and self.length > MAX_TCP_LENGTH:
            raise ValueError(f"length of {self.length} bytes is more than iperf3 writes at once "
                             f"over TCP ({MAX_TCP_LENGTH}, 1 MiB)")
        if self.duration != math.floor(self.duration):
            raise ValueError(f"duration {self.duration:g} s: iperf3 runs whole seconds")
        return self

    def offer(self) -> Offer:
        return Offer(self.protocol, self.bitrate or 0.0)

    def labels(self) -> dict[str, str]:
        """The placement when a side is native, and ``direction`` for a reverse test."""
        sides = native_sides(self.client, self.server)
        out = {"placement": sides} if sides else {}
        return {**out, "direction": "reverse"} if self.reverse else out

    def service_ports(self) -> tuple[int, ...]:
        return (self.port,)



def _num(data: Mapping[str, object], key: str) -> float | None:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def parse_iperf3(text: str) -> dict[str, Any]:
    """iperf3's ``-J`` document; WorkloadError if it is not one or reports an error."""
    try:
        data = json.loads(text)
    except ValueError:
        tail = " | ".join(text.strip().splitlines()[-3:])
        raise WorkloadError(f"iperf3 printed no JSON result: {tail or '(nothing)'}") from None
    if not isinstance(data, dict):
        raise WorkloadError("iperf3's result is not a JSON object")
    if data.get("error"):
        raise WorkloadError(f"iperf3: {data['error']}")
    if not isinstance(data.get("end"), dict) or not data["end"]:
        raise WorkloadError("iperf3's result has no end summary (the test did not finish)")
    return data


def iperf3_samples(data: Mapping[str, Any], interval_s: float = 1.0) -> list[Sample]:
    """Samples of one iperf3 ``-J`` result (see the module docstring)."""
    end = data["end"]
    received = end.get("sum_received") or end.get("sum") or {}
    sent = end.get("sum_sent") or end.get("sum") or {}
    udp = "jitter_ms" in (end.get("sum") or {})
    summary = end.get("sum", {}) if udp else received
    out: list[Sample] = []

    def add(metric: str, value: float | None, unit: str, **labels: str) -> None:
        if value is not None:
            out.append(Sample(metric, value, unit, dict(labels)))

    add("goodput_bps", _num(received, "bits_per_second"), "bps")
    add("bytes", _num(received, "bytes"), "B")
    add("sent_bps", _num(sent, "bits_per_second"), "bps")
    if not udp:
        add("retransmits", _num(sent, "retransmits"), "count")
    else:
        jitter = _num(summary, "jitter_ms")
        add("jitter_us", jitter * 1e3 if jitter is not None else None, "us")
        add("lost", _num(summary, "lost_packets"), "count")
        add("packets", _num(summary, "packets"), "count")
        lost_pct = _num(summary, "lost_percent")
        add("loss", lost_pct / 100.0 if lost_pct is not None else None, "fraction")
    for k, interval in enumerate(data.get("intervals") or []):
        part = interval.get("sum", {}) if isinstance(interval, dict) else {}
        seconds = _num(part, "seconds")
        if part.get("omitted") or seconds is None or seconds < 0.8 * interval_s:
            continue  # omitted or cut short: not a full interval
        add("goodput_interval_bps", _num(part, "bits_per_second"), "bps", interval=str(k))
    cpu = end.get("cpu_utilization_percent") or {}
    seconds = _num(sent, "seconds") or _num(received, "seconds")
    user, system = _num(cpu, "host_user"), _num(cpu, "host_system")
    if seconds and user is not None and system is not None:
        add("cpu_user_s", user / 100.0 * seconds, "s")
        add("cpu_sys_s", system / 100.0 * seconds, "s")
    if not out or out[0].metric != "goodput_bps":
        raise WorkloadError("iperf3's result has no received bits per second")
    return out


class Iperf3Workload(ServedWorkload):
    """``iperf3 -s`` in node 0, ``iperf3 -c -J`` in node 1."""

    name = "iperf3"

    def __init__(self, options: Iperf3Options) -> None:
        super().__init__([options.port])
        self.options = options
        self.protocol = "tcp+udp" if options.protocol == "udp" else "tcp"
        self.ready_protocol = "tcp"  # the control connection; UDP data once a test asks
        self.raw_name = (f"iperf3-{options.protocol}-x{options.streams}"
                         + ("-reverse" if options.reverse else ""))

    def pairs(self, lab: LabView) -> list[Pair]:
        tool()
        return [first_pair(lab, self.name, self.options.client, self.options.server)]

    def server_argv(self, lab: LabView, node: Node, ports: list[int]) -> list[str]:
        return [tool(), "-s", "-p", str(ports[0])]

    def client_argv(self, lab: LabView, pair: Pair, endpoints: list[tuple[str, int]]) -> list[str]:
        o = self.options
        addr, port = endpoints[0]
        argv = [tool(), "-c", addr, "-p", str(port), "-J", "-t", f"{o.duration:g}",
                "-i", f"{o.interval:g}", "-P", str(o.streams)]
        if o.omit > 0:
            argv += ["-O", f"{o.omit:g}"]
        if o.protocol == "udp":
            argv.append("-u")
            if o.bitrate is not None:
                argv += ["-b", str(round(o.bitrate))]
        if o.length is not None:
            argv += ["-l", str(o.length)]
        if o.reverse:
            argv.append("-R")
        return argv

    def client_timeout(self) -> float:
        return self.options.duration + self.options.omit + RUN_SLACK_S

    def samples(self, run: ClientRun, raw: Path) -> list[Sample]:
        data = parse_iperf3(run.result.stdout or "")
        return [s.with_labels(protocol=self.options.protocol)
                for s in iperf3_samples(data, self.options.interval)]


IPERF3_WORKLOADS: dict[str, Entry] = {
    "iperf3": registry_entry(Iperf3Options, Iperf3Workload),
}
"""Scenario key -> (options model, factory) for the registry."""
