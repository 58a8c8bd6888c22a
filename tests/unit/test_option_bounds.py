"""Every numeric option of every layer, workload and scenario key has bounds, derived from
what the kernel, the protocol or the tool allows, checked by the schema and so by
``vnetbench plan`` before anything is built: a VNI of 24 bits, ports 1-65535, an MTU the
kernel takes (68-65535, and no more than the emulated underlay's 1500), Java ints for
Hadoop's counts, iperf3's and sysbench's own limits, and the ports a lab derives (a
service's port plus a node's slot, a published port range) within 65535."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from vnetbench.backends.catalog import LAYERS
from vnetbench.cli.main import main
from vnetbench.scenario.model import Scenario
from vnetbench.workloads.registry import workload_models

HUGE = 10**30

REQUIRED: dict[str, dict[str, Any]] = {
    "CommandOptions": {"client": ["true"]},
    "PairDelayModel": {"hosts": [0, 1], "delay": "1ms"},
}
"""Values of a model's required keys, so that one key at a time can be made bad."""


def _types(annotation: Any) -> list[Any]:
    out = [annotation]
    for arg in typing.get_args(annotation):
        out += _types(arg)
    return out


def _numeric_fields() -> list[tuple[str, type[BaseModel], str, Any]]:
    """(where, model, key, annotation) of every int/float key, nested models included."""
    found: list[tuple[str, type[BaseModel], str, Any]] = []
    seen: set[type[BaseModel]] = set()

    def walk(model: type[BaseModel], where: str) -> None:
        if model in seen:
            return
        seen.add(model)
        for key, field in model.model_fields.items():
            types = _types(field.annotation)
            for t in types:
                if isinstance(t, type) and issubclass(t, BaseModel):
                    walk(t, f"{where}.{key}")
            if any(t in (int, float) for t in types):
                found.append((f"{where}.{key}", model, key, field.annotation))

    for name, layer in LAYERS.items():
        walk(layer.options, f"layer {name}")
    for name, model in workload_models().items():
        walk(model, f"workload {name}")
    walk(Scenario, "scenario")
    return found


def _given(annotation: Any, value: int) -> Any:
    """``value`` shaped as the key takes it (an element of a list, the second of a pair)."""
    origin = typing.get_origin(annotation)
    if origin is tuple or (origin in (typing.Union, type(int | None))
                           and any(typing.get_origin(a) is tuple
                                   for a in typing.get_args(annotation))):
        return [0, value]
    return value


FIELDS = _numeric_fields()


def test_the_walk_finds_the_options() -> None:
    where = {w for w, *_ in FIELDS}
    assert {"layer vxlan.vni", "layer nat.first_port", "workload rr.port",
            "workload hadoop.pi.samples", "scenario.link.pairs.hosts"} <= where, where


@pytest.mark.parametrize("value", [HUGE, -1])
@pytest.mark.parametrize("where", [w for w, *_ in FIELDS])
def test_every_numeric_option_is_bounded(where: str, value: int) -> None:
    _, model, key, annotation = next(f for f in FIELDS if f[0] == where)
    data = {**REQUIRED.get(model.__name__, {}), key: _given(annotation, value)}
    if model is Scenario and key == "hosts":
        data = {"hosts": value}
    with pytest.raises((ValidationError, ValueError)):
        model.model_validate(data)


def _plan(tmp_path: Path, scenario: dict[str, Any],
          capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "bounds", "noise_floor": False, **scenario}))
    code = main(["plan", str(path)])
    err = capsys.readouterr().err
    return code, err


def _layer(name: str, **options: Any) -> dict[str, Any]:
    return {"layers": [{name: options}]}


RR = {"workloads": [{"rr": {"duration": "1s"}}]}

