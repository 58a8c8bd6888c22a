"""Facts about a built lab that change what a path does: MTUs and offloads of its interfaces.

MTU and type of every interface the lab created come from one ``ip -j -d link`` per
namespace; offloads (TSO, GSO, GRO, checksumming, ...) from ``ethtool -k`` on the measured
nodes' own interfaces (the first two nodes), since offloads differing between layers can
explain a throughput gap by themselves.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

from vnetbench.backends.lab import Lab
from vnetbench.host.kernel import run_checked, run_in

OFFLOADS = ("tcp-segmentation-offload", "generic-segmentation-offload",
            "generic-receive-offload", "tx-checksumming", "rx-checksumming",
            "scatter-gather")


def interface_facts(lab: Lab) -> dict[str, Any]:
    facts: dict[str, Any] = {"mtu": {}, "kind": {}, "offloads": {}}
    for ns in lab.namespaces():
        links = json.loads(run_checked(["ip", "-n", ns, "-j", "-d", "link", "show"]) or "[]")
        for link in links:
            name = link.get("ifname", "")
            if name.startswith(lab.prefix):
                facts["mtu"][f"{ns}/{name}"] = link.get("mtu")
                facts["kind"][f"{ns}/{name}"] = link.get("linkinfo", {}).get("info_kind", "")
    if shutil.which("ethtool"):
        for node in lab.nodes[:2]:
            if node.netns is not None:  # a guest's NIC is virtio-net: its offloads are QEMU's
                facts["offloads"][node.name] = parse_ethtool_k(
                    run_in(node.netns, ["ethtool", "-k", node.ifname]))
    return facts


def parse_ethtool_k(text: str) -> dict[str, bool]:
    """The offloads we track from ``ethtool -k`` output (``name: on|off [fixed]``)."""
    out: dict[str, bool] = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        if key in OFFLOADS:
            out[key] = value.strip().startswith("on")
    return out
