"""``command``: bring your own workload. A server and a client of the user's, run across the
lab like the built-in workloads, with their metrics read from the client's output.

    workloads:
      - command:
          name: http                                   # label app=http
          server: [python3, -m, http.server, "{port}", --directory, "{workdir}"]
          client: [python3, client.py, "{addr}", "{port}"]
          ports: [8000]                                # what the server listens on
          metrics: json                                # json | regex | exit
          timeout: 30s                                 # the client is killed after this

Placement: ``pair`` (default) runs the server in node 0 and the client in node 1; ``node``
runs a server and a client in every node, node i's client reaching node i+1's server (the
last node's the first's), all clients at once, and gives every client ``{peers}``, every
server as that node reaches it (a distributed system's members). A node may be on its
host's own stack with ``client_on: host`` / ``server_on: host`` (``pair`` only).

Placeholders, replaced in each argument (``{{`` and ``}}`` stand for braces):
``{port}``, ``{port0}``, ``{port1}``... the port(s) the server listens on (server side) or
reaches them at (client side: a published port on ``nat``), ``{addr}`` the server's address
as the client reaches it (without ports: the server node's own address), ``{server}``
``addr:port``, ``{peers}`` (``node`` placement) every server's ``addr:port``
comma-separated, ``{node}`` the node's name, ``{ip}`` its own address, ``{rank}`` its
index, ``{nodes}`` the node count, ``{workdir}`` a directory for this workload (removed
after the trial). Commands are argv lists, never run through a shell unless the
user writes ``[sh, -c, ...]``.

The server is spawned in its node (recorded in the run's state, stopped by PID after the
client); the run waits until every port listens (``protocol``: tcp, udp or tcp+udp) for at
most ``ready_timeout``. The client must end within ``timeout`` and exit 0, else the trial
fails with its output's tail. Its output is kept as ``raw/.../command-<name>-client.out``
(``-client-<node>.out`` with ``node`` placement), the servers' as ``...-server<k>-<node>.log``. Metrics (``metrics``):

* ``json``: every line of the client's stdout that is a JSON object gives samples: a line
  ``{"metric": "rps", "value": 1234.5, "unit": "1/s"}`` one sample, any other object one
  sample per number in it (key = metric). A metric given on several lines keeps its last
  value (print a summary line last).
* ``regex``: ``patterns`` maps a metric to a regular expression; the last match's group
  ``value`` (or its first group) is the value.
* ``exit``: ``elapsed_s``, the client's wall time from start to exit.

Units come from ``units`` (metric -> unit), else from the metric's suffix (``_us``, ``_ms``,
``_s``, ``_bps``, ``_bytes``...). A metric named like a built-in headline figure (``tps``,
``rtt_p50_us``, ``rtt_p99_us``, ``goodput_bps``) lands in the report's headline table;
every metric is in its detail table, in ``compare --all-metrics`` and in ``export``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from vnetbench.errors import WorkloadError
from vnetbench.results.model import Sample
from vnetbench.units import Duration
from vnetbench.workloads.base import Entry, Offer, WorkloadOptions, native_sides, registry_entry
from vnetbench.workloads.jsonlines import json_objects
from vnetbench.workloads.served import ClientRun, Pair, ServedWorkload, first_pair, hostport

if TYPE_CHECKING:
    from vnetbench.host.node import Node
    from vnetbench.workloads.labview import LabView

METRIC_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([a-z]+[0-9]*)\}")
SERVER_NAMES = frozenset({"port", "node", "ip", "rank", "nodes", "workdir"})
CLIENT_NAMES = SERVER_NAMES | {"addr", "server", "peers"}
MAX_ARGS = 256
MAX_PORTS = 16
UNIT_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("_ns", "ns"), ("_us", "us"), ("_ms", "ms"), ("_s", "s"), ("_bps", "bps"),
    ("_bytes", "B"), ("_pct", "%"), ("_per_s", "1/s"), ("tps", "1/s"), ("rps", "1/s"),
    ("qps", "1/s"),
)


def unit_of(metric: str, units: Mapping[str, str]) -> str:
    """The unit of ``metric``: as ``units`` says, else from its suffix, else ``1``."""
    if metric in units:
        return units[metric]
    for suffix, unit in UNIT_SUFFIXES:
        if metric.endswith(suffix):
            return unit
    return "1"


def _placeholders(arg: str) -> set[str]:
    return {m.group(1) for m in PLACEHOLDER.finditer(arg) if m.group(1)}


def fill(argv: tuple[str, ...], values: Mapping[str, str]) -> list[str]:
    """``argv`` with every ``{name}`` replaced from ``values`` (``{{``/``}}``: a brace)."""
    def one(match: re.Match[str]) -> str:
        if match.group(0) in ("{{", "}}"):
            return match.group(0)[0]
        return values[match.group(1)]
    return [PLACEHOLDER.sub(one, arg) for arg in argv]


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
"""A variable name the environment can carry (``=`` would split it, a NUL end it)."""


class CommandOptions(WorkloadOptions):
    """A user's server and client (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    min_nodes: ClassVar[int] = 2

    name: str = Field("command", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
    """Label ``app`` of every sample: tells several command workloads of a scenario apart."""
    server: tuple[str, ...] | None = None
    """The server's argv (none: the client alone)."""
    client: tuple[str, ...]
    """The client's argv; its output gives the metrics."""
    ports: tuple[int, ...] = ()
    """Ports the server listens on (``{port}`` is the first, ``{portK}`` the K-th from 0);
    each is published on layers that publish ports (``nat``, ``docker-nat``)."""
    protocol: Literal["tcp", "udp", "tcp+udp"] = "tcp"
    """What the server's ports are: waited for, and published, as this."""
    placement: Literal["pair", "node"] = "pair"
    """``pair``: one server in node 0 and one client in node 1; ``node``: a server and a
    client in every node, each client given every server (``{peers}``)."""
    client_on: Literal["node", "host"] = "node"
    """``pair``: the client in node 1 (the layer) or on node 1's host's own stack."""
    server_on: Literal["node", "host"] = "node"
    """``pair``: the server in node 0 (the layer) or on node 0's host's own stack."""
    timeout: Duration = Field(60.0, gt=0, le=86_400.0)
    """Seconds the client may run; it is killed and the trial fails after that."""
    ready_timeout: Duration = Field(10.0, gt=0, le=600.0)
    """Seconds the server may take to listen on every port."""
    metrics: Literal["json", "regex", "exit"] = "exit"
    """Where the metrics come from: ``json`` (each JSON line of the client's output, a
    number per key), ``regex`` (``patterns`` over its output) or ``exit`` (its wall time as
    ``elapsed_s``)."""
    patterns: dict[str, str] = Field(default_factory=dict)
    """``regex`` metrics: metric name -> regular expression (group ``value`` or the first)."""
    units: dict[str, str] = Field(default_factory=dict)
    """Unit per metric, where its name's suffix does not say it."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables added for the server and the client. Stored verbatim with the
    run (``run.json`` keeps the scenario as run, and every report shows it): never put a
    secret here; let the command read it from a file only its machine holds."""

    @field_validator("server", "client")
    @classmethod
    def _argv(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        if not value or not value[0].strip():
            raise ValueError("give the command as a list, program first, e.g. [python3, "
                             "client.py, '{addr}']")
        if len(value) > MAX_ARGS:
            raise ValueError(f"at most {MAX_ARGS} arguments")
        bad = next((i for i, arg in enumerate(value) if "\0" in arg), None)
        if bad is not None:
            raise ValueError(f"argument {bad} holds a NUL byte, which no program's argv can "
                             "carry: remove it")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for key, text in value.items():
            if not ENV_NAME.fullmatch(key):
                raise ValueError(f"{key[:40]!r} is not a variable name (letters, digits "
                                 "and _, not starting with a digit; no '=')")
            if "\0" in text:
                raise ValueError(f"env.{key} holds a NUL byte, which no environment can carry: "
                                 "remove it")
        return value

    @field_validator("ports")
    @classmethod
    def _ports(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if len(value) > MAX_PORTS or len(set(value)) != len(value):
            raise ValueError(f"at most {MAX_PORTS} different ports")
        if any(not 1 <= p <= 65535 for p in value):
            raise ValueError("ports are numbers from 1 to 65535")
        return value

    @field_validator("patterns")
    @classmethod
    def _patterns(cls, value: dict[str, str]) -> dict[str, str]:
        for metric, pattern in value.items():
            _metric_name(metric)
            try:
                compiled = re.compile(pattern, re.M)
            except re.error as exc:
                raise ValueError(f"patterns.{metric}: not a regular expression: {exc}") from None
            if compiled.groups == 0:
                raise ValueError(f"patterns.{metric}: put the number in a group, e.g. "
                                 r"'rps=([0-9.]+)'")
        return value

    @field_validator("units")
    @classmethod
    def _units(cls, value: dict[str, str]) -> dict[str, str]:
        for metric, unit in value.items():
            _metric_name(metric)
            if not re.fullmatch(r"[A-Za-z0-9_/%().µ-]{1,20}", unit):
                raise ValueError(f"units.{metric}: {unit[:30]!r} is not a unit (e.g. us, 1/s)")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> CommandOptions:
        if self.metrics == "regex" and not self.patterns:
            raise ValueError("metrics: regex needs patterns (metric -> regular expression)")
        if self.metrics != "regex" and self.patterns:
            raise ValueError("patterns apply to metrics: regex")
        if self.server is not None and not self.ports:
            raise ValueError("a server needs ports: the ports it listens on (e.g. [8000]), so "
                             "the run knows when it is ready and the layer can publish them")
        if self.placement == "node" and "host" in (self.client_on, self.server_on):
            raise ValueError("client_on/server_on: host applies to placement: pair")
        for side, argv, allowed in (("server", self.server, SERVER_NAMES),
                                    ("client", self.client, CLIENT_NAMES)):
            for name in sorted(set().union(*(_placeholders(a) for a in argv or ()))):
                index = re.fullmatch(r"port([0-9]+)", name)
                if index and int(index.group(1)) < len(self.ports):
                    continue
                if name not in allowed or (name in {"port", "server"} and not self.ports):
                    raise ValueError(f"{side}: unknown placeholder {{{name}}}; allowed: "
                                     + ", ".join(f"{{{n}}}" for n in sorted(allowed))
                                     + ("" if self.ports else " ({port} and {server} need "
                                        "ports)") + "; write {{ and }} for braces")
        if self.placement == "pair" and any("{peers}" in a for a in self.client):
            raise ValueError("client: {peers} applies to placement: node")
        return self

    def offer(self) -> Offer:
        return Offer(self.protocol)

    def labels(self) -> dict[str, str]:
        """``app`` (the name) and the placement when a side is native."""
        sides = native_sides(self.client_on, self.server_on)
        return {"app": self.name, **({"placement": sides} if sides else {})}

    def service_ports(self) -> tuple[int, ...]:
        return self.ports


def _metric_name(metric: str) -> None:
    if not METRIC_NAME.match(metric):
        raise ValueError(f"{metric[:40]!r} is not a metric name: letters, digits and _, "
                         "starting with a letter")


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def json_metrics(text: str) -> dict[str, tuple[float, str | None]]:
    """Metric -> (value, unit or None) from the JSON-object lines of ``text``; last wins."""
    found: dict[str, tuple[float, str | None]] = {}
    for data in json_objects(text):
        if isinstance(data.get("metric"), str) and "value" in data:
            value = _number(data["value"])
            unit = data.get("unit")
            if value is not None and METRIC_NAME.match(data["metric"]):
                found[data["metric"]] = (value, unit if isinstance(unit, str) else None)
            continue
        for key, raw in data.items():
            value = _number(raw)
            if value is not None and isinstance(key, str) and METRIC_NAME.match(key):
                found[key] = (value, None)
    return found


def regex_metrics(text: str, patterns: Mapping[str, str]) -> dict[str, float]:
    """Metric -> the number its pattern's last match captured; WorkloadError if one has
    no match or captured no number."""
    out: dict[str, float] = {}
    for metric, pattern in patterns.items():
        matches = list(re.finditer(pattern, text, re.M))
        if not matches:
            raise WorkloadError(f"command: pattern {metric!r} matched nothing in the "
                                f"client's output: {_tail(text)}")
        last = matches[-1]
        raw = last.group("value") if "value" in last.re.groupindex else last.group(1)
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise WorkloadError(f"command: pattern {metric!r} captured {str(raw)[:40]!r}, "
                                "not a number") from None
        if not math.isfinite(value):
            raise WorkloadError(f"command: pattern {metric!r} captured {raw!r}")
        out[metric] = value
    return out


def _tail(text: str) -> str:
    return " | ".join(text.strip().splitlines()[-3:]) or "(no output)"


def command_samples(options: CommandOptions, stdout: str, elapsed_s: float) -> list[Sample]:
    """The samples of one client run, as ``options.metrics`` says."""
    if options.metrics == "exit":
        return [Sample("elapsed_s", elapsed_s, "s")]
    if options.metrics == "regex":
        return [Sample(m, v, unit_of(m, options.units))
                for m, v in regex_metrics(stdout, options.patterns).items()]
    found = json_metrics(stdout)
    if not found:
        raise WorkloadError("command: the client printed no JSON object with a number "
                            f"(metrics: json): {_tail(stdout)}")
    return [Sample(m, v, unit or unit_of(m, options.units)) for m, (v, unit) in found.items()]


class CommandWorkload(ServedWorkload):
    """The user's server and client (see the module docstring)."""

    name = "command"

    def __init__(self, options: CommandOptions) -> None:
        super().__init__(options.ports)
        self.options = options
        self.protocol = options.protocol
        self.ready_timeout = options.ready_timeout
        self.concurrent_clients = options.placement == "node"
        self.raw_name = f"command-{options.name}"

    def pairs(self, lab: LabView) -> list[Pair]:
        o = self.options
        if o.placement == "pair":
            return [first_pair(lab, f"command {o.name}", o.client_on, o.server_on)]
        n = len(lab.nodes)
        if n < 2:
            raise WorkloadError(f"command {o.name} needs 2 nodes, the lab has {n}")
        return [Pair(lab.nodes[(i + 1) % n], node, {}, f"-{node.name}")
                for i, node in enumerate(lab.nodes)]

    def _common(self, lab: LabView, node: Node) -> dict[str, str]:
        return {"node": node.name, "ip": node.ip, "rank": str(max(node.index, 0)),
                "nodes": str(len(lab.nodes)), "workdir": str(self.work_dir)}

    def server_argv(self, lab: LabView, node: Node, ports: list[int]) -> list[str] | None:
        if self.options.server is None:
            return None
        values = {**self._common(lab, node), **_ports(ports)}
        return fill(self.options.server, values)

    def client_argv(self, lab: LabView, pair: Pair, endpoints: list[tuple[str, int]]) -> list[str]:
        values = {**self._common(lab, pair.client), "addr": pair.server.ip}
        if endpoints:
            addr = endpoints[0][0]
            values |= {"addr": addr, "server": hostport(addr, endpoints[0][1]),
                       **_ports([port for _, port in endpoints])}
        if self.options.placement == "node":
            values["peers"] = ",".join(self._peer(lab, pair.client, node) for node in lab.nodes
                                       if node is not pair.client)
        return fill(self.options.client, values)

    def _peer(self, lab: LabView, client: Node, server: Node) -> str:
        if not self.options.ports:
            return server.ip
        addr, port = lab.endpoint(client, server, self.listen_ports(server)[0],
                                  proto=self.protocol)
        return hostport(addr, port)

    def process_env(self) -> Mapping[str, str] | None:
        return self.options.env or None

    def client_timeout(self) -> float:
        return self.options.timeout

    def samples(self, run: ClientRun, raw: Path) -> list[Sample]:
        return command_samples(self.options, run.result.stdout or "", run.elapsed_s)


def _ports(ports: list[int]) -> dict[str, str]:
    out = {f"port{k}": str(p) for k, p in enumerate(ports)}
    if ports:
        out["port"] = str(ports[0])
    return out


COMMAND_WORKLOADS: dict[str, Entry] = {
    "command": registry_entry(CommandOptions, CommandWorkload),
}
"""Scenario key -> (options model, factory) for the registry."""
