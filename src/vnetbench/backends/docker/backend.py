"""The ``docker`` backend behind the backend interface: plan the docker commands, run them
after the engines are up, and take everything down again (``runtime``)."""

from __future__ import annotations

from dataclasses import dataclass

from vnetbench.backends.base import Backend, BackendPlan, LabContext
from vnetbench.backends.docker.modes import DOCKER_LAYERS, DockerLayer, DockerOptions
from vnetbench.backends.docker.runtime import DockerRuntime
from vnetbench.backends.docker.steps import Phase, build_phases, describe_phases
from vnetbench.errors import LabError
from vnetbench.host.node import Node
from vnetbench.lab.plan import Plan
from vnetbench.lab.topology import Topology
from vnetbench.layers.base import AnyLayer, LayerOptions, NodePlacement, PlanContext

ROOTFS = "node-rootfs.tar"


@dataclass(frozen=True)
class DockerPlan(BackendPlan):
    """The docker commands run once the engines answer, phase by phase."""

    phases: tuple[Phase, ...] = ()

    def describe(self) -> list[str]:
        return describe_phases(self.phases)


class DockerBackend(Backend):
    """Containers of one Docker engine per emulated host."""

    name = "docker"
    sessions = "beside"
    layers = DOCKER_LAYERS

    def __init__(self) -> None:
        self.runtime: DockerRuntime | None = None

    @classmethod
    def plan(cls, topo: Topology, layer: AnyLayer, options: LayerOptions, ctx: PlanContext,
             placements: tuple[NodePlacement, ...], services: tuple[int, ...],
             kernel: Plan) -> BackendPlan:
        if not isinstance(layer, DockerLayer) or not isinstance(options, DockerOptions):
            raise LabError(f"layer {layer.name} is not a Docker network mode")
        return DockerPlan(tuple(build_phases(topo, layer.mode, options, services,
                                             topo.resources, ctx.run_dir / ROOTFS)))

    def realise(self, lab: LabContext) -> list[Node]:
        lab.apply_kernel_plan()
        plan = lab.plan.backend
        phases = plan.phases if isinstance(plan, DockerPlan) else ()
        self.runtime = DockerRuntime(lab, phases, lab.work_dir / ROOTFS)
        try:
            return self.runtime.start()
        except LabError as exc:
            raise LabError(f"building the {lab.plan.layer.name} lab failed at stage "
                           f"'containers': {exc}") from exc

    def facts(self) -> dict[str, object]:
        return {"docker": self.runtime.facts} if self.runtime is not None else {}

    def stop(self, lab: LabContext) -> list[str]:
        if self.runtime is None:
            return []
        try:
            return self.runtime.stop()
        except Exception as exc:
            return [f"stopping Docker: {exc}"]
