"""``wireguard``: nodes on per-host bridges, host-to-host traffic in an encrypted WireGuard tunnel.

Like ``bridge``, but each host routes the other hosts' node subnets into its WireGuard
device instead of straight over the underlay, so every cross-host packet is encrypted and
carried as UDP between the hosts' underlay addresses. Uses the kernel module when the
kernel has it; otherwise the userspace ``wireguard-go`` (the current build from the Go
module proxy: Debian's older one drops datagrams under load). Node MTU leaves room for the
80-byte WireGuard overhead.
"""

from __future__ import annotations

from typing import Literal

from vnetbench.host.features import kernel_features
from vnetbench.lab.plan import Command, Daemon, PlanBuilder, WriteFile
from vnetbench.lab.topology import Topology
from vnetbench.layers.base import (
    WIREGUARD_OVERHEAD,
    BridgedOptions,
    Layer,
    NodePlacement,
    PlanContext,
    peer_subnet_routes,
    plan_bridged_nodes,
    plan_underlay,
    port_field,
    underlay_mtu_field,
)
from vnetbench.layers.programs import WG, WIREGUARD_GO
from vnetbench.layers.wgkeys import generate_keypair

USERSPACE_ENV = (("WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD", "1"),)
WG_SOCKET_DIR = "/var/run/wireguard"


class WireguardOptions(BridgedOptions):
    port: int = port_field(51820)
    """UDP port WireGuard listens on in every emulated host."""
    underlay_mtu: int = underlay_mtu_field(WIREGUARD_OVERHEAD)
    """MTU of the underlay; the nodes get this minus WireGuard's overhead (80 bytes)."""
    implementation: Literal["auto", "kernel", "userspace"] = "auto"
    """``auto`` (kernel when present), ``kernel`` or ``userspace`` (wireguard-go)."""

    def tunnel_underlay_mtu(self) -> int | None:
        return self.underlay_mtu


class WireguardLayer(Layer[WireguardOptions]):
    name = "wireguard"
    supports_vm_nodes = True
    summary = "bridge per host; host-to-host traffic in a WireGuard tunnel (encrypted overlay)"
    between_hosts = "the WireGuard tunnel"
    options = WireguardOptions
    programs = (WG,)
    fallback_programs = (WIREGUARD_GO,)

    def resolve_tools(self, topo: Topology) -> dict[str, str]:
        """``wg``, plus ``wireguard-go`` when the kernel has no WireGuard module."""
        tools = super().resolve_tools(topo)
        if not kernel_features().get("wireguard", False):
            tools[WIREGUARD_GO.name] = WIREGUARD_GO.find()
        return tools

    def plan(
        self, topo: Topology, opts: WireguardOptions, b: PlanBuilder, ctx: PlanContext
    ) -> list[NodePlacement]:
        kernel = opts.implementation == "kernel" or (
            opts.implementation == "auto" and ctx.features.get("wireguard", False)
        )
        plan_underlay(topo, b, forwarding=True, ctx=ctx)
        mtu = opts.underlay_mtu - WIREGUARD_OVERHEAD
        nodes = plan_bridged_nodes(topo, b, bridge_nf=opts.bridge_nf, mtu=mtu, ctx=ctx)
        n, a = topo.names, topo.addresses
        keys = [generate_keypair() for _ in range(topo.hosts)]
        for i in range(topo.hosts):
            host, dev = n.host_ns(i), n.wireguard(i)
            key_file = str(ctx.run_dir / f"wg{i}.key")
            b.files.append(WriteFile(key_file, keys[i][0] + "\n", secret=True))
            wg_set: list[str] = [ctx.tool("wg"), "set", dev, "listen-port", str(opts.port),
                                 "private-key", key_file]
            for k in range(topo.hosts):
                if k != i:
                    wg_set += ["peer", keys[k][1], "endpoint", f"{a.host_underlay(k)}:{opts.port}",
                               "allowed-ips", a.host_subnet(k)]
            up = [f"link set {dev} mtu {mtu} up", *peer_subnet_routes(topo, i, dev)]
            if kernel:
                b.host_lines[host] += [f"link add {dev} type wireguard", *up]
                b.commands.append(Command(host, tuple(wg_set)))
            else:
                b.daemons.append(Daemon(
                    netns=host, role=f"wireguard-go {dev}",
                    argv=(ctx.tool("wireguard-go"), "-f", dev),
                    ready=f"path:{WG_SOCKET_DIR}/{dev}.sock",
                    env=USERSPACE_ENV, then=tuple(up), then_cmds=(tuple(wg_set),),
                ))
        return nodes
