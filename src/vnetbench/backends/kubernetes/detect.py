"""What a cluster's pod network is, read on its nodes: the CNI, its mode, MTU, encapsulation,
and the kube-proxy mode (recorded in run.json as ``kubernetes``).

On each Kubernetes node the evidence pod (hostNetwork, hostPID, the node's /etc and /run
mounted read-only) runs ``NODE_SCRIPT`` once: every device of the node's own namespace
(name, MTU, ARP type, ifindex, ``DEVTYPE`` from its uevent), the CNI configuration files
(``/etc/cni/net.d``, the first in lexical order is the one the runtime uses), whether a
flannel subnet file exists, the routing table, and what kube-proxy answers on its metrics
(``/proxyMode``, 127.0.0.1:10249) and health (10256) ports. ``node_facts`` parses that
(pure); ``cni_facts`` turns the nodes' facts and a pod's interface MTU into the summary:

    cni             the CNI's name: its config's first plugin type (flannel, calico, cilium,
                    bridge...), or flannel when flannel's subnet file or device is there
    encapsulation   vxlan, geneve, ipip, wireguard (a tunnel device of that kind on the
                    nodes), or none
    mode            the encapsulation, else ``routed`` (pod subnets routed between nodes)
    mtu             the pods' interface MTU; ``node_mtu`` the MTU of the nodes' uplink
    kube_proxy      iptables, ipvs, nftables (what kube-proxy says), or unknown
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

NODE_SCRIPT = r"""
for d in /sys/class/net/*; do
  n=${d##*/}
  t=$(sed -n 's/^DEVTYPE=//p' "$d/uevent" 2>/dev/null)
  echo "@@dev $n $(cat "$d/mtu") $(cat "$d/type") $(cat "$d/ifindex") ${t:--}"
done
for f in /host/etc/cni/net.d/*; do
  [ -f "$f" ] || continue
  echo "@@cni ${f##*/}"
  head -c 65536 "$f"; echo
