"""A scenario point's lab as a ``LabSpec``: the one translation from what a user asked for to
what ``open_lab`` builds, ``vnetbench plan`` prints and ``vnetbench up`` keeps.

The lab of ``layer`` at a point ``s``: its hosts (real machines when the scenario lists
them), its nodes plus the extra ones its workloads need (a Hadoop master, say), the link
shaping and per-node resources, the layer's options, the service ports its workloads use (a
layer that publishes ports, as Docker's ``-p``, publishes these), the seed, the CPU placement
(none on real machines: their CPUs are theirs), the CPUs the run may use, and the backend
that realises it (``LabSpec.backend``: decided here, once).
"""

from __future__ import annotations

import dataclasses

from vnetbench.backends.catalog import get_layer
from vnetbench.backends.registry import spec_backend_name
from vnetbench.lab.placement import PlacementMode
from vnetbench.lab.spec import LabSpec, MachineSpec
from vnetbench.scenario.model import Scenario
from vnetbench.workloads.registry import extra_nodes, service_ports


def machine_specs(s: Scenario) -> tuple[MachineSpec, ...]:
    """The real machines a scenario's hosts are (none: emulated hosts)."""
    return tuple(MachineSpec(**m.model_dump()) for m in s.machines)


def lab_spec(s: Scenario, layer: str, *, seed: int | None = None,
             placement: PlacementMode = "off") -> LabSpec:
    """The lab of ``layer`` at scenario point ``s`` (``seed``: the scenario's unless given,
    e.g. a trial's own)."""
    options = [opts for _, opts in s.workload_options()]
    machines = machine_specs(s)
    spec = LabSpec(layer=layer, hosts=s.hosts, nodes=s.nodes + extra_nodes(options),
                   link=s.link.shape(), resources=s.resources.resources(),
                   layer_options=dict(s.layer_options.get(layer, {})),
                   seed=s.seed if seed is None else seed, services=service_ports(options),
                   placement="off" if machines else placement,
                   cpus=tuple(s.platform.cpus) if s.platform.cpus else None, machines=machines,
                   launches=any(o.launches for o in options))
    return dataclasses.replace(spec, backend=spec_backend_name(spec, get_layer(layer)))
