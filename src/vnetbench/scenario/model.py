"""Scenarios: YAML files validated into frozen pydantic models, with sweeps and clear errors.

    name: quick
    hosts: 2                     # emulated physical hosts
    nodes: 4                     # nodes, round-robin over hosts
    layers: [host, bridge, nat]  # or {vxlan: {vni: 7}} entries with layer options
    resources: {cpus: 0.5, memory: 512M}
    link: {delay: 10ms, jitter: 1ms, loss: 0.5%, rate: 500mbit}
    workloads:
      - rr: {protocol: tcp, request: 100, response: 200, duration: 5s}
    repeat: 3

Any scalar may be given as a list to sweep it (``nodes: [2, 4, 8]``, ``link: {delay: [0ms,
10ms]}``, ``rr: {request: [100, 1000]}``): ``sweep.expand`` yields one concrete scenario per point
of the cartesian product, labelled with the swept keys. Every problem becomes one
``ScenarioError`` line naming the file, the key and what is allowed.

Loading is bounded (``scenario_yaml``: regular files only, size, encoding, nesting, alias
bombs, duplicate keys), and an empty scenario is refused. Validation then bounds what
the run would do: ``repeat``/``max_repeat`` at most ``MAX_REPEAT``, a sweep at most
``MAX_POINTS`` points and ``MAX_TRIALS`` trials in all (counted from the validated points,
never by listing the trials), durations/sizes/rates finite and bounded (``vnetbench.units``),
true/false never taken for a number, ``jitter`` at most ``delay``, a ``cpuset`` of CPUs this
machine lets us use, a memory limit of at least ``MIN_NODE_MEMORY`` and the nodes a workload
adds (Hadoop's master) counted against the address plan.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import types
import typing
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from vnetbench.backends.catalog import LAYERS
from vnetbench.lab.placement import usable_cpus
from vnetbench.lab.topology import MAX_HOSTS, MAX_NODES, LinkShape, Resources, capacity_problem
from vnetbench.layers.base import EMULATED_UNDERLAY_MTU, MAX_PORT
from vnetbench.results.metrics import MAIN_METRICS
from vnetbench.scenario.loading import (
    did_you_mean,
    shown,
)
from vnetbench.units import Duration, Fraction, Rate, Size
from vnetbench.workloads.base import WorkloadOptions
from vnetbench.workloads.paired import DEFAULT_PIECE
from vnetbench.workloads.registry import NAMES, extra_nodes, service_ports, workload_model

MAX_REPEAT = 1000
"""Largest ``repeat`` and ``max_repeat``."""
MAX_WARMUP = 100
"""Largest ``warmup`` (untimed rounds)."""
MAX_POINTS = 10_000
"""Most sweep points (the product of the swept lists' lengths)."""
MAX_TRIALS = 100_000
"""Most trials a scenario may ask for: points x layers (the baseline twice with the A/A
control) x rounds (warmup + repeat, or max_repeat when adaptive)."""
MAX_SWEEP_WORK = 50_000_000
"""Most bytes of scenario validated in all (points x the file's size as JSON)."""
MIN_NODE_MEMORY = 16 * 1024 * 1024
"""Smallest per-node memory limit (16 MiB). The node's cgroup is charged for every process
started in it and for its socket buffers. Measured here (cgroup v1, 2 cores): the probe alone
ran rr and stream at 2 MiB and hung at 1 MiB (``memory: 1`` failed as "nothing listens on
port 7000"), but a Python process (the ``busy`` neighbour, Hadoop's ``enter`` wrapper) needs
~7.2 MiB just to start and was killed at 4 MiB, the busy neighbour silently (the trial
still "completed"). 16 MiB leaves twice that."""
MIN_GUEST_DISK = 64 * 1024 * 1024
"""A guest disk smaller than this holds no more than ext4's own metadata and journal."""
THRESHOLD_METRICS = MAIN_METRICS | frozenset({"cpu_us_per_tx", "cpu_cores_per_gbps"})
"""Metrics a ``thresholds`` limit may name: the headline figures ``compare`` judges, and the
CPU costs the report derives (per transaction, per Gbit/s)."""
BASELINE_LAYER = "host"
"""The layer that runs twice a round with the A/A control (see ``design.plan_round``)."""


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


HostNumber = Annotated[int, Field(ge=0, le=MAX_HOSTS - 1)]
"""An emulated host's number: 0 to ``MAX_HOSTS - 1`` (``check_capacity``: below ``hosts``)."""


class PairDelayModel(Frozen):
    """A one-way delay between two emulated hosts (both directions), e.g. one WAN circuit."""

    hosts: tuple[HostNumber, HostNumber]
    """The two emulated hosts (numbered from 0), e.g. ``[0, 1]``."""
    delay: Duration
    """One-way delay between them, each direction (e.g. ``15ms``)."""

    @field_validator("hosts")
    @classmethod
    def _two_hosts(cls, value: tuple[int, int]) -> tuple[int, int]:
        if value[0] == value[1] or min(value) < 0:
            raise ValueError(f"hosts {list(value)}: two different host numbers, from 0")
        return value


class LinkModel(Frozen):
    """Shaping of the underlay between emulated hosts, applied once per crossing."""

    delay: Duration = 0.0
    """One-way delay added between hosts, each direction (e.g. ``10ms``)."""
    jitter: Duration = 0.0
    """Spread of the delay (normal distribution cut at 0, no reordering); at most ``delay``."""
    loss: Fraction = 0.0
    """Packet loss per crossing, e.g. ``0.5%``."""
    rate: Rate = 0.0
    """Rate limit per host port, bits per second as tc writes them (``500mbit``, ``1gbit``) or
    bytes per second written ``MB/s`` (``100MB/s`` = 800 Mbit/s); 0 = unlimited."""
    pairs: tuple[PairDelayModel, ...] = ()
    """Delays per host pair (a delay matrix: WAN sites); other pairs get ``delay``."""

    @model_validator(mode="after")
    def _pairs_once(self) -> LinkModel:
        seen = [frozenset(p.hosts) for p in self.pairs]
        if len(set(seen)) != len(seen):
            raise ValueError("a host pair is listed twice in link.pairs")
        for p in self.pairs:
            if self.jitter > p.delay:
                raise ValueError(f"jitter ({_ms(self.jitter)}) is larger than the delay of hosts "
                                 f"{list(p.hosts)} ({_ms(p.delay)}); give a jitter of at most "
                                 "every delay")
        return self

    @model_validator(mode="after")
    def _jitter_within_delay(self) -> LinkModel:
        if self.jitter > self.delay and not self.pairs:  # with pairs: see check_capacity
            raise ValueError(
                f"jitter ({_ms(self.jitter)}) is larger than delay ({_ms(self.delay)}): delays "
                "are drawn from a normal distribution cut at 0 and packets never reorder, so "
                "late packets hold back the rest (measured: delay 1ms, jitter 10ms gave an RTT "
                "p50 of 7.4 ms, p99 31 ms for a nominal 2 ms); give a jitter of at most the delay")
        return self

    def shape(self) -> LinkShape:
        return LinkShape(self.delay, self.jitter, self.loss, self.rate,
                         tuple((p.hosts[0], p.hosts[1], p.delay) for p in self.pairs))


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:g} ms"


