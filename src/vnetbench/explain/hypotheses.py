"""The seed studies' causes as checks a run can evaluate: supported, contradicted or not
testable, always with the numbers the verdict rests on.

* ``softirq_saturation`` (study 003, Percona: "ksoftirq using 100% of one CPU core" on
  Docker's overlay, "not the case with the direct and bridge configuration"): on an overlay
  layer (one whose path between hosts encapsulates), a core spent at least ``SOFTIRQ`` of the
  time in softirq while the baseline's busiest core did not. With per-core evidence (trials)
  the busiest core's share is read directly (median over the layer's units). The interleaved
  design reads the machine's CPU per slice, not per core: machine-wide softirq below
  ``SOFTIRQ`` cores' worth rules saturation out, at least ``cores - 1 + SOFTIRQ`` proves it,
  anything between cannot tell.
* ``drops_behind_retransmissions`` (study 001, Higgs & Anderson: a bridge or veth buffer
  "small enough to cause packets to be dropped, causing TCP resends"): in the windows a TCP
  workload's counters were read around, the drops on the lab's bridge and veth devices are at
  least ``DROP_SHARE`` of the retransmitted segments. Counters read around whole trials or
  sessions show drops and retransmissions together, not which came first. The other places
  the run saw packets lost (a tun device, a UDP socket's buffer) and the D-SACKs (a
  retransmission the receiver already had: not caused by a loss) are named beside it.
* ``forwarder_bound`` (study 003: "a lot of CPU allocated to weave containers"): on a layer
  whose daemons forward its packets, a throughput workload ran with a core saturated (busy
  at least ``BUSY`` of its time: read per core in trials; machine-wide, the same bound as
  for softirq) and the daemons spent at least ``DAEMON_SHARE`` of the CPU per unit of work
  the lab's processes added.

A layer a check does not concern (no overlay, no daemon, a UDP workload for
retransmissions) gets no check; one it concerns whose evidence is missing is
``not testable`` with the reason.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from vnetbench.explain.attribution import cpu
from vnetbench.explain.breakdown import DeviceCost, PathCost
from vnetbench.explain.evidence import Evidence
from vnetbench.explain.facts import PathFacts
from vnetbench.units import counted

Verdict = Literal["supported", "contradicted", "not testable"]

SOFTIRQ = 0.8
"""Share of a core's time in softirq that counts as saturated (the ``softirq_saturation``
detector's threshold)."""
BUSY = 0.9
"""Share of the CPU busy from which a workload counts as CPU-bound."""
DROP_SHARE = 0.5
"""Share of the retransmitted segments the bridge and veth drops must reach to explain them."""
DAEMON_SHARE = 0.5
"""Share of the added CPU per unit of work the daemons must have spent to be the bound."""
MIN_DAEMON_CORES = 0.02
"""Daemons using less than this many cores do not forward the workload's packets."""
BRIDGE_KINDS = frozenset({"bridge", "veth"})
_DOCKER_PORT = re.compile(r"^(veth|docker\d|br-|br\d)")
"""Docker's own bridge and veth devices (not in the lab's facts by kind)."""

CLAIMS = {
    "softirq_saturation": ("003", "softirq saturates one core on the overlay (and not on the "
                                  "direct path)"),
    "drops_behind_retransmissions": ("001", "drops in bridge/veth buffers cause the TCP "
                                            "retransmissions"),
    "forwarder_bound": ("003", "the forwarder's CPU bounds the throughput"),
}
"""Each hypothesis: the study that argued it and the claim in a line."""


@dataclass(frozen=True)
class Check:
    """One hypothesis evaluated on one layer and workload."""

    hypothesis: str
    layer: str
    workload: str
    verdict: Verdict
    numbers: str
    """What the verdict rests on, in words with the numbers."""

    @property
    def study(self) -> str:
        return CLAIMS[self.hypothesis][0]

    @property
    def claim(self) -> str:
        return CLAIMS[self.hypothesis][1]


def _pct(x: float) -> str:
    return f"{x:.0%}"


