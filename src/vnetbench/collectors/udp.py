"""UDP collector: /proc/net/snmp (Udp) counters per namespace: datagrams and socket drops.

A tunnel that carries the lab's packets in UDP (the userspace forwarder, wireguard-go, VXLAN's
kernel socket) loses them where no device counts a drop: in a socket whose receive buffer is
full. This collector reports the deltas ``udp_in_datagrams``, ``udp_out_datagrams``,
``udp_in_errors``, ``udp_rcvbuf_errors`` (dropped: the receive buffer was full) and
``udp_sndbuf_errors`` per namespace, labelled ``netns`` (``root`` for the root namespace).
"""

from __future__ import annotations

from collections.abc import Mapping

from vnetbench.collectors.base import (
    NamespacedCollector,
    Snapshot,
    counter_delta,
    now_ns,
    sample,
)
from vnetbench.collectors.tcp import SNMP, parse_snmp
from vnetbench.results.model import Sample

UDP_COUNTERS: tuple[tuple[str, str], ...] = (
    ("InDatagrams", "udp_in_datagrams"), ("OutDatagrams", "udp_out_datagrams"),
    ("InErrors", "udp_in_errors"), ("RcvbufErrors", "udp_rcvbuf_errors"),
    ("SndbufErrors", "udp_sndbuf_errors"),
)
"""(counter of the ``Udp`` section, metric) pairs reported."""


class UdpCollector(NamespacedCollector):
    """UDP datagram and socket-buffer drop counters in one or more namespaces."""

    name = "udp"

    def snapshot(self) -> Snapshot:
        t = now_ns()
        counters: dict[str, dict[str, int]] = {}
        for ns in self.namespaces:
            udp = parse_snmp(self.read(ns, SNMP)).get("Udp", {})
            counters[self.key(ns)] = {
                name: udp[name] for name, _ in UDP_COUNTERS if name in udp}
        return Snapshot(t, counters)

    def delta(self, before: Snapshot, after: Snapshot,
              labels: Mapping[str, str] | None = None) -> list[Sample]:
        base = dict(labels or {})
        out: list[Sample] = []
        for netns in sorted(after.counters):
            a, b = after.counters[netns], before.counters.get(netns, {})
            for name, metric in UDP_COUNTERS:
                if name in a and name in b:
                    out.append(sample(metric, counter_delta(b[name], a[name]), "count", base,
                                      after.t_ns, netns=netns))
        return out
