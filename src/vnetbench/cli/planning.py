"""Dry-run plans (``vnetbench plan``): what each trial's lab would be, without the kernel.

Uses placeholder run id ``0000`` and the first candidate address block, assumes no kernel
WireGuard and no sch_netem (so the userspace implementations appear, as on this host), and
names tools instead of resolving them. The text is ``LabPlan.render`` of the same plan value
a run builds (``lab_plan.make_plan``): for Docker's modes it lists the docker commands that
follow the engines' start. The lab has the nodes the workloads add (Hadoop's master), as the
run builds it.

A layer this kernel cannot build is refused in one line, as ``vnetbench run`` refuses it
(ScenarioError naming the missing feature), unless the scenario says ``skip_unsupported``:
then its plans are replaced by a line saying it would be skipped. Where the kernel's
features cannot be probed (not root, no cached probe) the check is left to ``run``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

from vnetbench.backends.catalog import get_layer
from vnetbench.backends.lab_plan import plan_of
from vnetbench.backends.registry import check_layer
from vnetbench.errors import MissingToolError, ScenarioError, UnsupportedError
from vnetbench.scenario.model import Scenario
from vnetbench.scenario.specs import lab_spec
from vnetbench.scenario.sweep import ScenarioFile


def unsupported_layers(sf: ScenarioFile) -> dict[str, str]:
    """Layer name -> why this host cannot build it, for the layers of ``sf`` (empty when
    the kernel's features cannot be found out here)."""
    why: dict[str, str] = {}
    for name in dict.fromkeys(n for p in sf.points for n in p.scenario.layers):
        try:
            check_layer(get_layer(name))
        except UnsupportedError as exc:
            why[name] = str(exc)
        except MissingToolError:
            continue  # tools are named, not resolved, in a plan
        except (OSError, subprocess.SubprocessError):
            return {}  # features cannot be probed (not root): `run` checks
    return why


def plan_text(s: Scenario, layer_name: str) -> str:
    """The plan a trial of ``layer_name`` would build (``LabPlan.render``)."""
    return plan_of(lab_spec(s, layer_name)).render()


@dataclass(frozen=True)
class DryRun:
    """What one sweep point's trial of one layer would build."""

    layer: str
    hosts: int
    nodes: int
    axes: dict[str, str]
    """The swept values of the point (e.g. ``{"nodes": "4"}``)."""
    text: str
    """``LabPlan.render`` of the plan, or why the layer would be skipped."""
    skipped: str | None = None
    """Why this host cannot build the layer (``skip_unsupported``), or None."""

    @property
    def title(self) -> str:
        shown = " ".join(f"{k}={v}" for k, v in (("hosts", self.hosts), ("nodes", self.nodes))
                         if k not in self.axes)
        axes = " ".join(f"{k}={v}" for k, v in self.axes.items())
        return f"{self.layer} {shown} {axes}".strip()

    def to_dict(self) -> dict[str, object]:
        """JSON-ready (``vnetbench plan --json``): the plan as its lines."""
        return {"title": self.title, "layer": self.layer, "hosts": self.hosts,
                "nodes": self.nodes, "axes": dict(self.axes), "skipped": self.skipped,
                "plan": self.text.splitlines() if self.skipped is None else []}


def checked_layers(sf: ScenarioFile) -> dict[str, str]:
    """``unsupported_layers``, after refusing (ScenarioError, as ``run`` does) a layer this
    host cannot build that the scenario does not ``skip_unsupported``."""
    unsupported = unsupported_layers(sf)
    for point in sf.points:
        s = point.scenario
        for layer in s.layers:
            if layer in unsupported and not s.skip_unsupported:
                raise ScenarioError(f"{sf.path}: layers: {unsupported[layer]}")
    return unsupported


def dry_runs(sf: ScenarioFile, unsupported: dict[str, str] | None = None) -> Iterator[DryRun]:
    """One DryRun per sweep point and layer; ScenarioError before the first one when a
    layer cannot be built here and the scenario does not say ``skip_unsupported``
    (``unsupported``: what ``checked_layers`` found, when the caller asked it already)."""
    if unsupported is None:
        unsupported = checked_layers(sf)
    for point in sf.points:
        s = point.scenario
        for layer in s.layers:
            if layer in unsupported:
                yield DryRun(layer, s.hosts, s.nodes, dict(point.axes),
                             f"skipped on this host (skip_unsupported): {unsupported[layer]}",
                             skipped=unsupported[layer])
            else:
                yield DryRun(layer, s.hosts, s.nodes, dict(point.axes), plan_text(s, layer))


def dry_run_plans(sf: ScenarioFile) -> Iterator[tuple[str, str]]:
    """(title, plan) per sweep point and layer (see ``dry_runs``)."""
    for dry in dry_runs(sf):
        yield dry.title, dry.text
