"""A run's legend, recorded when it starts (``run.json``'s ``environment.legend``): what its
labels and layers mean under the code that ran it, so that a later vnetbench reads the run
without asking its own catalogue or scenario schema (``results.recorded.Legend``)."""

from __future__ import annotations

from vnetbench.backends.catalog import get_layer
from vnetbench.results.recorded import Legend
from vnetbench.scenario.schema import label_unit_kinds
from vnetbench.scenario.sweep import ScenarioFile


def run_legend(sf: ScenarioFile) -> Legend:
    """Each label's unit kind, and for each layer of ``sf`` its namespace twin and the part
    of its path that joins emulated hosts (a tunnel, an overlay)."""
    names = sorted({name for p in sf.points for name in p.scenario.layers})
    layers = [get_layer(name) for name in names]
    return Legend(True, label_unit_kinds(),
                  {layer.name: layer.twin for layer in layers if layer.twin is not None},
                  {layer.name: layer.between_hosts for layer in layers if layer.between_hosts})
