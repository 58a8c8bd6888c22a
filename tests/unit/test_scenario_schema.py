"""The exported JSON Schema of scenario files, checked with a standard validator (jsonschema):
every shipped scenario validates, malformed ones are refused by the schema and the loader
alike, well-formed variants (units as text, sweeps, inline layer options) by neither, and
every key carries a description and examples that themselves validate."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from vnetbench.errors import ScenarioError
from vnetbench.scenario.schema import scenario_file_schema
from vnetbench.scenario.sweep import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted([*ROOT.glob("scenarios/*.yaml"), *ROOT.glob("src/vnetbench/studies/*/quick.yaml"),
                  *ROOT.glob("src/vnetbench/studies/*/full.yaml"),
                  ROOT / "src/vnetbench/data/default.yaml"])


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return scenario_file_schema()


@pytest.fixture(scope="module")
def validator(schema: dict[str, Any]) -> jsonschema.Draft7Validator:
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_every_shipped_scenario_is_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in SHIPPED}
    assert "scenarios/quick.yaml" in names and "src/vnetbench/data/default.yaml" in names
    assert len([n for n in names if n.startswith("src/vnetbench/studies/")]) >= 10


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_shipped_scenario_validates(path: Path, validator: jsonschema.Draft7Validator) -> None:
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
              for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


BAD = [
    ("unknown-key", "layers: [host]\nnodez: 4\n"),
    ("unknown-link-key", "layers: [host]\nlink: {dealy: 10ms}\n"),
    ("unknown-layer", "layers: [host, teleport]\n"),
    ("unknown-workload", "layers: [host]\nworkloads: [teleport]\n"),
    ("unknown-workload-option", "layers: [host]\nworkloads: [{rr: {durration: 5s}}]\n"),
    ("unknown-layer-option", "layers: [host, {vxlan: {vnii: 7}}]\n"),
    ("unknown-layer-options-key", "layers: [host]\nlayer_options: {vxlan: {vnii: 7}}\n"),
    ("duration-word", "layers: [host]\nlink: {delay: fast}\n"),
    ("duration-unit", "layers: [host]\nlink: {delay: 10 parsecs}\n"),
    ("duration-negative", "layers: [host]\nlink: {delay: -5}\n"),
    ("duration-inf", "layers: [host]\nworkloads: [{rr: {duration: .inf}}]\n"),
    ("rate-tc-bytes", "layers: [host]\nlink: {rate: 100MBps}\n"),
    ("rate-mbps", "layers: [host]\nlink: {rate: 100Mbps}\n"),
    ("rate-Mb/s", "layers: [host]\nlink: {rate: 100Mb/s}\n"),
    ("loss-over-1", "layers: [host]\nlink: {loss: 5}\n"),
    ("loss-junk", "layers: [host]\nlink: {loss: 5x%}\n"),
    ("size-unit", "layers: [host]\nresources: {memory: 512 parsecs}\n"),
    ("nodes-true", "layers: [host]\nnodes: true\n"),
    ("nodes-zero", "layers: [host]\nnodes: 0\n"),
    ("nodes-fraction", "layers: [host]\nnodes: 2.5\n"),
    ("empty-sweep", "layers: [host]\nnodes: []\n"),
    ("repeat-huge", "layers: [host]\nrepeat: 1000000000\n"),
    ("no-layers-no-workloads", "name: x\nrepeat: 2\n"),
    ("empty-mapping", "{}\n"),
    ("layers-empty", "layers: []\n"),
    ("two-workloads-in-one-entry", "layers: [host]\nworkloads: [{rr: {}, crr: {}}]\n"),
    ("protocol", "layers: [host]\nworkloads: [{rr: {protocol: sctp}}]\n"),
    ("placement", "layers: [host]\nplatform: {placement: sideways}\n"),
    ("pair-one-host", "layers: [host]\nhosts: 2\nlink: {pairs: [{hosts: [0], delay: 1ms}]}\n"),
    ("pair-no-delay", "layers: [host]\nhosts: 2\nlink: {pairs: [{hosts: [0, 1]}]}\n"),
    ("cpuset-text", "layers: [host]\nresources: {cpuset: 'zero'}\n"),
    ("not-a-mapping", "- host\n- bridge\n"),
    ("hadoop-benchmark", "layers: [host]\nworkloads: [{hadoop: {benchmarks: [sorting]}}]\n"),
    ("mpi-class", "layers: [host]\nworkloads: [{mpi: {test: cg, class: Z}}]\n"),
]

GOOD = [
    ("units-as-text", "layers: [host]\nlink: {delay: 10ms, jitter: 1ms, loss: 0.5%, "
                      "rate: 500mbit}\nresources: {memory: 512M, cpus: 0.5}\n"),
    ("bytes-per-second", "layers: [host]\nlink: {rate: 100MB/s}\n"),
    ("plain-numbers", "layers: [host]\nlink: {delay: 0.01, loss: 0.005, rate: 1000000}\n"),
    ("sweeps", "layers: [host, bridge]\nnodes: [2, 4]\nlink: {delay: [0ms, 10ms]}\n"
               "workloads: [{rr: {request: [100, 1k], duration: 1s}}]\n"),
    ("sweep-of-mappings", "layers: [host]\nlink: [{delay: 1ms}, {delay: 2ms}]\n"),
    ("layer-as-text", "layers: bridge\n"),
    ("inline-layer-options", "layers: [host, {vxlan: {vni: 7}}, {nat: null}]\n"),
    ("layer-options", "layers: [host, vxlan]\nlayer_options: {vxlan: {vni: 7}}\n"),
    ("workload-names", "layers: [host]\nworkloads: [rr, {stream: null}, {crr: {}}]\n"),
    ("yaml-off", "layers: [host]\nplatform: {placement: off, quiet: null}\n"),
    ("cpuset-number", "layers: [host]\nresources: {cpuset: 0}\n"),
    ("mpi-class-alias", "layers: [host]\nworkloads: [{mpi: {test: cg, class: W}}]\n"),
    ("hadoop-nested", "layers: [bridge]\nworkloads: [{hadoop: {data: 100MB, "
                      "dfsio: {files: 4, file_size: 25MB}, block_size: auto}}]\n"),
    ("workloads-only", "workloads: [rr]\n"),
]


def _loader_refuses(text: str, tmp_path: Path) -> str | None:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    try:
        load_scenario(path)
    except ScenarioError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize(("name", "text"), BAD, ids=[n for n, _ in BAD])
def test_malformed_scenario_is_refused_by_schema_and_loader(
        name: str, text: str, validator: jsonschema.Draft7Validator, tmp_path: Path) -> None:
    assert not validator.is_valid(yaml.safe_load(text)), f"the schema accepts {name}"
    assert _loader_refuses(text, tmp_path), f"the loader accepts {name}"


@pytest.mark.parametrize(("name", "text"), GOOD, ids=[n for n, _ in GOOD])
def test_well_formed_scenario_is_accepted_by_schema_and_loader(
        name: str, text: str, validator: jsonschema.Draft7Validator, tmp_path: Path) -> None:
    errors = [e.message for e in validator.iter_errors(yaml.safe_load(text))]
    assert errors == []
    assert _loader_refuses(text, tmp_path) is None


def _properties(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, property schema) of every key the schema describes."""
    tables = [("", schema), *((f"definitions.{n}", d) for n, d in schema["definitions"].items())]
    for where, table in tables:
        for key, prop in table.get("properties", {}).items():
            yield f"{where}.{key}", prop


