"""Layers measured on an emulated CPU (TCG guests) are never called better or worse: the
report and the terminal mark them ``~`` whatever the difference."""

from __future__ import annotations

from vnetbench.report.tables import cell_text, emulated_layers, headline_table
from vnetbench.results.model import Sample
from vnetbench.results.stats import ratios_to_baseline


def samples(layer: str, values: list[float]) -> list[Sample]:
    return [Sample("rtt_p50_us", v, "us", {"layer": layer, "workload": "rr", "nodes": "2",
                                           "hosts": "1", "repetition": str(i)}, i)
            for i, v in enumerate(values)]


DATA = [*samples("host", [20.0, 21.0, 20.5, 20.2, 20.8, 20.4]),
        *samples("vm-bridge", [900.0, 950.0, 920.0, 940.0, 910.0, 930.0]),
        *samples("bridge", [24.0, 25.0, 24.5, 24.2, 24.8, 24.4])]


def test_a_large_significant_difference_is_starred_unless_emulated() -> None:
    plain = headline_table(DATA)
    marked = headline_table(DATA, emulated={"vm-bridge"})
    assert plain is not None and marked is not None
    col = plain.columns[0]
    assert plain.cells[("vm-bridge", col)].verdict(1.05) == "worse"
    assert cell_text(plain.cells[("vm-bridge", col)], 1.05).startswith("x")
    assert "*" in cell_text(plain.cells[("vm-bridge", col)], 1.05)
    cell = marked.cells[("vm-bridge", col)]
    assert cell.verdict(1.05) == "emulated"
    assert "~" in cell_text(cell, 1.05) and "*" not in cell_text(cell, 1.05)
    assert marked.cells[("bridge", col)].verdict(1.05) == "worse"  # others are still judged
    assert marked.emulated == {"vm-bridge"}


def test_a_layer_compared_with_an_emulated_baseline_is_not_judged_either() -> None:
    ratios = ratios_to_baseline([s for s in DATA if s.labels["layer"] != "host"],
                                baseline="vm-bridge", emulated={"vm-bridge"})
    assert ratios and all(r.verdict() == "emulated" for r in ratios)


def test_emulated_layers_come_from_the_runs_lab_facts() -> None:
    env = {"layers": {"vm-bridge": {"vm": {"accel": "tcg", "emulated_cpu": True}},
                      "vm-vxlan": {"vm": {"accel": "kvm", "emulated_cpu": False}},
                      "bridge": {"sysctls": {}}, "odd": "not a mapping"}}
    assert emulated_layers(env) == {"vm-bridge"}
    assert emulated_layers({}) == set()
