"""A layer's cost under one workload, broken down: CPU by who and by state, packets and bytes
per unit of work on every device crossed, drops and retransmissions.

From the units of one path (``evidence``), as ratios of sums over the units (so the parts add
up: CPU by who plus the rest of the machine is the machine's busy CPU, and the states add up
to it too):

* ``time``: wall time per unit of work (µs per transaction; seconds per gigabit, whose
  inverse is the goodput in Gbit/s);
* ``who``: CPU per unit of work spent by the client, the server, the layer's daemons
  (``infra``: wireguard-go, the userspace forwarder, the link emulator), other nodes, and
  ``rest``: the machine's busy CPU not charged to any of them (kernel work outside those
  processes' time, ksoftirqd, and whatever else ran on the machine);
* ``state``: the machine's busy CPU per unit of work by state (user, system, softirq, irq,
  other);
* utilisation: the share of the machine's CPU busy, the cores' worth spent by the daemons and
  in softirq, and, where the collectors read each core, the busiest core's busy and softirq
  shares (median over units) and how often the receive softirq ran out of budget;
* per device crossed (its role in the lab, kind, MTU): packets and bytes per unit of work each
  way, the mean packet size, drops each way; retransmitted TCP segments, D-SACKs and
  reordering per namespace; UDP socket-buffer drops per namespace.

CPU per unit of work is in µs per transaction, or CPU-seconds per gigabit (= cores busy per
Gbit/s), as the report's derived ``cpu_us_per_tx`` and ``cpu_cores_per_gbps``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import median

from vnetbench.explain.evidence import STATES, WHO, Evidence, Per, Unit, Window
from vnetbench.explain.facts import PathFacts, role_kind

SCALE: dict[Per, float] = {"transaction": 1e6, "gigabit": 1.0}
"""From CPU-seconds per unit of work to the unit shown (µs per transaction, cores per
Gbit/s)."""
CROSSED = 0.1
"""A device is crossed when it moves at least this share of the busiest device's packets."""
TCP_COUNTERS = ("tcp_retrans_segs", "tcp_out_segs", "tcp_dsack_recv", "tcp_sack_reorder",
                "tcp_loss_probes", "tcp_fast_retrans", "tcp_timeouts", "tcp_lost_retransmit")
UDP_DROPS = ("udp_rcvbuf_errors", "udp_sndbuf_errors", "udp_in_errors")


@dataclass(frozen=True)
class DeviceCost:
    """One device of the path: per unit of work each way, and drops."""

    netns: str
    device: str
    kind: str
    mtu: int | None
    rx_packets: float
    tx_packets: float
    rx_bytes: float
    tx_bytes: float
    rx_drops: float
    tx_drops: float
    """Totals over the windows (not per unit of work)."""

    @property
    def role(self) -> str:
        return f"{self.netns}/{self.device}"

    @property
    def packets(self) -> float:
        return self.rx_packets + self.tx_packets

    @property
    def mean_packet(self) -> float:
        """Mean size of a packet (bytes), both ways together."""
        total = self.rx_packets + self.tx_packets
        return (self.rx_bytes + self.tx_bytes) / total if total > 0 else math.nan


@dataclass(frozen=True)
class PathCost:
    """One layer's cost under one workload (see the module docstring)."""

    layer: str
    per: Per
    units: int
    work: float
    """Work of the units with CPU evidence (transactions, or gigabits)."""
    time: float
    who: dict[str, float] = field(default_factory=dict)
    state: dict[str, float] = field(default_factory=dict)
    machine: float = math.nan
    busy_share: float = math.nan
    daemon_cores: float = math.nan
    softirq_cores: float = math.nan
    peak_busy: float | None = None
    peak_softirq: float | None = None
    squeezes_per_s: float | None = None
    devices: list[DeviceCost] = field(default_factory=list)
    tcp: dict[str, float] = field(default_factory=dict)
    """Totals over the windows of ``TCP_COUNTERS``, summed over namespaces."""
    tcp_by_netns: dict[str, float] = field(default_factory=dict)
    """Retransmitted segments per namespace."""
    udp_drops: dict[str, float] = field(default_factory=dict)
    """Socket-buffer and input errors of UDP per namespace (totals)."""
    windows: int = 0
    window_work: float = math.nan
    """Work the counter windows saw (scaled, see ``evidence``)."""
    cores: int = 0
    """Cores of the machine (0: unknown)."""

    @property
    def cpu(self) -> float:
        """The lab's own CPU per unit of work: client, server, daemons and other nodes (the
        report's ``cpu_us_per_tx`` / ``cpu_cores_per_gbps``)."""
        return sum(v for k, v in self.who.items() if k != "rest")

    @property
    def crossed(self) -> list[DeviceCost]:
        """The devices the workload's packets crossed (see ``CROSSED``)."""
        top = max((d.packets for d in self.devices), default=0.0)
        return [d for d in self.devices if top > 0 and d.packets >= CROSSED * top]

    @property
    def drops(self) -> float:
        return sum(d.rx_drops + d.tx_drops for d in self.devices)