def test_every_key_has_a_description_and_examples_that_validate(schema: dict[str, Any]) -> None:
    props = dict(_properties(schema))
    assert {".link", ".workloads", "definitions.RrOptions_sweep.duration",
            "definitions.VxlanOptions.vni"} <= set(props)
    undocumented = [w for w, p in props.items() if not p.get("description")]
    assert undocumented == []
    bad_examples = []
    for where, prop in props.items():
        examples = prop.get("examples")
        if not examples:
            bad_examples.append(f"{where}: no examples")
            continue
        check = jsonschema.Draft7Validator({"definitions": schema["definitions"], **prop})
        bad_examples += [f"{where}: {e.message}" for x in examples for e in check.iter_errors(x)]
    assert bad_examples == []


def test_the_whole_example_scenario_validates_and_loads(
        schema: dict[str, Any], validator: jsonschema.Draft7Validator, tmp_path: Path) -> None:
    for example in schema["examples"]:
        assert validator.is_valid(example)
        assert _loader_refuses(yaml.safe_dump(example), tmp_path) is None


def test_units_are_text_and_sweeps_are_lists(schema: dict[str, Any]) -> None:
    delay = schema["definitions"]["LinkModel_sweep"]["properties"]["delay"]
    assert delay["default"] == "0s"
    single, sweep = delay["anyOf"]
    assert {"$ref": "#/definitions/duration_text"} in single["anyOf"]
    assert sweep["type"] == "array" and sweep["minItems"] == 1
    layer_vni = schema["definitions"]["VxlanOptions"]["properties"]["vni"]
    assert "anyOf" not in layer_vni, "layer options do not sweep"


def test_vnetbench_schema_prints_it(schema: dict[str, Any], tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "vnetbench", "schema"], capture_output=True,
                          text=True, timeout=120, check=False, cwd=tmp_path,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == schema