done
[ -f /host/run/flannel/subnet.env ] && { echo "@@flannel"; cat /host/run/flannel/subnet.env; }
echo "@@route"; cat /proc/net/route
get() { printf 'GET %s HTTP/1.0\r\n\r\n' "$2" | nc -w 3 127.0.0.1 "$1" 2>/dev/null | tr -d '\r' | sed '1,/^$/d'; }
echo "@@proxymode"; get 10249 /proxyMode; echo
echo "@@healthz"; get 10256 /healthz; echo
echo "@@end"
"""
"""Run with busybox ``sh`` in the evidence pod (HTTP with ``nc``: a static busybox's ``wget``
resolves names through glibc's NSS, which it cannot load, and crashes)."""

TUNNEL_DEVTYPES = {"vxlan": "vxlan", "geneve": "geneve", "wireguard": "wireguard"}
ARPHRD_TUNNEL = "768"  # ipip
CNI_PLUGIN_NAMES = {"cilium-cni": "cilium", "calico": "calico", "flannel": "flannel",
                    "weave-net": "weave", "antrea": "antrea", "kube-ovn": "kube-ovn"}


@dataclass(frozen=True)
class Device:
    name: str
    mtu: int
    arp_type: str
    ifindex: int
    devtype: str


@dataclass
class NodeFacts:
    """What one Kubernetes node showed (``node_facts``)."""

    devices: list[Device] = field(default_factory=list)
    cni_files: dict[str, str] = field(default_factory=dict)
    flannel_env: dict[str, str] = field(default_factory=dict)
    default_dev: str | None = None
    proxy_mode: str = ""
    healthz: dict[str, Any] = field(default_factory=dict)
    routes: list[str] = field(default_factory=list)
    """Devices that carry a route (of /proc/net/route)."""

    def tunnels(self) -> dict[str, str]:
        """Tunnel devices by name -> kind: vxlan, geneve, wireguard (by their DEVTYPE), and
        ipip devices that carry routes (``tunl0`` exists wherever the ipip module is loaded)."""
        out = {}
        for d in self.devices:
            if d.devtype in TUNNEL_DEVTYPES:
                out[d.name] = TUNNEL_DEVTYPES[d.devtype]
            elif d.arp_type == ARPHRD_TUNNEL and d.name in self.routes:
                out[d.name] = "ipip"
        return out


def _sections(text: str) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("@@"):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


def node_facts(text: str) -> NodeFacts:
    """Parse ``NODE_SCRIPT``'s output."""
    facts = NodeFacts()
    for head, lines in _sections(text):
        word, _, rest = head.partition(" ")
        if word == "dev":
            parts = rest.split()
            if len(parts) == 5 and parts[1].isdigit() and parts[3].isdigit():
                facts.devices.append(Device(parts[0], int(parts[1]), parts[2], int(parts[3]),
                                            "" if parts[4] == "-" else parts[4]))
        elif word == "cni":
            facts.cni_files[rest] = "\n".join(lines)
        elif word == "flannel":
            facts.flannel_env = dict(line.split("=", 1) for line in lines if "=" in line)
        elif word == "route":
            for line in lines[1:]:
                fields = line.split()
                if len(fields) >= 2:
                    if fields[0] not in facts.routes:
                        facts.routes.append(fields[0])
                    if fields[1] == "00000000" and facts.default_dev is None:
                        facts.default_dev = fields[0]
        elif word == "proxymode":
            facts.proxy_mode = "".join(lines).strip()
        elif word == "healthz":
            try:
                data = json.loads("".join(lines) or "{}")
            except ValueError:
                data = {}
            facts.healthz = data if isinstance(data, dict) else {}
    return facts


def cni_config(files: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """The configuration the runtime uses (first ``.conflist``/``.conf``/``.json`` in lexical
    order, as containerd and CRI-O pick it) and its parsed JSON ({} if none parses)."""
    for name in sorted(files):
        if not name.endswith((".conflist", ".conf", ".json")):
            continue
        try:
            data = json.loads(files[name])
        except ValueError:
            continue
        if isinstance(data, dict):
            return name, data
    return "", {}


def plugin_types(config: dict[str, Any]) -> list[str]:
    plugins = config.get("plugins")
    if isinstance(plugins, list):
        return [str(p.get("type", "")) for p in plugins if isinstance(p, dict)]
    return [str(config["type"])] if "type" in config else []


def cni_facts(nodes: dict[str, NodeFacts], pod_mtu: int | None) -> dict[str, Any]:
    """The cluster's pod network as the nodes show it (see the module docstring)."""
    tunnels: dict[str, str] = {}
    files: dict[str, str] = {}
    flannel = False
    for facts in nodes.values():
        tunnels.update(facts.tunnels())
        files.update(facts.cni_files)
        flannel = flannel or bool(facts.flannel_env) or any(
            d.name.startswith("flannel.") for d in facts.devices)
    config_file, config = cni_config(files)
    types = plugin_types(config)
    name = next((CNI_PLUGIN_NAMES[t] for t in types if t in CNI_PLUGIN_NAMES), "")
    if not name:
        name = "flannel" if flannel else (types[0] if types else "unknown")
    kinds = sorted(set(tunnels.values()))
    encapsulation = "+".join(kinds) if kinds else "none"
    uplinks = {f.default_dev for f in nodes.values() if f.default_dev}
    node_mtus = sorted({d.mtu for f in nodes.values() for d in f.devices
                        if d.name in uplinks})
    modes = sorted({f.proxy_mode for f in nodes.values() if f.proxy_mode})
    return {
        "cni": name,
        "cni_config": {"file": config_file, "name": config.get("name", ""),
                       "plugins": types},
        "mode": encapsulation if kinds else "routed",
        "encapsulation": encapsulation,
        "tunnel_devices": dict(sorted(tunnels.items())),
        "mtu": pod_mtu,
        "node_mtu": node_mtus[0] if len(node_mtus) == 1 else node_mtus or None,
        "kube_proxy": modes[0] if len(modes) == 1 else ("+".join(modes) or "unknown"),
    }


def healthz_updated(facts: NodeFacts) -> str:
    """kube-proxy's ``lastUpdated`` (an RFC 3339 time; empty when it did not answer)."""
    value = facts.healthz.get("lastUpdated", "")
    return value if isinstance(value, str) else ""
