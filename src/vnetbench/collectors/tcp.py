"""TCP collector: /proc/net/snmp (Tcp) and /proc/net/netstat (TcpExt) counters per namespace.

Reports deltas of retransmissions, segments, resets and listen-queue drops, e.g.
``tcp_retrans_segs``, ``tcp_out_segs``, ``tcp_listen_drops``, ``tcp_listen_overflows``,
``tcp_lost_retransmit``, plus ``tcp_retrans_ratio`` (RetransSegs / OutSegs). What tells a
retransmission caused by a lost packet from one that was not needed is counted too:
``tcp_dsack_recv`` (the receiver reported a duplicate: the retransmission was spurious),
``tcp_sack_reorder`` (reordering detected), ``tcp_loss_probes`` (tail loss probes sent) and
``tcp_spurious_rtx_host_queues`` (retransmissions skipped while the original was still queued
on this host). Samples carry the ``netns`` label (``root`` for the root namespace).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping

from vnetbench.collectors.base import (
    NamespacedCollector,
    Snapshot,
    counter_delta,
    now_ns,
    sample,
)
from vnetbench.results.model import Sample

SNMP = "/proc/net/snmp"
NETSTAT = "/proc/net/netstat"

TCP_COUNTERS: tuple[tuple[str, str], ...] = (
    ("Tcp", "ActiveOpens"), ("Tcp", "PassiveOpens"), ("Tcp", "AttemptFails"),
    ("Tcp", "EstabResets"), ("Tcp", "InSegs"), ("Tcp", "OutSegs"), ("Tcp", "RetransSegs"),
    ("Tcp", "InErrs"), ("Tcp", "OutRsts"),
    ("TcpExt", "ListenDrops"), ("TcpExt", "ListenOverflows"), ("TcpExt", "TCPLostRetransmit"),
    ("TcpExt", "TCPTimeouts"), ("TcpExt", "TCPSynRetrans"), ("TcpExt", "TCPFastRetrans"),
    ("TcpExt", "TCPBacklogDrop"), ("TcpExt", "TCPRcvQDrop"), ("TcpExt", "TCPZeroWindowDrop"),
    ("TcpExt", "TCPDSACKRecv"), ("TcpExt", "TCPSACKReorder"), ("TcpExt", "TCPLossProbes"),
    ("TcpExt", "TCPSpuriousRtxHostQueues"),
)


def parse_snmp(text: str) -> dict[str, dict[str, int]]:
    """``{"Tcp": {"RetransSegs": n, ...}, "TcpExt": {...}}`` from snmp/netstat header pairs."""
    out: dict[str, dict[str, int]] = {}
    lines = [line for line in text.splitlines() if ":" in line]
    for header, values in zip(lines[::2], lines[1::2], strict=False):
        section, _, names = header.partition(":")
        vsection, _, nums = values.partition(":")
        if section != vsection:
            continue
        out.setdefault(section.strip(), {}).update(
            {n: int(v) for n, v in zip(names.split(), nums.split(), strict=False)})
    return out


def snake(name: str) -> str:
    """``RetransSegs`` -> ``retrans_segs``, ``TCPLostRetransmit`` -> ``lost_retransmit``."""
    name = re.sub(r"^TCP", "", name)
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return name.lower()


def metric_name(section: str, counter: str) -> str:
    return f"tcp_{snake(counter)}"


class TcpCollector(NamespacedCollector):
    """TCP retransmission and listen-queue counters in one or more namespaces."""

    name = "tcp"

    def snapshot(self) -> Snapshot:
        t = now_ns()
        counters: dict[str, dict[str, int]] = {}
        for ns in self.namespaces:
            label = self.key(ns)
            parsed = parse_snmp(self.read(ns, SNMP))
            with contextlib.suppress(FileNotFoundError):
                parsed |= parse_snmp(self.read(ns, NETSTAT))
            wanted = {f"{s}.{c}": parsed[s][c] for s, c in TCP_COUNTERS
                      if c in parsed.get(s, {})}
            counters[label] = wanted
        return Snapshot(t, counters)

    def delta(self, before: Snapshot, after: Snapshot,
              labels: Mapping[str, str] | None = None) -> list[Sample]:
        base = dict(labels or {})
        t = after.t_ns
        out: list[Sample] = []
        for netns in sorted(after.counters):
            a = after.counters[netns]
            b = before.counters.get(netns, {})
            d: dict[str, int] = {}
            for section, counter in TCP_COUNTERS:
                key = f"{section}.{counter}"
                if key in a and key in b:
                    d[key] = counter_delta(b[key], a[key])
                    out.append(sample(metric_name(section, counter), d[key], "count", base, t,
                                      netns=netns))
            out_segs = d.get("Tcp.OutSegs", 0)
            if out_segs > 0 and "Tcp.RetransSegs" in d:
                out.append(sample("tcp_retrans_ratio", d["Tcp.RetransSegs"] / out_segs,
                                  "ratio", base, t, netns=netns))
        return out