CASES: list[tuple[str, dict[str, Any], str | None]] = [
    # (case, scenario, a text the one error line holds; None: the plan is valid)
    ("vni 2^24", _layer("vxlan", vni=2**24), "less than or equal to 16777215"),
    ("vni 2^24 - 1", _layer("vxlan", vni=2**24 - 1), None),
    ("vni 0", _layer("vxlan", vni=0), None),
    ("vxlan port 70000", _layer("vxlan", port=70000), "less than or equal to 65535"),
    ("vxlan port 0", _layer("vxlan", port=0), "greater than or equal to 1"),
    ("vxlan underlay_mtu 60", _layer("vxlan", underlay_mtu=60), "greater than or equal to 118"),
    ("vxlan underlay_mtu 118", _layer("vxlan", underlay_mtu=118), None),
    ("vxlan underlay_mtu 1501", _layer("vxlan", underlay_mtu=1501), "underlay carries (1500"),
    ("vxlan underlay_mtu 65536", _layer("vxlan", underlay_mtu=65536), "65535"),
    ("wireguard port 70000", _layer("wireguard", port=70000), "65535"),
    ("wireguard underlay_mtu 147", _layer("wireguard", underlay_mtu=147), "148"),
    ("wireguard underlay_mtu 148", _layer("wireguard", underlay_mtu=148), None),
    ("wireguard implementation", _layer("wireguard", implementation="fast"), "implementation"),
    ("userspace port 0", _layer("userspace", port=0), "greater than or equal to 1"),
    ("userspace underlay_mtu 95", _layer("userspace", underlay_mtu=95), "96"),
    ("nat first_port 0", _layer("nat", first_port=0), "greater than or equal to 1"),
    ("nat first_port 70000", _layer("nat", first_port=70000), "65535"),
    ("nat first_port 65535 with rr", {**_layer("nat", first_port=65535), **RR},
     "past 65535"),
    ("nat first_port 65000 with rr", {**_layer("nat", first_port=65000), **RR}, None),
    ("host rr port 65535 on 2 nodes", {"layers": ["host"], "nodes": 2,
                                       "workloads": [{"rr": {"port": 65535}}]}, "past 65535"),
    ("host rr port 65534 on 2 nodes", {"layers": ["host"], "nodes": 2,
                                       "workloads": [{"rr": {"port": 65534}}]}, None),
    ("oltp table_size 2^31", {"layers": ["host"], "workloads": [
        {"oltp": {"table_size": 2**31}}]}, "2147483647"),
    ("mpi warmup 1e9", {"layers": ["host"], "workloads": [{"mpi": {"warmup": 10**9}}]},
     "100000000"),
    ("hadoop pi samples 2^63", {"layers": ["host"], "workloads": [
        {"hadoop": {"benchmarks": ["pi"], "pi": {"samples": 2**63}}}]}, "9223372036854775807"),
    ("hadoop nnbench files 2^31", {"layers": ["host"], "workloads": [
        {"hadoop": {"benchmarks": ["nnbench"], "nnbench": {"files": 2**31}}}]}, "2147483647"),
    ("iperf3 tcp length 2M", {"layers": ["host"], "workloads": [{"iperf3": {"length": "2M"}}]},
     "1 MiB"),
    ("iperf3 udp length 8", {"layers": ["host"], "workloads": [
        {"iperf3": {"protocol": "udp", "length": 8}}]}, "16"),
    ("link pair host 60", {"hosts": 2, "link": {"pairs": [{"hosts": [0, 60], "delay": "1ms"}]}},
     "less than or equal to 59"),
    ("quiet threshold 2000", {"platform": {"quiet": {"threshold": 2000}}}, "1024"),
]


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_plan_checks_the_bounds(tmp_path: Path, case: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    _, scenario, expected = next(c for c in CASES if c[0] == case)
    code, err = _plan(tmp_path, scenario, capsys)
    if expected is None:
        assert code == 0, err
        return
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("vnetbench: error: "), err
    assert expected in lines[0], lines[0]


@pytest.mark.parametrize("command, why", [
    ({"client": ["sh", "-c", "echo\0x"]}, "NUL byte"),
    ({"client": ["true"], "env": {"A=B": "1"}}, "not a variable name"),
    ({"client": ["true"], "env": {"A": "x\0y"}}, "NUL byte"),
])
def test_plan_refuses_what_a_command_could_never_be_given(tmp_path: Path, command: dict[str, Any],
                                                          why: str,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    """A NUL byte in an argv or the environment, ``=`` in a variable's name: ``plan`` exits 2
    in one line (the run would have built the lab and then failed with a traceback)."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "c", "layers": ["host"],
                                    "workloads": [{"command": command}]}))
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and why in err[0], err
