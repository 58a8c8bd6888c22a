"""Network device collector: /proc/net/dev per namespace -> packets, bytes, drops, errors.

For every (namespace, device) it reports deltas ``rx_packets``, ``tx_packets``, ``rx_bytes``,
``tx_bytes``, ``rx_drops``, ``tx_drops``, ``rx_errs``, ``tx_errs``, rates ``rx_pps`` and
``tx_pps`` and, when packets moved, ``rx_mean_packet_bytes``/``tx_mean_packet_bytes``.
Samples carry labels ``netns`` (``root`` for the root namespace) and ``device``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vnetbench.collectors.base import (
    NamespacedCollector,
    Reader,
    Snapshot,
    counter_delta,
    now_ns,
    read_root,
    sample,
)
from vnetbench.results.model import Sample

RX_FIELDS = ("bytes", "packets", "errs", "drop", "fifo", "frame", "compressed", "multicast")
TX_FIELDS = ("bytes", "packets", "errs", "drop", "fifo", "colls", "carrier", "compressed")
NET_DEV = "/proc/net/dev"
_SEP = "\t"


def parse_net_dev(text: str) -> dict[str, dict[str, int]]:
    """``{device: {"rx_bytes": n, "rx_packets": n, ..., "tx_carrier": n}}`` from /proc/net/dev."""
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        if ":" not in line or "|" in line:
            continue
        name, _, rest = line.partition(":")
        values = [int(v) for v in rest.split()]
        if len(values) < 16:
            continue
        counters = {f"rx_{f}": v for f, v in zip(RX_FIELDS, values[:8], strict=True)}
        counters |= {f"tx_{f}": v for f, v in zip(TX_FIELDS, values[8:16], strict=True)}
        out[name.strip()] = counters
    return out


_COUNTS = (
    ("rx_packets", "rx_packets", "packets"), ("tx_packets", "tx_packets", "packets"),
    ("rx_bytes", "rx_bytes", "bytes"), ("tx_bytes", "tx_bytes", "bytes"),
    ("rx_drop", "rx_drops", "packets"), ("tx_drop", "tx_drops", "packets"),
    ("rx_errs", "rx_errs", "packets"), ("tx_errs", "tx_errs", "packets"),
)


class NetDevCollector(NamespacedCollector):
    """Per-device traffic and drop counters in one or more network namespaces."""

    name = "netdev"

    def __init__(self, read: Reader = read_root, *,
                 namespaces: Sequence[str | None] = (None,),
                 devices: Sequence[str] | None = None, include_loopback: bool = False) -> None:
        super().__init__(read, namespaces=namespaces)
        self.devices = set(devices) if devices is not None else None
        self.include_loopback = include_loopback

    def _wanted(self, device: str) -> bool:
        if self.devices is not None:
            return device in self.devices
        return self.include_loopback or device != "lo"

    def snapshot(self) -> Snapshot:
        t = now_ns()
        counters: dict[str, dict[str, int]] = {}
        for ns in self.namespaces:
            label = self.key(ns)
            for device, values in parse_net_dev(self.read(ns, NET_DEV)).items():
                if self._wanted(device):
                    counters[f"{label}{_SEP}{device}"] = values
        return Snapshot(t, counters)

    def delta(self, before: Snapshot, after: Snapshot,
              labels: Mapping[str, str] | None = None) -> list[Sample]:
        base = dict(labels or {})
        elapsed = self.elapsed_s(before, after)
        t = after.t_ns
        out: list[Sample] = []
        for key in sorted(after.counters):
            netns, _, device = key.partition(_SEP)
            a = after.counters[key]
            b = before.counters.get(key, dict.fromkeys(a, 0))  # appeared: count from 0
            d = {name: counter_delta(b.get(name, 0), v) for name, v in a.items()}
            where = {"netns": netns, "device": device}
            for field_name, metric, unit in _COUNTS:
                out.append(sample(metric, d[field_name], unit, base, t, **where))
            for side in ("rx", "tx"):
                packets, nbytes = d[f"{side}_packets"], d[f"{side}_bytes"]
                if elapsed > 0:
                    out.append(sample(f"{side}_pps", packets / elapsed, "packets/s", base, t,
                                      **where))
                if packets > 0:
                    out.append(sample(f"{side}_mean_packet_bytes", nbytes / packets, "bytes",
                                      base, t, **where))
        return out