def path_cost(evidence: Evidence, layer: str, facts: PathFacts | None = None,
              cores: int = 0) -> PathCost | None:
    """The cost of ``layer`` (every path of it: both A/A paths of the baseline) under the
    evidence's condition; None when it has no unit."""
    units = evidence.of(layer)
    if not units:
        return None
    scale = SCALE[evidence.per]
    with_cpu = [u for u in units if u.has_cpu]
    work = sum(u.work for u in with_cpu)
    walls = [u for u in units if not math.isnan(u.wall_s)]
    time = (sum(u.wall_s for u in walls) / sum(u.work for u in walls) * scale
            if walls else math.nan)
    who, state, machine = _cpu(with_cpu, scale)
    busy = sum(u.state.get("busy", 0.0) for u in with_cpu)
    idle = sum(u.state.get("idle", 0.0) for u in with_cpu)
    elapsed = (busy + idle) / cores if cores and busy + idle > 0 else math.nan
    daemons = sum(u.who.get("daemons", 0.0) for u in with_cpu)
    softirq = sum(u.state.get("softirq", 0.0) for u in with_cpu)
    windows = evidence.windows_of(layer)
    return PathCost(
        layer, evidence.per, len(units), work, time, who, state, machine,
        busy_share=busy / (busy + idle) if busy + idle > 0 else math.nan,
        daemon_cores=daemons / elapsed if elapsed > 0 else math.nan,
        softirq_cores=softirq / elapsed if elapsed > 0 else math.nan,
        peak_busy=_peak(units, "busy"), peak_softirq=_peak(units, "softirq"),
        squeezes_per_s=_squeezes(units, elapsed),
        devices=_devices(windows, facts), tcp=_tcp(windows),
        tcp_by_netns=_retrans_by_netns(windows), udp_drops=_udp(windows),
        windows=len(windows), window_work=sum(w.work for w in windows
                                              if not math.isnan(w.work)),
        cores=cores)


def _cpu(units: Sequence[Unit], scale: float) -> tuple[dict[str, float], dict[str, float],
                                                         float]:
    """CPU per unit of work by who (with ``rest``) and by state, and the machine's busy."""
    work = sum(u.work for u in units)
    if work <= 0:
        return {}, {}, math.nan
    who = {w: sum(u.who.get(w, 0.0) for u in units) / work * scale for w in WHO
           if any(w in u.who for u in units)}
    with_state = [u for u in units if "busy" in u.state]
    state: dict[str, float] = {}
    machine = math.nan
    if with_state and len(with_state) == len(units):
        machine = sum(u.state["busy"] for u in units) / work * scale
        state = {s: sum(u.state.get(s, 0.0) for u in units) / work * scale for s in STATES}
        if who:
            who["rest"] = machine - sum(who.values())
    return who, state, machine


def _peak(units: Sequence[Unit], state: str) -> float | None:
    """Median over units of the busiest core's share of time in ``state`` (None without
    per-core evidence)."""
    shares = []
    for u in units:
        best = [c.get(state, 0.0) / (c.get("busy", 0.0) + c.get("idle", 0.0))
                for c in u.cores.values() if c.get("busy", 0.0) + c.get("idle", 0.0) > 0]
        if best:
            shares.append(max(best))
    return median(shares) if shares else None


def _squeezes(units: Sequence[Unit], elapsed: float) -> float | None:
    counted = [u for u in units if "softnet_time_squeeze" in u.counts]
    if not counted or not elapsed > 0:
        return None
    return sum(u.counts["softnet_time_squeeze"] for u in counted) / elapsed


def _devices(windows: Sequence[Window], facts: PathFacts | None) -> list[DeviceCost]:
    work = sum(w.work for w in windows if not math.isnan(w.work))
    totals: dict[tuple[str, str], dict[str, float]] = {}
    for w in windows:
        if math.isnan(w.work):
            continue
        for where, counters in w.devices.items():
            mine = totals.setdefault(where, {})
            for metric, value in counters.items():
                mine[metric] = mine.get(metric, 0.0) + value
    out = []
    for (netns, device), c in sorted(totals.items()):
        def per(metric: str, c: dict[str, float] = c) -> float:
            return c.get(metric, 0.0) / work if work > 0 else math.nan
        known = facts.devices.get(f"{netns}/{device}") if facts is not None else None
        kind = facts.kind(netns, device) if facts is not None else role_kind(device)
        out.append(DeviceCost(netns, device, kind, known.mtu if known else None,
                              per("rx_packets"), per("tx_packets"), per("rx_bytes"),
                              per("tx_bytes"), c.get("rx_drops", 0.0), c.get("tx_drops", 0.0)))
    return out


def _tcp(windows: Sequence[Window]) -> dict[str, float]:
    out: dict[str, float] = {}
    for w in windows:
        for counters in w.tcp.values():
            for metric in TCP_COUNTERS:
                if metric in counters:
                    out[metric] = out.get(metric, 0.0) + counters[metric]
    return out


def _retrans_by_netns(windows: Sequence[Window]) -> dict[str, float]:
    out: dict[str, float] = {}
    for w in windows:
        for netns, counters in w.tcp.items():
            if "tcp_retrans_segs" in counters:
                out[netns] = out.get(netns, 0.0) + counters["tcp_retrans_segs"]
    return out


def _udp(windows: Sequence[Window]) -> dict[str, float]:
    out: dict[str, float] = {}
    for w in windows:
        for netns, counters in w.udp.items():
            lost = sum(counters.get(m, 0.0) for m in UDP_DROPS)
            if lost > 0 or netns not in out:
                out[netns] = out.get(netns, 0.0) + lost
    return out
