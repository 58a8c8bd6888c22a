"""The plan of a lab, computed once as a value: the layer's kernel plan (underlay, layer,
link shaping), where every node will be, and what the backend does after (``LabPlan``).

``vnetbench.lab`` builds from it, ``vnetbench plan`` prints it, and the unit tests check it:
all three call ``make_plan``.
"""

from __future__ import annotations

from collections.abc import Sequence

from vnetbench.backends.base import Backend, LabPlan
from vnetbench.backends.registry import backend_class
from vnetbench.layers.base import Layer, LayerOptions, PlanContext
from vnetbench.layers.shaping import plan_link_shaping
from vnetbench.plan import PlanBuilder
from vnetbench.topology import Topology


def make_plan(topo: Topology, layer: Layer, options: LayerOptions, ctx: PlanContext, *,
              seed: int = 0, services: Sequence[int] = (),
              backend: type[Backend] | None = None) -> LabPlan:
    """The lab of ``layer`` on ``topo`` (pure: nothing touches the kernel); ``backend``:
    the one realising it, when not the layer's own (real machines)."""
    backend = backend or backend_class(layer)
    ctx = ctx.with_kinds(backend.node_kind, backend.host_kind)
    builder = PlanBuilder()
    placements = tuple(layer.plan(topo, options, builder, ctx))
    plan_link_shaping(topo, builder, ctx, seed)
    ports = tuple(sorted(set(services)))
    kernel = builder.build()
    extra = backend.plan(topo, layer, options, ctx, placements, ports, kernel)
    return LabPlan(topo=topo, layer=layer, options=options,
                   kernel=backend.local_kernel(kernel, extra), placements=placements,
                   backend=extra, services=ports)
