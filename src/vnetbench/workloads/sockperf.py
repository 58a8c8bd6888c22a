"""``sockperf`` ping-pong as a workload: a latency tool people trust beside the probe's ``rr``.

``sockperf server`` runs in node 0 (or its host's own stack with ``server: host``),
``sockperf ping-pong --full-rtt`` in node 1 against it through the layer (a published port
on ``nat``). Options: ``protocol`` (``--tcp``), ``size`` (-m, bytes per message; sockperf's
header needs 14), ``duration`` (-t, whole seconds), ``mps`` (messages per second, ``max`` by
default as a request/response benchmark runs). sockperf's own output is kept as
``raw/.../sockperf-<protocol>-<size>-client.out``.

Samples, in round-trip microseconds as the probe's ``rr`` (``--full-rtt``; sockperf's
default would be half of it): ``rtt_mean_us``, ``rtt_min_us``, ``rtt_max_us`` and its
percentiles ``rtt_p25_us`` ... ``rtt_p9999_us`` (``rtt_p50_us``, ``rtt_p99_us`` as the
probe's), ``tps`` (messages received per second of the valid, post-warm-up duration) and the
counts ``dropped``, ``duplicated`` and ``out_of_order``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from vnetbench.errors import WorkloadError
from vnetbench.results.model import Sample
from vnetbench.units import Duration, Size
from vnetbench.workloads.base import Entry, Offer, WorkloadOptions, native_sides, registry_entry
from vnetbench.workloads.served import ClientRun, Pair, ServedWorkload, find_tool, first_pair

if TYPE_CHECKING:
    from vnetbench.host.node import Node
    from vnetbench.workloads.labview import LabView

SOCKPERF_PORT = 11111
RUN_SLACK_S = 30.0
MIN_MESSAGE = 14
"""sockperf's smallest message: its header."""
MAX_MESSAGE = 65000
"""sockperf's largest message (``MAX_PAYLOAD_SIZE``)."""


def tool() -> str:
    return find_tool("sockperf")


