"""A layer's programs are declared once (``Layer.programs``, ``layers.programs``) and every
view of them derives from that declaration: ``vnetbench doctor``'s lines, run.json's program
versions, the machines' package advice, the machines' preflight."""

from __future__ import annotations

import pytest

from vnetbench.backends.machines.checks import tool_package
from vnetbench.host.features import tool_statuses
from vnetbench.host.programs import on_path
from vnetbench.layers.registry import NAMESPACE_LAYERS, layer_programs
from vnetbench.layers.userspace import UserspaceLayer
from vnetbench.provenance.record import all_programs


def test_every_program_a_layer_declares_is_doctored_recorded_and_packaged() -> None:
    declared = {p.name for cls in NAMESPACE_LAYERS.values()
                for p in (*cls.programs, *cls.fallback_programs)}
    assert {"wg", "wireguard-go", "vnetbench-tunnel"} <= declared
    names = {p.name for p in layer_programs()}
    assert names == declared | {"vnetbench-linkem"}
    assert names <= {p.name for p in all_programs()}
    statuses = {t.name: t for t in tool_statuses(layer_programs())}
    for program in layer_programs():
        assert program.purpose, program.name
        status = statuses[program.name]
        assert status.note == program.purpose or status.path is None
    assert tool_package("wg") == "wireguard-tools"
    assert tool_package("wireguard-go") == "wireguard-go"


def test_a_program_added_to_a_layer_reaches_every_view(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = on_path("vnb-made-up-tool", "vnb-made-up-pkg", purpose="a test's program")
    monkeypatch.setattr(UserspaceLayer, "programs", (*UserspaceLayer.programs, extra))
    assert tool_package("vnb-made-up-tool") == "vnb-made-up-pkg"
    assert "vnb-made-up-tool" in {p.name for p in all_programs()}
    (status,) = [t for t in tool_statuses(layer_programs()) if t.name == "vnb-made-up-tool"]
    assert status.path is None and "vnb-made-up-pkg" in status.note


def test_the_machines_preflight_asks_for_a_layers_system_programs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``preflight`` asks every machine for the layers' programs that are not deployed."""
    from vnetbench.backends.machines import backend as machines

    asked: list[str] = []

    def check(specs: object, control: object, *, need_features: object,
              need_tools: list[str]) -> tuple[list[object], list[object]]:
        asked.extend(need_tools)
        return [], []

    monkeypatch.setattr(machines, "check_machines", check)
    machines.preflight([], [NAMESPACE_LAYERS["wireguard"](), NAMESPACE_LAYERS["userspace"]()])
    assert "wg" in asked and "vnetbench-tunnel" not in asked