def cpu_ranges(cpus: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5`` (the kernel's cpuset list format)."""
    parts: list[str] = []
    for _, run in itertools.groupby(enumerate(sorted(cpus)), lambda kv: kv[1] - kv[0]):
        group = [c for _, c in run]
        parts.append(f"{group[0]}-{group[-1]}" if len(group) > 1 else str(group[0]))
    return ",".join(parts)


def parse_cpuset(text: str, usable: Sequence[int]) -> list[int]:
    """The CPUs of a cpuset list such as ``0``, ``0-1`` or ``0,2-3``; ValueError naming the
    CPUs that are not in ``usable``."""
    wanted: list[tuple[int, int]] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*([0-9]{1,6})\s*(?:-\s*([0-9]{1,6})\s*)?", part)
        if not match:
            raise ValueError(f"{text[:40]!r} is not a CPU list; write e.g. 0, 0-1 or 0,2-3")
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) else lo
        if hi < lo:
            raise ValueError(f"CPU range {lo}-{hi} runs backwards; write {hi}-{lo}")
        wanted.append((lo, hi))
    top = max(usable)
    outside = [f"{lo}-{hi}" if lo != hi else str(lo) for lo, hi in wanted
               if hi > top or any(c not in usable for c in range(lo, hi + 1))]
    if outside:
        raise ValueError(f"CPUs {','.join(outside)} are not usable here; this machine lets "
                         f"vnetbench use {cpu_ranges(usable)}")
    return sorted({c for lo, hi in wanted for c in range(lo, hi + 1)})


class ResourcesModel(Frozen):
    """Limits every node gets (its own cgroup)."""

    cpus: float | None = Field(default=None, ge=0.01, le=1024)
    """CPU quota per node in cores (0.01 = the kernel's smallest quota, 1 ms per 100 ms)."""
    memory: Size | None = None
    """Memory limit per node (at least 16 MiB: see ``MIN_NODE_MEMORY``)."""
    cpuset: str | None = None
    """CPUs the nodes may run on, e.g. ``0-1``; only CPUs this machine lets us use."""
    disk: Size | None = Field(default=None, ge=MIN_GUEST_DISK)
    """A disk of this size for each VM guest (the ``vm-*`` layers; a ``vmhost-*`` host guest
    gets one per node in it): a sparse file on this host's disk, formatted ext4 in the guest
    and mounted at ``/var/tmp`` there, where workloads keep a guest's files (Hadoop's HDFS
    blocks and task files), instead of the guest's memory. Nodes on this host: not used."""

    @field_validator("memory")
    @classmethod
    def _memory_floor(cls, value: int | None) -> int | None:
        if value is not None and value < MIN_NODE_MEMORY:
            raise ValueError(
                f"{value} B is below the 16 MiB minimum (16M): every process a node starts and "
                "its socket buffers count against this limit, and a Python helper (the busy "
                "neighbour, Hadoop's wrapper) alone needs ~7 MiB to start; below that it is "
                "killed, some silently")
        return value

    @field_validator("cpuset", mode="before")
    @classmethod
    def _cpuset_text(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value

    @field_validator("cpuset")
    @classmethod
    def _cpuset_usable(cls, value: str | None) -> str | None:
        if value is not None:
            parse_cpuset(value, usable_cpus())
        return value

    def resources(self) -> Resources:
        return Resources(self.cpus, self.memory, self.cpuset, self.disk)


class QuietModel(Frozen):
    """Before each trial, wait until the machine is quiet (CPU busy outside the lab)."""

    threshold: float = Field(default=0.3, ge=0.0, le=1024.0)
    """CPUs' worth of busy time (all CPUs together) below which the machine counts as quiet."""
    wait: Duration = Field(default=3.0, ge=0.0, le=600.0)
    """How long to wait for quiet before running anyway (the run records it)."""


class PlatformModel(Frozen):
    """What the run controls on the machine during every trial (each on by default; what
    took effect is recorded in run.json under environment.controls)."""

    placement: Literal["cross", "same", "off"] = "cross"
    """CPU placement of client, server and the layer's daemons, the same for every layer:
    ``cross`` puts server and client on different CPUs, ``same`` on one, ``off`` leaves it
    to the scheduler."""
    cpus: tuple[int, ...] | None = None
    """CPUs to place on (default: every CPU vnetbench may use)."""

    @field_validator("placement", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        """YAML 1.1 reads a bare ``off`` as false: that is what the author meant."""
        return "off" if value is False else value

    idle_states: bool = True
    """Hold CPU idle states off during the run (``/dev/cpu_dma_latency`` = 0)."""
    governor: bool = True
    """Set the cpufreq governor to ``performance`` where the machine has one."""
    quiet: QuietModel | None = QuietModel()
    """Quiet-machine check before each trial; ``null`` turns it off."""
    realtime: bool = False
    """In interleaved sessions, run the probe's client and servers and the layers' daemons
    under SCHED_FIFO (lowest real-time priority), so a busy neighbour's load does not sit
    inside the measured round trips (``realtime``). Off by default: a client near 100% of
    its CPU meets the kernel's real-time throttling (``sched_rt_runtime_us``, 950 ms of each
    second), whose pauses land in the tails (docs/measurements.md); and real-time tasks are
    outside a node's CPU quota, so ``resources.cpus`` turns it off."""

    @field_validator("cpus")
    @classmethod
    def _cpus_exist(cls, value: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if value is None:
            return None
        usable = list(usable_cpus())
        bad = [c for c in value if c not in usable]
        if not value or bad:
            raise ValueError(f"CPUs {bad or '[]'} are not usable here; usable: {usable}")
        return tuple(dict.fromkeys(value))




class PairingModel(Frozen):
    """Every layer measured in the same seconds as its baseline (README: "Paired
    measurement"). ``on``: rr, crr and forward TCP streams between namespaces interleave their
    paths in short slices (every lab alive at once); other workloads run whole in every live
    lab, round by round (a Docker layer's lab beside two baseline labs in a session of its
    own), or, where labs cannot live together (VMs, real machines, busy neighbours), in
    paired trial blocks (each layer's trial next to a baseline trial, ABBA order). ``off``:
    every layer's trials are judged against the baseline's as two independent groups."""

    mode: Literal["on", "off"] = "on"
    """``on``: paired measurement; ``off``: each layer's trials against the baseline's as
    two independent groups."""
    slice: Duration | None = Field(default=None, ge=0.005, le=10.0)
    """Seconds per slice of an interleaved path (default: 100 ms for rr and crr, 250 ms
    for streams)."""
    piece: Duration | None = Field(default=None, ge=0.001, le=10.0)
    """Seconds of one visit to a path within a round (default: 10 ms for rr and crr, 25 ms
    for streams): a round is several cycles over every path, each in a fresh
    random order, and a path's slice the sum of its pieces."""
    settle: Duration = Field(default=0.0, ge=0.0, le=1.0)
    """Seconds at the start of each piece run but not recorded."""
    warm: int | None = Field(default=None, ge=0, le=1000)
    """rr and crr: round trips at the start of each piece run but not recorded (default 3,
    none where the link adds delay: a path's first round trips after its idle time wake its
    server and the layer's daemons, which a single-path run never waits for)."""
    builds: int = Field(default=1, ge=1, le=8)
    """Each session's labs built this many times, one after another, the fixed rounds
    split between the builds (each build with its own warm-up): a lab's build varies what
    it measures (study 000's UDP/TCP round trip through Docker's NAT sat at x0.85 in one
    build and x0.95 in another, each build's interval 2-3 % wide), which the rounds of one
    build cannot show; with two or more, that variation enters the pairs. Adaptive rounds
    (``until_cv``) continue the last build."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: object) -> object:
        """``pairing: off`` (YAML reads a bare off as false), ``pairing: on``."""
        if value is False or value == "off":
            return {"mode": "off"}
        if value is True or value == "on":
            return {"mode": "on"}
        return value

    @model_validator(mode="after")
    def _settle_in_slice(self) -> PairingModel:
        if self.slice is not None and self.settle >= self.slice:
            raise ValueError(f"settle ({self.settle:g} s) must be shorter than slice "
                             f"({self.slice:g} s)")
        if self.piece is not None and self.settle >= self.piece:
            raise ValueError(f"settle ({self.settle:g} s) must be shorter than piece "
                             f"({self.piece:g} s)")
        if self.piece is None and self.settle >= DEFAULT_PIECE:
            raise ValueError(f"settle ({self.settle:g} s) must be shorter than a piece (rr and "
                             f"crr visit a path {DEFAULT_PIECE * 1000:g} ms at a time): set "
                             "pairing.piece longer than settle")
        if self.piece is not None and self.slice is not None and self.piece > self.slice:
            raise ValueError(f"piece ({self.piece:g} s) must not be longer than slice "
                             f"({self.slice:g} s)")
        return self

    @property
    def on(self) -> bool:
        return self.mode == "on"


class MachineModel(Frozen):
    """A real machine that is one of the lab's hosts, reached over SSH (``hosts: [...]``)."""

    ssh: str = Field(min_length=1)
    """OpenSSH destination: ``root@192.0.2.10``, or a Host of your ssh config (your config
    and agent are used)."""
    underlay: str = Field(min_length=1, max_length=15)
    """The machine's interface that carries the lab's traffic, e.g. ``eth1``."""
    identity: str | None = None
    """A private key file to log in with (default: your ssh config and agent)."""
    port: int | None = Field(default=None, ge=1, le=65535)
    """SSH port, when not your ssh config's."""
    docker: Literal["private", "existing"] = "private"
    """``docker-*`` layers on this machine: ``existing`` uses the machine's own engine (the
    only way on real machines; ``private``, the default, is refused there: an engine started by
    vnetbench would change the machine's firewall)."""

    @field_validator("ssh")
    @classmethod
    def _destination(cls, value: str) -> str:
        from vnetbench.backends.machines.ssh import destination_problem

        problem = destination_problem(value)
        if problem:
            raise ValueError(problem)
        return value


class Scenario(Frozen):
    """One concrete (sweep-free) scenario."""

    name: str = "scenario"
    """Short name of the scenario: it names the run directory and the report."""
    description: str = ""
    """What the scenario is for (shown in the report)."""
    hosts: int = Field(default=1, ge=1, le=MAX_HOSTS)
    """Emulated physical hosts (each a namespace with its own underlay link); or a list of
    real machines reached over SSH, ``[{ssh: root@192.0.2.10, underlay: eth1}, ...]``."""
    machines: tuple[MachineModel, ...] = ()
    """The real machines ``hosts`` lists (set from ``hosts``; not written in files)."""
    nodes: int = Field(default=2, ge=1, le=MAX_NODES)
    """Nodes (containers, VMs) of the lab, placed round-robin over the hosts."""
    layers: tuple[str, ...] = ("host", "bridge")
    """Network layers to compare, each built in turn: names, or ``{name: {options}}``."""
    layer_options: dict[str, dict[str, object]] = Field(default_factory=dict)
    """Options per layer (the same as giving them inline in ``layers``)."""
    resources: ResourcesModel = ResourcesModel()
    """CPU and memory limits per node."""
    link: LinkModel = LinkModel()
    """Shaping of the underlay between hosts: delay, jitter, loss, rate."""
    workloads: tuple[dict[str, dict[str, object]], ...] = ()
    """Workloads run in every trial, in order: ``rr``, ``{rr: {options}}``; none: only the
    lab is built (build time measured)."""
    repeat: int = Field(default=1, ge=1, le=MAX_REPEAT)
    """Rounds: every layer runs once per round, in a seeded interleaved order."""
    until_cv: Fraction | None = None
    """Adaptive repetition: after ``repeat`` rounds, repeat a (point, layer) until the
    coefficient of variation of its headline metrics is below this (e.g. ``3%``)."""
    max_repeat: int = Field(default=10, ge=1, le=MAX_REPEAT)
    """Most rounds adaptive repetition (``until_cv``) may run."""
    budget: Duration | None = Field(default=None, gt=0)
    """Adaptive repetition stops starting rounds that would end after this much run time
    (the fixed ``repeat`` rounds always run)."""
    warmup: int = Field(default=0, ge=0, le=MAX_WARMUP)
    """Untimed rounds run first (their samples are discarded)."""
    seed: int = Field(default=1, ge=0, le=2**32 - 1)
    """Seed of the trial order (the same seed, the same order)."""
    busy: bool = False
    """Every node also runs a CPU-bound neighbour inside its cgroup (density sweeps)."""
    busy_duty: float = Field(default=1.0, gt=0, le=1)
    """Fraction of the time each neighbour spins (1.0 = always busy)."""
    skip_unsupported: bool = False
    """Skip (with a warning) layers this host cannot build instead of failing."""
    platform: PlatformModel = PlatformModel()
    """What the run controls on the machine during every trial (CPU placement, idle states,
    governor, quiet-machine check)."""
    noise_floor: bool = True
    """A/A control: the baseline layer (``host``) runs twice a round, as two interleaved
    groups, so the run knows the smallest change it can resolve per metric (differences
    below it are reported as not resolved)."""
    pairing: PairingModel = PairingModel()
    """Paired measurement: ``on`` (default), ``off``, or ``{slice: 100ms, settle: 0s}``."""
    thresholds: dict[str, float] = Field(default_factory=dict)
    """Limits on every layer's ratio to the baseline (``host``), as ``WORKLOAD.METRIC:
    LIMIT``: ``{rr.rtt_p50_us: 1.5, stream.goodput_bps: 0.8}`` is at most x1.5 the baseline's
    round trip and at least x0.8 its goodput (a max where lower is better, a min where
    higher is). A run where a layer breaks one at any sweep point exits 1, one line per
    breach, recorded in run.json and the report (``report.thresholds``: the rule)."""

    @model_validator(mode="before")
    @classmethod
    def _inline_layer_options(cls, data: object) -> object:
        """``layers: [{vxlan: {vni: 7}}]`` moves the options into ``layer_options``."""
        if not isinstance(data, dict) or not isinstance(data.get("layers"), list):
            return data
        given = data.get("layer_options")
        if given is not None and not isinstance(given, dict):
            return data  # the field's own validation names the problem
        options = dict(given or {})
        for entry in data["layers"]:
            if isinstance(entry, dict) and len(entry) == 1:
                (name, opts), = entry.items()
                options[name] = opts or {}
        return {**data, "layer_options": options}

    @model_validator(mode="before")
    @classmethod
    def _hosts_as_machines(cls, data: object) -> object:
        """``hosts: [{ssh: ..., underlay: ...}, ...]``: the lab's hosts are those machines."""
        if not isinstance(data, dict) or not is_machine_list(data.get("hosts")):
            return data
        if data.get("machines"):
            raise ValueError("hosts: give the machines in hosts only (not also in machines)")
        return {**data, "hosts": len(data["hosts"]), "machines": data["hosts"]}

    @field_validator("thresholds", mode="before")
    @classmethod
    def _threshold_keys(cls, value: object) -> object:
        """``{rr: {rtt_p50_us: 1.5}}`` is ``{rr.rtt_p50_us: 1.5}``; each key a workload and
        one of the metrics a run judges, whose better direction is known."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ValueError("give WORKLOAD.METRIC: LIMIT pairs, e.g. {rr.rtt_p50_us: 1.5}")
        flat: dict[str, object] = {}
        for key, limit in value.items():
            if isinstance(key, str) and isinstance(limit, dict):
                flat.update({f"{key}.{metric}": v for metric, v in limit.items()})
            else:
                flat[str(key)] = limit
        for key, limit in flat.items():
            kind, _, metric = key.partition(".")
            if kind not in NAMES:
                raise ValueError(f"{shown(key)}: unknown workload {shown(kind)}"
                                 f"{did_you_mean(kind, NAMES)}; write WORKLOAD.METRIC, e.g. "
                                 "rr.rtt_p50_us")
            if metric not in THRESHOLD_METRICS:
                raise ValueError(f"{shown(key)}: {shown(metric)} is not a metric a limit can "
                                 f"judge{did_you_mean(metric, THRESHOLD_METRICS)}; allowed: "
                                 f"{', '.join(sorted(THRESHOLD_METRICS))}")
            if isinstance(limit, bool) or not isinstance(limit, int | float) or not (
                    0 < limit < math.inf):
                raise ValueError(f"{key}: the limit is a ratio to the baseline, a number > 0 "
                                 f"(1.5: at most x1.5 for a latency), not {shown(limit)}")
        return flat

    @model_validator(mode="after")
    def _thresholds_fit(self) -> Scenario:
        if not self.thresholds:
            return self
        if BASELINE_LAYER not in self.layers:
            raise ValueError(f"thresholds: limits are ratios to the baseline layer "
                             f"{BASELINE_LAYER}, which layers does not list; add it")
        kinds = {kind for entry in self.workloads for kind in entry}
        for entry in self.workloads:  # a concurrent group's members are judged by their kind
            group = entry.get("concurrent", {}).get("workloads", ())  # dumped: ({kind: opts}, ...)
            for member in group if isinstance(group, tuple | list) else ():
                kinds.update(member)
        for key in self.thresholds:
            kind = key.partition(".")[0]
            if kind not in kinds:
                raise ValueError(f"thresholds: {key}: the scenario runs no {kind} workload "
                                 f"(it runs {', '.join(sorted(kinds)) or 'none'})")
        return self

    @model_validator(mode="after")
    def _shares_have_a_baseline(self) -> Scenario:
        """A load offered as a share of the baseline's capacity needs the baseline's path
        in a paired session, where the capacity is found first (``run.capacity``)."""
        if not any(o.capacity_probe() is not None for _, o in self.workload_options()):
            return self
        if BASELINE_LAYER not in self.layers:
            raise ValueError(f"share: an open loop's share is of the baseline's capacity, "
                             f"found on the {BASELINE_LAYER} layer, which layers does not list; "
                             "add it, or give rate (requests a second) instead")
        if not self.pairing.on:
            raise ValueError("share: the baseline's capacity is found in the paired design's "
                             "sessions; remove pairing: off, or give rate (requests a second)")
        return self

    @model_validator(mode="after")
    def _builds_fit(self) -> Scenario:
        if self.pairing.builds > self.repeat:
            raise ValueError(f"pairing.builds: {self.pairing.builds} builds of each session "
                             f"split the {self.repeat} round(s) of repeat: give at most "
                             f"{self.repeat} builds, or repeat at least {self.pairing.builds}")
        return self

    @model_validator(mode="after")
    def _machines_fit(self) -> Scenario:
        if not self.machines:
            return self
        seen: set[tuple[str, int | None]] = set()
        for m in self.machines:
            if (m.ssh, m.port) in seen:
                raise ValueError(f"hosts: {m.ssh} is given twice; each machine is one host")
            seen.add((m.ssh, m.port))
        if self.link.shape().is_shaped:
            raise ValueError("link: a lab on real machines takes no link shaping (the wire "
                             "between machines is real); remove link")
        if self.resources.resources().any:
            raise ValueError("resources: per-node limits are not applied on real machines "
                             "yet; remove resources")
        return self

    @model_validator(mode="before")
    @classmethod
    def _no_bools_for_numbers(cls, data: object) -> object:
        """``nodes: true`` would validate as 1: refuse true/false wherever a number goes."""
        problem = bool_problem(data, cls, "")
        if problem:
            raise ValueError(problem)
        return data

    @field_validator("layer_options")
    @classmethod
    def _check_layer_options(cls, value: dict[str, dict[str, object]]
                             ) -> dict[str, dict[str, object]]:
        for name, opts in value.items():
            if name not in LAYERS:
                raise ValueError(f"options for unknown layer {name!r}{did_you_mean(name, LAYERS)}; "
                                 f"allowed: {', '.join(LAYERS)}")
            model = LAYERS[name].options
            problem = bool_problem(opts, model, "")
            if problem:
                raise ValueError(f"{name}: {problem}")
            try:
                model.model_validate(opts)
            except ValidationError as exc:
                raise ValueError(f"{name}: {first_error(exc, model)}") from None
        return value

    @field_validator("layers", mode="before")
    @classmethod
    def _layers(cls, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple) or not value:
            raise ValueError("give a list of layer names, e.g. [host, bridge]")
        names = []
        for entry in value:
            name = next(iter(entry)) if isinstance(entry, dict) and len(entry) == 1 else entry
            if not isinstance(name, str) or name not in LAYERS:
                raise ValueError(f"unknown layer {shown(name)}{did_you_mean(name, LAYERS)}; "
                                 f"allowed: {', '.join(LAYERS)}")
            names.append(name)
        if len(set(names)) != len(names):
            raise ValueError("a layer is listed twice")
        return names

    @field_validator("workloads", mode="before")
    @classmethod
    def _workloads(cls, value: object) -> object:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise ValueError("give a list such as [{rr: {duration: 5s}}]")
        out = []
        for k, entry in enumerate(value):
            if isinstance(entry, str):
                entry = {entry: {}}
            if not isinstance(entry, dict) or len(entry) != 1:
                raise ValueError(f"entry {k} must be one workload name with its options")
            (kind, opts), = entry.items()
            if kind not in NAMES:
                raise ValueError(f"unknown workload {shown(kind)}{did_you_mean(kind, NAMES)}; "
                                 f"allowed: {', '.join(NAMES)}")
            model = workload_model(kind)
            problem = bool_problem(opts, model, "")
            if problem:
                raise ValueError(f"{kind}: {problem}")
            try:
                validated = model.model_validate(opts or {})
            except ValidationError as exc:
                raise ValueError(f"{kind}: {first_error(exc, model)}") from None
            out.append({kind: validated.model_dump()})
        return out

    def workload_options(self) -> list[tuple[str, WorkloadOptions]]:
        return [(kind, workload_model(kind).model_validate(opts))
                for entry in self.workloads for kind, opts in entry.items()]

    def check_capacity(self) -> None:
        """ValueError when the lab (workers plus the nodes a workload adds, such as Hadoop's
        master) does not fit the address plan, or a workload needs more nodes."""
        options = [o for _, o in self.workload_options()]
        extra = extra_nodes(options)
        total = self.nodes + extra
        problem = capacity_problem(self.hosts, total)
        if problem:
            added = (f" ({self.nodes} + {extra} the workloads add, Hadoop's master)"
                     if extra else "")
            raise ValueError(f"nodes: {problem.replace(' nodes on', f' nodes{added} on', 1)}")
        outside = [list(p.hosts) for p in self.link.pairs if max(p.hosts) >= self.hosts]
        if outside:
            raise ValueError(f"link.pairs: hosts {outside} do not exist; hosts are numbered "
                             f"0..{self.hosts - 1}")
        every_pair = len(self.link.pairs) == self.hosts * (self.hosts - 1) // 2
        if self.link.pairs and not every_pair and self.link.jitter > self.link.delay:
            raise ValueError(f"link: jitter ({_ms(self.link.jitter)}) is larger than the delay of "
                             f"the host pairs link.pairs leaves out ({_ms(self.link.delay)}); "
                             "give every pair a delay or a larger link.delay")
        for kind, opts in self.workload_options():
            needed = type(opts).min_nodes
            if self.nodes < needed:
                raise ValueError(f"nodes: the {kind} workload needs at least {needed} nodes, "
                                 f"the scenario gives {self.nodes}")
        self._check_layer_numbers(-(-total // self.hosts), service_ports(options))

    def _check_layer_numbers(self, per_host: int, services: tuple[int, ...]) -> None:
        """ValueError when a layer's numbers, fine alone, fail with this lab: an overlay's
        ``underlay_mtu`` above the emulated underlay's 1500, or a port past 65535 that the
        lab derives (a service's port plus its node's slot where nodes share a namespace; a
        publishing layer's ``first_port`` plus every published service)."""
        for name in self.layers:
            layer = LAYERS[name]
            opts = layer.options.model_validate(self.layer_options.get(name, {}))
            mtu = opts.tunnel_underlay_mtu()
            if mtu is not None and not self.machines and mtu > EMULATED_UNDERLAY_MTU:
                raise ValueError(
                    f"{name}: underlay_mtu {mtu} is more than the emulated hosts' underlay "
                    f"carries ({EMULATED_UNDERLAY_MTU}: the kernel would clamp the tunnel "
                    f"device below its bridge); give at most {EMULATED_UNDERLAY_MTU} (a larger "
                    "underlay needs real machines: hosts: [{ssh: ..., underlay: ...}])")
            if layer.shares_host_netns and services and per_host > 1:
                top = max(services) + per_host - 1
                if top > MAX_PORT:
                    raise ValueError(
                        f"{name}: nodes sharing a host's namespace listen on a service's port "
                        f"plus their slot, so port {max(services)} with {per_host} nodes per "
                        f"host reaches {top}, past {MAX_PORT}; give the workload a lower port")
            first = opts.first_published_port()
            if layer.publishes_ports and first is not None and services:
                top = first + per_host * len(services) - 1
                if top > MAX_PORT:
                    raise ValueError(
                        f"{name}: first_port {first} with {per_host} node(s) per host and "
                        f"{len(services)} service port(s) publishes up to port {top}, past "
                        f"{MAX_PORT}; give a first_port of at most "
                        f"{MAX_PORT - per_host * len(services) + 1}")

    def trial_count(self) -> int:
        """How many trials this point can run (warmup rounds, and adaptive rounds up to
        ``max_repeat``, included), counted as the runner plans them."""
        rounds = self.warmup + max(self.repeat,
                                   self.max_repeat if self.until_cv is not None else 0)
        aa = self.noise_floor and bool(self.workloads) and BASELINE_LAYER in self.layers
        return rounds * (len(self.layers) + (1 if aa else 0))

    def digest(self) -> str:
        return hashlib.sha256(
            json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


def first_error(exc: ValidationError, model: type[BaseModel]) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        parent = _model_at(model, err["loc"][:-1])
        allowed = ", ".join(parent.model_fields) if parent else "see the docs"
        near = did_you_mean(str(err["loc"][-1]), parent.model_fields) if parent else ""
        return f"unknown key {shown(loc)}{near}; allowed here: {allowed}"
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "literal_error":  # "Input should be 'cross', 'same' or 'off'"
        msg += did_you_mean(err.get("input"),
                            re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected"))))
    return f"{loc}: {msg}" if loc else msg


def _model_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    current: type[BaseModel] = model
    for part in loc:
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        sub = submodel(field.annotation)
        if sub is None:
            return None
        current = sub
    return current


def submodel(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        sub = submodel(arg)
        if sub:
            return sub
    return None


def is_machine_list(value: object) -> bool:
    """Whether a ``hosts`` value lists machines (mappings) rather than sweeping counts."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def is_sweepable(annotation: object) -> bool:
    """Whether a list given for a key of this type is a sweep (``expand``): every key whose
    own type is not a list."""
    return not _is_list_field(annotation)


def _is_list_field(annotation: object) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_is_list_field(a) for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _is_list_field(typing.get_args(annotation)[0])
    return False


def _base_types(annotation: object) -> set[object]:
    """The plain types a (possibly Annotated / Optional / Union / Literal) annotation admits."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _base_types(args[0])
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_base_types(a) for a in args))
    if origin is Literal:
        return {type(a) for a in args}
    return {origin or annotation}


def bool_problem(value: object, annotation: object, path: str) -> str | None:
    """Where ``value`` (to be validated as ``annotation``) gives true/false for a number:
    ``"<dotted key>: true is not a number ..."``, else None. Pydantic would take it as 1/0."""
    if isinstance(value, bool):
        admitted = _base_types(annotation)
        if admitted & {bool, Any, object} or not admitted & {int, float}:
            return None
        where = f"{path}: " if path else ""
        return (f"{where}{str(value).lower()} is not a number (YAML reads true/false, yes/no, "
                "on/off as booleans); write the number")
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return bool_problem(value, args[0], path)
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            problem = bool_problem(value, arg, path)
            if problem:
                return problem
        return None
    prefix = f"{path}." if path else ""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if not isinstance(value, dict):
            return None
        for key, sub in value.items():
            field = annotation.model_fields.get(key) if isinstance(key, str) else None
            if field is not None:
                problem = bool_problem(sub, field.annotation, f"{prefix}{key}")
                if problem:
                    return problem
        return None
    if origin in (list, tuple, set, frozenset) and isinstance(value, list):
        for k, item in enumerate(value):
            if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                item_type = args[k] if k < len(args) else Any
            else:
                item_type = args[0] if args else Any
            problem = bool_problem(item, item_type, f"{prefix}{k}")
            if problem:
                return problem
        return None
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        for key, sub in value.items():
            problem = bool_problem(sub, args[1], f"{prefix}{key}")
            if problem:
                return problem
    return None
