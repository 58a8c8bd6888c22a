"""The plan of a lab, computed once as a value: the layer's kernel plan (underlay, layer,
link shaping), where every node will be, and what the backend does after (``LabPlan``).

``vnetbench.backends.lab`` builds from it, ``vnetbench plan`` prints it (``plan_of``: a spec's
plan without the kernel), and the unit tests check it: all three call ``make_plan``.
"""

from __future__ import annotations

from collections.abc import Sequence

from vnetbench.backends.base import Backend, LabPlan
from vnetbench.backends.catalog import get_layer
from vnetbench.backends.registry import backend_class, spec_backend_class
from vnetbench.host.state import CANDIDATE_NETS
from vnetbench.lab.plan import PlanBuilder
from vnetbench.lab.spec import LabSpec
from vnetbench.lab.topology import Topology
from vnetbench.layers.base import AnyLayer, LayerOptions, PlanContext
from vnetbench.layers.shaping import plan_link_shaping


def make_plan(topo: Topology, layer: AnyLayer, options: LayerOptions, ctx: PlanContext, *,
              seed: int = 0, services: Sequence[int] = (), launches: bool = False,
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
                   backend=extra, services=ports, launches=launches)


def plan_of(spec: LabSpec, short_id: str = "0000", net: str = CANDIDATE_NETS[0]) -> LabPlan:
    """The plan ``open_lab(spec)`` would build, made without the kernel and without reaching
    anything (``vnetbench plan``): placeholder run ``short_id`` on address block ``net``;
    UnsupportedError for a layer the spec's machines cannot run."""
    layer = get_layer(spec.layer)
    cls = spec_backend_class(spec, layer)
    if spec.machines:
        cls.check(layer)
    options = layer.options.model_validate(dict(spec.layer_options))
    topo, ctx = cls.dry_context(spec, layer, short_id, net)
    return make_plan(topo, layer, options, ctx, seed=spec.seed, services=spec.services,
                     launches=spec.launches, backend=cls)
