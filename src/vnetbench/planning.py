"""Dry-run plans (``vnetbench plan``): what each trial's lab would be, without the kernel.

Uses placeholder run id ``0000`` and the first candidate address block, assumes no kernel
WireGuard and no sch_netem (so the userspace implementations appear, as on this host), and
names tools instead of resolving them. For Docker's modes the docker commands that follow
the engines' start are listed too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from vnetbench.backends.docker.modes import DockerLayer, DockerOptions
from vnetbench.backends.docker.steps import build_phases, describe_phases
from vnetbench.layers.base import PlanContext
from vnetbench.layers.registry import get_layer
from vnetbench.layers.shaping import plan_link_shaping
from vnetbench.plan import PlanBuilder
from vnetbench.scenario import Scenario, ScenarioFile
from vnetbench.state import CANDIDATE_NETS
from vnetbench.topology import Addresses, Names, Topology
from vnetbench.workloads.registry import service_ports


def plan_text(s: Scenario, layer_name: str) -> str:
    topo = Topology(hosts=s.hosts, nodes=s.nodes, names=Names("0000"),
                    addresses=Addresses(CANDIDATE_NETS[0]), link=s.link.shape(),
                    resources=s.resources.resources())
    layer = get_layer(layer_name)
    opts = layer.options.model_validate(s.layer_options.get(layer_name, {}))
    ctx = PlanContext(run_dir=Path("/run/vnetbench/work/0000"))
    builder = PlanBuilder()
    placements = layer.plan(topo, opts, builder, ctx)
    plan_link_shaping(topo, builder, ctx, s.seed)
    lines = [builder.build().render()]
    if isinstance(layer, DockerLayer) and isinstance(opts, DockerOptions):
        services = service_ports([o for _, o in s.workload_options()])
        lines += describe_phases(build_phases(topo, layer.mode, opts, services, topo.resources,
                                              ctx.run_dir / "node-rootfs.tar"))
    lines.append("== nodes")
    lines += [f"    n{p.index}: host {p.host}, netns {p.netns}, {p.ip} on {p.ifname}"
              for p in placements]
    if s.resources.resources().any:
        lines.append(f"== cgroups per node: {s.resources.model_dump(exclude_none=True)}")
    return "\n".join(lines)


def dry_run_plans(sf: ScenarioFile) -> Iterator[tuple[str, str]]:
    for point in sf.points:
        s = point.scenario
        axes = " ".join(f"{k}={v}" for k, v in point.axes.items())
        for layer in s.layers:
            shown = " ".join(f"{k}={v}" for k, v in (("hosts", s.hosts), ("nodes", s.nodes))
                             if k not in point.axes)
            yield f"{layer} {shown} {axes}".strip(), plan_text(s, layer)
