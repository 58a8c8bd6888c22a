"""Shaping the underlay "wire" between hosts: rate with TBF, delay/jitter/loss in userspace.

Every cross-host packet crosses the switch namespace exactly once, so that is where the
link is shaped, the same way for every layer (routed, encapsulated or macvlan traffic):
- ``rate``: a TBF qdisc on each switch port's egress (towards its host): each direction of
  each host's wire is limited to ``rate``.
- ``delay``/``jitter``/``loss``: with sch_netem where the kernel has it (netem on each switch
  port); otherwise (this host) ``vnetbench-linkem`` holds each packet for delay + jitter
  (never reordering) or drops it, fed by an NFQUEUE rule on bridged IPv4 in the switch
  namespace (br_netfilter, enabled in that namespace only). One-way: an RTT grows by 2 x delay.
- ``pairs`` (a delay matrix, e.g. WAN sites): one ``vnetbench-linkem`` per direction of every
  host pair, each fed by its own queue from a rule matching the packet's switch ports
  (``physdev`` in and out, in the switch's FORWARD chain), so each pair gets its own delay.
"""

from __future__ import annotations

from vnetbench.lab.plan import Daemon, PlanBuilder
from vnetbench.lab.topology import LinkShape, Topology
from vnetbench.layers.base import PlanContext, set_bridge_nf

LINKEM_QUEUE = 0


def tbf_burst_bytes(rate_bps: float) -> int:
    """Bucket size: 5 ms worth of traffic, at least 16 KiB (keeps TBF accurate at low HZ)."""
    return max(16 * 1024, int(rate_bps / 8 * 0.005))


def netem_args(link: LinkShape) -> str:
    args = f"delay {link.delay * 1e6:.0f}us"
    if link.jitter:
        args += f" {link.jitter * 1e6:.0f}us distribution normal"
    if link.loss:
        args += f" loss {link.loss * 100:.4f}%"
    return args


def linkem_stats_file(ctx: PlanContext) -> str:
    return str(ctx.run_dir / "linkem.json")


def plan_link_shaping(topo: Topology, b: PlanBuilder, ctx: PlanContext, seed: int) -> None:
    link, n = topo.link, topo.names
    if not link.is_shaped:
        return
    sw = n.switch_ns
    # a delay per pair is always the emulators' (netem on a port would delay every pair alike)
    use_netem = (link.needs_emulator and ctx.features.get("netem", False)
                 and not link.pair_delays)
    for i in range(topo.hosts):
        port = n.switch_port(i)
        if use_netem and link.rate:
            b.traffic[sw] += [
                f"qdisc add dev {port} root handle 1: netem {netem_args(link)}",
                f"qdisc add dev {port} parent 1: handle 2: tbf rate {link.rate:.0f}bit "
                f"burst {tbf_burst_bytes(link.rate)} latency 100ms",
            ]
        elif use_netem:
            b.traffic[sw].append(f"qdisc add dev {port} root netem {netem_args(link)}")
        elif link.rate:
            b.traffic[sw].append(
                f"qdisc add dev {port} root tbf rate {link.rate:.0f}bit "
                f"burst {tbf_burst_bytes(link.rate)} latency 100ms"
            )
    if link.pair_delays:
        plan_pair_emulators(topo, b, ctx, seed)
        return
    if link.needs_emulator and not use_netem:
        set_bridge_nf(b, sw, True)
        b.firewall[sw] += [
            "*mangle",
            ":PREROUTING ACCEPT [0:0]",
            f"-A PREROUTING -i {n.switch_bridge} -j NFQUEUE --queue-num {LINKEM_QUEUE}",
            "COMMIT",
        ]
        argv = [ctx.tool("vnetbench-linkem"), "--queue", str(LINKEM_QUEUE),
                "--delay-us", f"{link.delay * 1e6:.0f}", "--jitter-us", f"{link.jitter * 1e6:.0f}",
                "--loss", f"{link.loss:.6f}", "--seed", str(seed),
                "--stats-file", linkem_stats_file(ctx)]
        b.daemons.append(Daemon(netns=sw, role="link emulator", argv=tuple(argv), ready="stdout"))


def plan_pair_emulators(topo: Topology, b: PlanBuilder, ctx: PlanContext, seed: int) -> None:
    """A link emulator per direction of every host pair, each on its own NFQUEUE."""
    link, n = topo.link, topo.names
    sw = n.switch_ns
    set_bridge_nf(b, sw, True)
    rules = ["*mangle", ":FORWARD ACCEPT [0:0]"]
    queue = LINKEM_QUEUE
    for i in range(topo.hosts):
        for k in range(topo.hosts):
            if i == k:
                continue
            rules.append(f"-A FORWARD -m physdev --physdev-in {n.switch_port(i)} --physdev-out "
                         f"{n.switch_port(k)} -j NFQUEUE --queue-num {queue}")
            argv = [ctx.tool("vnetbench-linkem"), "--queue", str(queue),
                    "--delay-us", f"{link.delay_between(i, k) * 1e6:.0f}",
                    "--jitter-us", f"{link.jitter * 1e6:.0f}", "--loss", f"{link.loss:.6f}",
                    "--seed", str(seed + queue),
                    "--stats-file", str(ctx.run_dir / f"linkem-{i}-{k}.json")]
            b.daemons.append(Daemon(netns=sw, role=f"link emulator {i}->{k}", argv=tuple(argv),
                                    ready="stdout"))
            queue += 1
    rules.append("COMMIT")
    b.firewall[sw] += rules