def softirq_saturation(evidence: Evidence, layer: PathCost, base: PathCost,
                       overlay: bool, never_crossed: str = "") -> Check | None:
    """Study 003's saturated core (module docstring); None for a layer without an overlay."""
    if not overlay:
        return None
    wl = evidence.condition.workload
    if never_crossed:
        return Check("softirq_saturation", layer.layer, wl, "not testable",
                     f"the overlay is never crossed here: {never_crossed}")
    squeeze = (f"; the receive softirq ran out of budget {layer.squeezes_per_s:,.0f} times/s "
               f"({base.layer}: {base.squeezes_per_s:,.0f})"
               if layer.squeezes_per_s is not None and base.squeezes_per_s is not None else "")
    if layer.peak_softirq is not None and base.peak_softirq is not None:
        mine, theirs = layer.peak_softirq, base.peak_softirq
        text = (f"busiest core {_pct(mine)} in softirq (median of "
                f"{counted(layer.units, 'unit')}; "
                f"saturated from {_pct(SOFTIRQ)}); {base.layer}: {_pct(theirs)}{squeeze}")
        if mine >= SOFTIRQ and theirs < SOFTIRQ:
            return Check("softirq_saturation", layer.layer, wl, "supported", text)
        if mine >= SOFTIRQ:
            text += f"; {base.layer} saturates a core too, so the overlay is not why"
        return Check("softirq_saturation", layer.layer, wl, "contradicted", text)
    if math.isnan(layer.softirq_cores) or not layer.cores:
        return Check("softirq_saturation", layer.layer, wl, "not testable",
                     "no CPU time by state was recorded for this workload")
    mine, cores = layer.softirq_cores, layer.cores
    text = (f"softirq took {mine:.2f} of {cores} cores machine-wide ({base.layer}: "
            f"{base.softirq_cores:.2f}){squeeze}")
    if mine < SOFTIRQ:
        return Check("softirq_saturation", layer.layer, wl, "contradicted",
                     f"{text}: less than {SOFTIRQ:g} of a core in all, so no core can have "
                     f"spent {_pct(SOFTIRQ)} in softirq")
    if mine >= cores - 1 + SOFTIRQ:
        verdict: Verdict = ("supported" if base.softirq_cores < cores - 1 + SOFTIRQ
                            else "contradicted")
        return Check("softirq_saturation", layer.layer, wl, verdict,
                     f"{text}: at least one core spent {_pct(SOFTIRQ)} or more in softirq")
    return Check("softirq_saturation", layer.layer, wl, "not testable",
                 f"{text}; this design reads the machine's CPU per slice, not per core, so "
                 "one saturated core cannot be told from softirq spread over several")


def _bridge_port(kind: str, device: str) -> bool:
    return kind in BRIDGE_KINDS or (not kind and bool(_DOCKER_PORT.match(device)))


def drops_behind_retransmissions(evidence: Evidence, layer: PathCost,
                                 facts: PathFacts | None = None) -> Check | None:
    """Study 001's buffer drops behind TCP resends (module docstring); None for a workload
    that is not TCP."""
    cond = evidence.condition.as_dict()
    wl = evidence.condition.workload
    if cond.get("protocol", "tcp") != "tcp":
        return None
    if not layer.tcp or not layer.devices:
        return Check("drops_behind_retransmissions", layer.layer, wl, "not testable",
                     "no TCP or device counters were read around this workload")
    retrans = layer.tcp.get("tcp_retrans_segs", 0.0)
    ports = [d for d in layer.devices if _bridge_port(d.kind, d.device)]
    rx = sum(d.rx_drops for d in ports)
    tx = sum(d.tx_drops for d in ports)
    drops = rx + tx
    where = "trial" if not evidence.paired or evidence.design == "blocks" else "session"
    elsewhere = _other_losses(layer, ports)
    dsack = layer.tcp.get("tcp_dsack_recv")
    tail = (f"; {dsack:,.0f} D-SACKs (retransmissions the receiver already had)"
            if dsack is not None else "") + (f"; lost elsewhere: {elsewhere}" if elsewhere
                                             else "")
    head = (f"{retrans:,.0f} TCP segments retransmitted, {drops:,.0f} packets dropped on "
            f"{len(ports)} bridge and veth devices (rx {rx:,.0f}, tx {tx:,.0f}) in "
            f"{counted(layer.windows, where)}")
    if retrans <= 0 and drops <= 0:
        return Check("drops_behind_retransmissions", layer.layer, wl, "not testable",
                     f"{head}: nothing to explain{tail}")
    if retrans <= 0:
        return Check("drops_behind_retransmissions", layer.layer, wl, "contradicted",
                     f"{head}: drops without a retransmission{tail}")
    share = drops / retrans
    text = (f"{head}: drops could account for {min(share, 1.0):.0%} of the retransmissions "
            f"(order within a window not recorded){tail}")
    verdict: Verdict = "supported" if share >= DROP_SHARE else "contradicted"
    return Check("drops_behind_retransmissions", layer.layer, wl, verdict, text)