class SockperfOptions(WorkloadOptions):
    """sockperf ping-pong in node 1 against ``sockperf server`` in node 0."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    min_nodes: ClassVar[int] = 2

    port: int = Field(SOCKPERF_PORT, ge=1, le=65535)
    protocol: Literal["tcp", "udp"] = "tcp"
    size: Size = Field(100, ge=MIN_MESSAGE, le=MAX_MESSAGE)
    """Bytes per message (-m)."""
    duration: Duration = Field(5.0, ge=1.0, le=86_400.0)
    """Seconds of test (-t; whole seconds, sockperf's first 400 ms are its warm-up)."""
    mps: int | Literal["max"] = "max"
    """Messages per second the client sends (``max``: as fast as replies come back)."""
    client: Literal["node", "host"] = "node"
    """``sockperf ping-pong`` in node 1 (the layer) or on node 1's host's own stack."""
    server: Literal["node", "host"] = "node"
    """``sockperf server`` in node 0 (the layer) or on node 0's host's own stack."""

    @model_validator(mode="after")
    def _whole_seconds(self) -> SockperfOptions:
        if self.duration != math.floor(self.duration):
            raise ValueError(f"duration {self.duration:g} s: sockperf runs whole seconds")
        if isinstance(self.mps, int) and not 1 <= self.mps <= 10_000_000:
            raise ValueError("mps: between 1 and 10000000 messages per second, or max")
        return self

    def offer(self) -> Offer:
        return Offer(self.protocol)

    def labels(self) -> dict[str, str]:
        sides = native_sides(self.client, self.server)
        return {"placement": sides} if sides else {}

    def service_ports(self) -> tuple[int, ...]:
        return (self.port,)



_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_VALID = re.compile(r"\[Valid Duration\] RunTime=" + _NUM + r" sec; SentMessages=([0-9]+); "
                    r"ReceivedMessages=([0-9]+)")
_AVG = re.compile(r"====> avg-rtt=" + _NUM)
_PCT = re.compile(r"---> percentile ([0-9.]+) =\s*" + _NUM)
_EDGE = re.compile(r"---> <(MAX|MIN)> observation =\s*" + _NUM)
_COUNTS = re.compile(r"# dropped messages = ([0-9]+); # duplicated messages = ([0-9]+); "
                     r"# out-of-order messages = ([0-9]+)")


def _pct_metric(pct: str) -> str:
    """``99.900`` -> ``rtt_p999_us``, ``50.000`` -> ``rtt_p50_us`` (the probe's names)."""
    digits = pct.rstrip("0").rstrip(".").replace(".", "")
    return f"rtt_p{digits}_us"


def parse_sockperf(text: str) -> list[Sample]:
    """Samples of one ``sockperf ping-pong --full-rtt`` report (see the module docstring);
    WorkloadError when it holds no statistics (sockperf exits 0 after a refused connect)."""
    plain = _ANSI.sub("", text)
    if "avg-latency=" in plain:
        raise WorkloadError("sockperf reported one-way latency; run it with --full-rtt")
    avg, valid = _AVG.search(plain), _VALID.search(plain)
    if avg is None or valid is None:
        errors = [line for line in plain.splitlines() if "ERROR" in line]
        tail = " | ".join((errors or plain.strip().splitlines())[-3:])
        raise WorkloadError(f"sockperf printed no statistics: {tail or '(nothing)'}")
    out = [Sample("rtt_mean_us", float(avg.group(1)), "us")]
    for match in _EDGE.finditer(plain):
        out.append(Sample(f"rtt_{match.group(1).lower()}_us", float(match.group(2)), "us"))
    out += [Sample(_pct_metric(m.group(1)), float(m.group(2)), "us")
            for m in _PCT.finditer(plain)]
    seconds, received = float(valid.group(1)), int(valid.group(3))
    if seconds > 0:
        out.append(Sample("tps", received / seconds, "1/s"))
    counts = _COUNTS.search(plain)
    if counts:
        for name, value in zip(("dropped", "duplicated", "out_of_order"), counts.groups(),
                               strict=True):
            out.append(Sample(name, float(value), "count"))
    return out


class SockperfWorkload(ServedWorkload):
    """``sockperf server`` in node 0, ``sockperf ping-pong`` in node 1."""

    name = "sockperf"

    def __init__(self, options: SockperfOptions) -> None:
        super().__init__([options.port])
        self.options = options
        self.protocol = options.protocol
        self.raw_name = f"sockperf-{options.protocol}-{options.size}"

    def _tcp(self) -> list[str]:
        return ["--tcp"] if self.options.protocol == "tcp" else []

    def pairs(self, lab: LabView) -> list[Pair]:
        tool()
        return [first_pair(lab, self.name, self.options.client, self.options.server)]

    def server_argv(self, lab: LabView, node: Node, ports: list[int]) -> list[str]:
        return [tool(), "server", *self._tcp(), "-i", "0.0.0.0", "-p", str(ports[0])]

    def client_argv(self, lab: LabView, pair: Pair, endpoints: list[tuple[str, int]]) -> list[str]:
        o = self.options
        addr, port = endpoints[0]
        return [tool(), "ping-pong", *self._tcp(), "-i", addr, "-p", str(port),
                "-m", str(o.size), "-t", f"{o.duration:g}", "--mps", str(o.mps), "--full-rtt"]

    def client_timeout(self) -> float:
        return self.options.duration + RUN_SLACK_S

    def samples(self, run: ClientRun, raw: Path) -> list[Sample]:
        text = (run.result.stdout or "") + (run.result.stderr or "")
        return [s.with_labels(protocol=self.options.protocol) for s in parse_sockperf(text)]


SOCKPERF_WORKLOADS: dict[str, Entry] = {
    "sockperf": registry_entry(SockperfOptions, SockperfWorkload),
}
"""Scenario key -> (options model, factory) for the registry."""
