"""Dry-run plans (``vnetbench plan``): what each trial's lab would be, without the kernel.

Uses placeholder run id ``0000`` and the first candidate address block, assumes no kernel
WireGuard and no sch_netem (so the userspace implementations appear, as on this host), and
names tools instead of resolving them. For Docker's modes the docker commands that follow
the engines' start are listed too. The lab has the nodes the workloads add (Hadoop's
master), as the run builds it.

A layer this kernel cannot build is refused in one line, as ``vnetbench run`` refuses it
(ScenarioError naming the missing feature), unless the scenario says ``skip_unsupported``:
then its plans are replaced by a line saying it would be skipped. Where the kernel's
features cannot be probed (not root, no cached probe) the check is left to ``run``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

from vnetbench.backends.docker.modes import DockerLayer, DockerOptions
from vnetbench.backends.docker.steps import build_phases, describe_phases
from vnetbench.errors import MissingToolError, ScenarioError, UnsupportedError
from vnetbench.layers.base import PlanContext
from vnetbench.layers.registry import get_layer
from vnetbench.layers.shaping import plan_link_shaping
from vnetbench.plan import PlanBuilder
from vnetbench.scenario import Scenario, ScenarioFile
from vnetbench.state import CANDIDATE_NETS
from vnetbench.topology import Addresses, Names, Topology
from vnetbench.workloads.registry import extra_nodes, service_ports


def unsupported_layers(sf: ScenarioFile) -> dict[str, str]:
    """Layer name -> why this host cannot build it, for the layers of ``sf`` (empty when
    the kernel's features cannot be found out here)."""
    from vnetbench.lab import check_layer_supported

    why: dict[str, str] = {}
    for name in dict.fromkeys(n for p in sf.points for n in p.scenario.layers):
        try:
            check_layer_supported(get_layer(name))
        except UnsupportedError as exc:
            why[name] = str(exc)
        except MissingToolError:
            continue  # tools are named, not resolved, in a plan
        except (OSError, subprocess.SubprocessError):
            return {}  # features cannot be probed (not root): `run` checks
    return why


def plan_text(s: Scenario, layer_name: str) -> str:
    nodes = s.nodes + extra_nodes([o for _, o in s.workload_options()])
    topo = Topology(hosts=s.hosts, nodes=nodes, names=Names("0000"),
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
    """(title, plan) per sweep point and layer; ScenarioError before the first one when a
    layer cannot be built here and the scenario does not say ``skip_unsupported``."""
    unsupported = unsupported_layers(sf)
    for point in sf.points:
        s = point.scenario
        for layer in s.layers:
            if layer in unsupported and not s.skip_unsupported:
                raise ScenarioError(f"{sf.path}: layers: {unsupported[layer]}")
    for point in sf.points:
        s = point.scenario
        axes = " ".join(f"{k}={v}" for k, v in point.axes.items())
        for layer in s.layers:
            shown = " ".join(f"{k}={v}" for k, v in (("hosts", s.hosts), ("nodes", s.nodes))
                             if k not in point.axes)
            title = f"{layer} {shown} {axes}".strip()
            if layer in unsupported:
                yield title, f"skipped on this host (skip_unsupported): {unsupported[layer]}"
            else:
                yield title, plan_text(s, layer)