def _other_losses(layer: PathCost, ports: Sequence[DeviceCost]) -> str:
    """Drops the run counted outside the bridge and veth devices, in words."""
    parts = [f"{d.role} ({d.kind or 'device'}) {d.rx_drops + d.tx_drops:,.0f}"
             for d in layer.devices if d not in ports and d.rx_drops + d.tx_drops > 0]
    parts += [f"UDP socket buffers in {ns} {n:,.0f}" for ns, n in sorted(layer.udp_drops.items())
              if n > 0]
    return ", ".join(parts)


def forwarder_bound(evidence: Evidence, layer: PathCost, base: PathCost,
                    baseline: str = "host") -> Check | None:
    """Study 003's CPU-hungry forwarder as the bound of throughput (module docstring); None
    for a layer whose daemons do not carry the workload."""
    wl = evidence.condition.workload
    if math.isnan(layer.daemon_cores) or layer.daemon_cores < MIN_DAEMON_CORES:
        return None
    if any("rtt_mean_us" in u.figures for u in evidence.units):
        return None  # one transaction in flight: its rate is bounded by its round trip
    lab = cpu(evidence, layer.layer, baseline)
    if lab is None or math.isnan(layer.busy_share):
        return Check("forwarder_bound", layer.layer, wl, "not testable",
                     "the lab's CPU or the machine's CPU by state was not recorded for "
                     "this workload")
    added = sum(p.value for p in lab.parts)
    daemons = next((p.value for p in lab.parts if p.name == "daemons"), 0.0)
    share = daemons / added if added > 0 else math.nan
    per_core = layer.peak_busy is not None and base.peak_busy is not None
    if per_core:
        assert layer.peak_busy is not None and base.peak_busy is not None
        busy, theirs, where = layer.peak_busy, base.peak_busy, "of its busiest core"
    else:
        busy, theirs, where = layer.busy_share, base.busy_share, "of the machine"
    unit = "µs" if evidence.per == "transaction" else "cores/(Gbit/s)"
    per = " per transaction" if evidence.per == "transaction" else ""
    cpb = layer.cpu
    gain = cpb / (cpb - daemons) if cpb > daemons > 0 else math.nan
    text = (f"CPU busy {_pct(busy)} {where} ({baseline}: {_pct(theirs)}); "
            f"the daemons used {layer.daemon_cores:.2f} cores, {_num(daemons)} {unit}{per} "
            f"of the {_num(added)} the lab's processes added"
            + (f" ({share:.0%})" if not math.isnan(share) else "")
            + (f"; without them the lab's CPU would move x{gain:.1f} as much"
               if not math.isnan(gain) else ""))
    cores = layer.cores or 1
    busy_cores = busy * (1 if per_core else cores)
    if busy_cores < BUSY:
        return Check("forwarder_bound", layer.layer, wl, "contradicted",
                     f"{text}: no core was saturated, so something else bounds the "
                     "throughput")
    if not per_core and busy_cores < cores - 1 + BUSY:
        return Check("forwarder_bound", layer.layer, wl, "not testable",
                     f"{text}; {busy_cores:.2f} of {cores} cores busy: one may have been "
                     "saturated, but this design reads the machine's CPU, not each core's")
    if math.isnan(share) or share < DAEMON_SHARE:
        return Check("forwarder_bound", layer.layer, wl, "contradicted",
                     f"{text}: the daemons are not the main added cost")
    return Check("forwarder_bound", layer.layer, wl, "supported", text)


def _num(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1 else f"{x:,.1f}"
