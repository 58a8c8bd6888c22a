"""The JSON Schema of scenario files as people write them (``vnetbench schema``), for editors.

Built from the pydantic models the loader validates with, but describing the *file*, not
the validated model:

- units as text or plain numbers in the base unit, with patterns accepting what
  ``vnetbench.units`` accepts: ``delay: 10ms``, ``memory: 512M``, ``rate: 500mbit`` or
  ``100MB/s``, ``loss: 0.5%``;
- sweeps: any key that is not itself a list may be given as a list of values, one sweep
  point per value, exactly where ``scenario.expand`` reads one (scenario keys, their
  sub-mappings, workload options; not layer options);
- ``layers`` as names or ``{name: {options}}`` with each layer's own options,
  ``layer_options`` per layer, ``workloads`` as names or ``{name: {options}}`` with each
  workload's own keys;
- a description and examples on every key: the field's documentation (its docstring or
  ``Field(description=...)``), else ``scenario_help`` for workload keys.

The schema is a guide and a first check: a file it accepts may still be refused by the
loader for what a schema cannot say (jitter larger than the delay, CPUs this machine lacks,
the address plan's capacity, a duration over a day written as text); the loader's one-line
message is the authority. JSON Schema draft 7, the newest editors support in full (VS Code's
YAML and JSON language servers; newer drafts only in part), and any standard validator reads
it.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import re
import textwrap
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Literal

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

import vnetbench.scenario.help as scenario_help
import vnetbench.units as units
from vnetbench.backends.catalog import LAYERS
from vnetbench.jsontypes import JsonObject, JsonValue
from vnetbench.scenario.model import (
    THRESHOLD_METRICS,
    MachineModel,
    PairingModel,
    Scenario,
    is_sweepable,
)
from vnetbench.workloads.registry import NAMES, workload_models

DRAFT = "http://json-schema.org/draft-07/schema#"
"""Draft 7: what editors' YAML and JSON language servers (VS Code, JetBrains) support in full."""
_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"


def _any_case(unit: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in unit)


def _pattern(any_case: list[str], exact: tuple[str, ...] = (), optional: bool = True) -> str:
    """``^ number unit $`` (spaces allowed around) for these units; longest first."""
    alternatives = sorted([_any_case(u) for u in any_case if u]
                          + [re.escape(u) for u in exact], key=len, reverse=True)
    unit = f"(?:{'|'.join(alternatives)})" + ("?" if optional else "")
    return rf"^\s*{_NUMBER}\s*{unit}\s*$"


UNIT_TEXT: dict[str, JsonObject] = {
    "duration": {
        "type": "string", "pattern": _pattern(list(units.DURATION_UNITS)),
        "description": "A duration: a number with ns, us, ms, s (default), min (or m), h; at "
                       "most 1 day.",
        "examples": ["5s", "250ms", "10us", "2min"]},
    "size": {
        "type": "string", "pattern": _pattern(list(units.SIZE_UNITS)),
        "description": "A size in bytes: a number with k, M, G (x1024, also KiB, MiB, GiB) or "
                       "kB, MB, GB (x1000); no unit = bytes.",
        "examples": ["64k", "512M", "100MB", "1GiB"]},
    "rate": {
        "type": "string",
        "pattern": _pattern(list(units.RATE_UNITS) + [f"{u}/s" for u in units.RATE_UNITS],
                            tuple(units.BYTES_PER_SECOND)),
        "description": "A rate in bits per second as tc writes it (bit, kbit, mbit, gbit, "
                       "tbit; kibit, mibit ...) or bytes per second with a capital B and /s "
                       "(B/s, kB/s, MB/s, GB/s; KiB/s, MiB/s ...: 100MB/s = 800mbit). tc's "
                       "bps/kbps/mbps mean bytes to tc and bits to most people: refused.",
        "examples": ["500mbit", "1gbit", "100MB/s"]},
    "fraction": {
        "type": "string", "pattern": rf"^\s*{_NUMBER}\s*%\s*$",
        "description": "A percentage, e.g. 0.5% (or a plain number 0..1).",
        "examples": ["0.5%", "5%"]},
}
"""The text forms of each unit kind (``definitions`` of the schema)."""

_PARSERS: dict[Callable[[object], float], tuple[str, float, float]] = {
    units.parse_duration: ("duration", 0.0, units.MAX_DURATION_S),
    units.parse_size: ("size", 0.0, float(units.MAX_SIZE_BYTES)),
    units.parse_rate: ("rate", 0.0, units.MAX_RATE_BPS),
    units.parse_fraction: ("fraction", 0.0, 1.0),
}
"""A field's unit parser -> (unit kind, smallest and largest number in the base unit)."""

_FORMAT: dict[str, Callable[[float], int | str]] = {
    "duration": units.format_duration, "size": lambda v: units.format_size(int(v)),
    "rate": units.format_rate, "fraction": units.format_fraction}

CPU_LIST = r"^\s*[0-9]{1,6}\s*(?:-\s*[0-9]{1,6}\s*)?(?:,\s*[0-9]{1,6}\s*(?:-\s*[0-9]{1,6}\s*)?)*$"

WORKLOAD_EXAMPLES: JsonObject = {
    "command": {"server": ["python3", "-m", "http.server", "{port}"],
                "client": ["curl", "-sS", "-o", "/dev/null", "http://{addr}:{port}/"],
                "ports": [8000], "metrics": "exit"},
    "concurrent": {"workloads": [{"stream": {"duration": "10s"}},
                                 {"rr": {"duration": "8s"}}]},
}
"""Workloads whose options have required keys: an example that a scenario may hold."""

EXAMPLES: JsonObject = {
    "CommandOptions.patterns": {"rps": "(?P<value>[0-9.]+) requests/s"},
    "CommandOptions.units": {"rps": "1/s"},
    "CommandOptions.env": {"PYTHONUNBUFFERED": "1"},
    "ConcurrentOptions.workloads": [{"stream": {"duration": "10s"}}, {"rr": {"duration": "8s"}}],
    "Scenario.layers": ["host", "bridge", {"vxlan": {"vni": 7}}],
    "Scenario.layer_options": {"vxlan": {"vni": 7}},
    "Scenario.workloads": [{"rr": {"request": 100, "response": 200, "duration": "5s"}},
                           "stream"],
    "Scenario.description": "What a bridge costs a request/response service",
    "Scenario.until_cv": "5%",
    "Scenario.budget": "10min",
    "Scenario.resources": {"cpus": 0.5, "memory": "512M"},
    "Scenario.link": {"delay": "10ms", "jitter": "1ms", "loss": "0.5%", "rate": "500mbit"},
    "Scenario.platform": {"placement": "cross", "quiet": {"threshold": 0.3, "wait": "3s"}},
    "Scenario.pairing": {"slice": "100ms"},
    "Scenario.thresholds": {"rr.rtt_p50_us": 1.5, "stream.goodput_bps": 0.8},
    "PairingModel.slice": "100ms",
    "PairingModel.piece": "10ms",
    "PairingModel.warm": 3,
    "LinkModel.pairs": [{"hosts": [0, 1], "delay": "15ms"}],
    "PairDelayModel.hosts": [0, 1],
    "ResourcesModel.cpus": 0.5,
    "ResourcesModel.memory": "512M",
    "ResourcesModel.cpuset": "0-1",
    "PlatformModel.cpus": [0, 1],
    "HadoopOptions.properties": {"dfs.namenode.handler.count": "20"},
}
"""Examples where a key's default does not show how to write it (``Model.key``)."""

SCENARIO_EXAMPLE: JsonObject = {
    "name": "quick", "hosts": 2, "nodes": [2, 4], "layers": ["host", "bridge", "nat"],
    "link": {"delay": ["0ms", "10ms"], "rate": "500mbit"},
    "workloads": [{"rr": {"protocol": "tcp", "request": 100, "response": 200,
                          "duration": "5s"}}],
    "repeat": 3}


@cache
def _field_docs(model: type[BaseModel]) -> dict[str, str]:
    """The docstrings written under a model's fields (its bases' first)."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, after in itertools.pairwise(body):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[stmt.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _one_paragraph(text: str) -> str:
    return " ".join(text.split())


def describe(model: type[BaseModel], name: str, info: FieldInfo) -> str:
    """A key's description: its own documentation, else ``scenario_help``; "" if none."""
    text = (info.description or _field_docs(model).get(name)
            or scenario_help.BY_MODEL_KEY.get(f"{model.__name__}.{name}")
            or scenario_help.BY_KEY.get(name) or "")
    return _one_paragraph(text)


def _bounds(metadata: list[object], low: float | None = None,
            high: float | None = None) -> dict[str, float]:
    out: dict[str, float] = {}
    if low is not None:
        out["minimum"] = low
    if high is not None:
        out["maximum"] = high
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            out["minimum"] = max(out.get("minimum", -float("inf")), float(item.ge))  # type: ignore[arg-type]
        elif isinstance(item, annotated_types.Gt):
            out["exclusiveMinimum"] = float(item.gt)  # type: ignore[arg-type]
        elif isinstance(item, annotated_types.Le):
            out["maximum"] = min(out.get("maximum", float("inf")), float(item.le))  # type: ignore[arg-type]
        elif isinstance(item, annotated_types.Lt):
            out["exclusiveMaximum"] = float(item.lt)  # type: ignore[arg-type]
    if "exclusiveMinimum" in out and out.get("minimum", -float("inf")) <= out["exclusiveMinimum"]:
        out.pop("minimum", None)
    return {k: int(v) if v.is_integer() and abs(v) < 2**53 else v for k, v in out.items()}


def unit_kind(annotation: object, metadata: list[object]) -> str | None:
    """``duration``, ``size``, ``rate`` or ``fraction`` for a unit-typed field (or None)."""
    found = _unit(metadata)
    if found:
        return found[0]
    if typing.get_origin(annotation) is typing.Annotated:
        return unit_kind(typing.get_args(annotation)[0], list(typing.get_args(annotation)[1:]))
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kinds = [unit_kind(a, metadata) for a in typing.get_args(annotation)]
        return next((k for k in kinds if k), None)
    return None


def _unit(metadata: list[object]) -> tuple[str, float, float] | None:
    for item in metadata:
        parser = getattr(item, "func", None)
        if parser in _PARSERS:
            return _PARSERS[parser]
    return None


class _Builder:
    """Builds the schema; ``defs`` collects shared sub-schemas (``definitions``)."""

    def __init__(self) -> None:
        self.defs: JsonObject = {f"{kind}_text": schema for kind, schema in UNIT_TEXT.items()}

    def value(self, annotation: object, metadata: list[object], sweep: bool) -> JsonObject:
        """The schema of one value of this type (``sweep``: sub-mappings may sweep)."""
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is typing.Annotated:
            return self.value(args[0], [*args[1:], *metadata], sweep)
        unit = _unit(metadata)
        if unit:
            kind, low, high = unit
            number: JsonObject = {"type": "number", **_bounds(metadata, low, high)}
            return {"anyOf": [number, {"$ref": f"#/definitions/{kind}_text"}]}
        if origin in (typing.Union, types.UnionType):
            return {"anyOf": [self.value(a, metadata, sweep) for a in args]}
        if annotation is type(None):
            return {"type": "null"}
        if origin is Literal:
            return {"enum": list(args)}
        if annotation is bool:
            return {"type": "boolean"}
        if annotation is int:
            return {"type": "integer", **_bounds(metadata)}
        if annotation is float:
            return {"type": "number", **_bounds(metadata)}
        if annotation is str:
            return {"type": "string"}
        if origin in (tuple, list) and args and (len(args) == 1 or args[1] is Ellipsis):
            return {"type": "array", "items": self.value(args[0], [], False)}
        if origin is tuple and args:
            return {"type": "array", "minItems": len(args), "maxItems": len(args),
                    "items": [self.value(a, [], False) for a in args]}
        if origin is dict and len(args) == 2:
            return {"type": "object", "additionalProperties": self.value(args[1], [], False)}
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return {"$ref": f"#/definitions/{self.model(annotation, sweep)}"}
        return {}

    def model(self, model: type[BaseModel], sweep: bool) -> str:
        """The ``definitions`` name of a model's object schema (built once)."""
        name = model.__name__ + ("_sweep" if sweep else "")
        if name in self.defs:
            return name
        self.defs[name] = {}  # a placeholder while the fields are built
        self.defs[name] = self.object_schema(model, sweep)
        return name

    def object_schema(self, model: type[BaseModel], sweep: bool) -> JsonObject:
        properties: JsonObject = {}
        for name, info in model.model_fields.items():
            if model is Scenario and name == "machines":
                continue  # set from ``hosts: [...]``, not written in files
            prop = self.field(model, name, info, sweep)
            keys = [info.alias or name]
            if info.alias and model.model_config.get("validate_by_name"):
                keys.append(name)
            for key in keys:
                properties[key] = prop
        schema: JsonObject = {"type": "object", "properties": properties,
                              "additionalProperties": model.model_config.get("extra")
                              != "forbid"}
        required: list[JsonValue] = [info.alias or name
                                     for name, info in model.model_fields.items()
                                     if info.is_required()]
        if required:
            schema["required"] = required
        doc = inspect.getdoc(model)
        if doc and model.__doc__:
            schema["description"] = _one_paragraph(doc)
        return schema

    def field(self, model: type[BaseModel], name: str, info: FieldInfo,
              sweep: bool) -> JsonObject:
        """One key: its value schema (a list of them too where it sweeps), description,
        default and examples."""
        special = self.special(model, name)
        schema = special if special is not None else self.value(info.annotation, info.metadata,
                                                                sweep)
        default = _json_default(info)
        if sweep and special is None and is_sweepable(info.annotation):
            schema = {"anyOf": [schema, {
                "type": "array", "minItems": 1,
                "description": "A sweep: the scenario runs once per value (with every other "
                               "swept key's values).",
                "items": self.value(info.annotation, info.metadata, False)}]}
        if "$ref" in schema:  # draft 7 ignores a $ref's sibling keys: keep them apart
            schema = {"allOf": [schema]}
        out: JsonObject = {"description": describe(model, name, info), **schema}
        if default is not None:
            out["default"] = default
        out["examples"] = [self.example(model, name, info, default)]
        return out

    def special(self, model: type[BaseModel], name: str) -> JsonObject | None:
        """Keys whose file form differs from the model's type (read by ``before`` validators)."""
        key = f"{model.__name__}.{name}"
        if model is Scenario and name == "layers":
            item: JsonObject = {"anyOf": [{"$ref": "#/definitions/layer_name"},
                                          {"$ref": "#/definitions/layer_with_options"}]}
            self.layer_defs()
            return {"anyOf": [{"$ref": "#/definitions/layer_name"},
                              {"type": "array", "minItems": 1, "items": item}]}
        if model is Scenario and name == "layer_options":
            self.layer_defs()
            return {"type": "object", "additionalProperties": False, "properties": {
                layer: {"allOf": [{"$ref": f"#/definitions/{self.model(cls.options, False)}"}],
                        "description": f"Options of the {layer} layer.",
                        "examples": [options_example(cls.options) or {}]}
                for layer, cls in LAYERS.items()}}
        if model is Scenario and name == "hosts":
            count = self.value(Scenario.model_fields["hosts"].annotation,
                               Scenario.model_fields["hosts"].metadata, False)
            machine: JsonObject = {"$ref": f"#/definitions/{self.model(MachineModel, False)}"}
            return {"anyOf": [count, {"type": "array", "minItems": 1, "items": count,
                                      "description": "A sweep over host counts."},
                              {"type": "array", "minItems": 1, "items": machine,
                               "description": "Real machines over SSH, one per host."}]}
        if model is Scenario and name == "workloads":
            return {"anyOf": [{"type": "null"}, {"type": "array", "items": {"anyOf": [
                {"enum": [*NAMES], "description": "A workload with its default options."},
                {"$ref": "#/definitions/workload_with_options"}]}}]}
        if key == "PlatformModel.placement":  # YAML 1.1 reads a bare ``off`` as false
            return {"enum": ["cross", "same", "off", False]}
        if model is Scenario and name == "pairing":  # ``pairing: off`` or its options
            return {"anyOf": [{"enum": ["on", "off", True, False]},
                              {"allOf": [{"$ref": f"#/definitions/{self.model(PairingModel, False)}"}]}]}
        if model is Scenario and name == "thresholds":  # {rr.rtt_p50_us: 1.5} or nested
            limit: JsonObject = {"type": "number", "exclusiveMinimum": 0}
            metrics = sorted(THRESHOLD_METRICS)
            return {"type": "object", "propertyNames": {
                "pattern": f"^({'|'.join(NAMES)})(\\.({'|'.join(metrics)}))?$"},
                "additionalProperties": {"anyOf": [limit, {
                    "type": "object", "propertyNames": {"enum": [*metrics]},
                    "additionalProperties": limit}]}}
        if key == "ResourcesModel.cpuset":
            return {"anyOf": [{"type": "string", "pattern": CPU_LIST},
                              {"type": "integer", "minimum": 0}, {"type": "null"}]}
        return None

    def layer_defs(self) -> None:
        if "layer_name" in self.defs:
            return
        self.defs["layer_name"] = {"enum": list(LAYERS), "description": "A network layer: "
                                   + "; ".join(f"{n}: {c.summary}" for n, c in LAYERS.items())}
        self.defs["layer_with_options"] = {
            "type": "object", "minProperties": 1, "maxProperties": 1,
            "additionalProperties": False, "description": "One layer with its options.",
            "properties": {layer: {"description": f"{cls.summary} (its options)",
                                   "anyOf": [{"$ref": f"#/definitions/{self.model(cls.options, False)}"},
                                             {"type": "null"}],
                                   "examples": [options_example(cls.options)]}
                           for layer, cls in LAYERS.items()}}

    def workload_defs(self) -> None:
        properties: JsonObject = {}
        for kind, model in workload_models().items():
            doc = _one_paragraph(inspect.getdoc(model) or kind)
            properties[kind] = {"description": doc, "anyOf": [
                {"$ref": f"#/definitions/{self.model(model, True)}"}, {"type": "null"}],
                "examples": [WORKLOAD_EXAMPLES.get(kind, options_example(model))]}
        self.defs["workload_with_options"] = {
            "type": "object", "minProperties": 1, "maxProperties": 1,
            "additionalProperties": False, "properties": properties,
            "description": "One workload with its options (a list sweeps an option)."}

    def example(self, model: type[BaseModel], name: str, info: FieldInfo,
                default: JsonValue) -> JsonValue:
        """An example value of a key: a written one, its default, or one of its type's."""
        key = f"{model.__name__}.{name}"
        if key in EXAMPLES:
            return EXAMPLES[key]
        if default not in (None, "", [], {}):
            return default
        kind = unit_kind(info.annotation, info.metadata)
        if kind:
            examples = UNIT_TEXT[kind]["examples"]
            assert isinstance(examples, list)  # each UNIT_TEXT kind lists its examples
            return examples[0]
        return _type_example(info.annotation, info.metadata)


def _json_default(info: FieldInfo) -> JsonValue:
    """A key's default as a scenario would write it (units as text), or None."""
    default = info.get_default(call_default_factory=False)
    if default is PydanticUndefined or default is None or isinstance(default, BaseModel):
        return None
    if isinstance(default, tuple):
        return list(default)
    kind = unit_kind(info.annotation, info.metadata)
    if kind and isinstance(default, int | float) and not isinstance(default, bool):
        return _FORMAT[kind](default)
    if isinstance(default, str | int | float | bool | list | dict):
        return default
    return None


def options_example(model: type[BaseModel], most: int = 3) -> JsonObject | None:
    """Options written with their defaults: the model's own keys (not its bases') first, at
    most ``most``; None for a model without options."""
    own = [n for n in model.model_fields if n in vars(model).get("__annotations__", {})]
    names = own + [n for n in model.model_fields if n not in own]
    example: JsonObject = {}
    for name in names:
        info = model.model_fields[name]
        default = _json_default(info)
        if default is not None and len(example) < most:
            example[info.alias or name] = default
    return example or None


def _type_example(annotation: object, metadata: list[object]) -> JsonValue:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_example(args[0], [*args[1:], *metadata])
    if origin in (typing.Union, types.UnionType):
        return _type_example(next(a for a in args if a is not type(None)), metadata)
    if origin is Literal:
        first: JsonValue = args[0]  # the models' literals are strings, numbers, booleans
        return first
    if annotation is bool:
        return True
    if annotation in (int, float):
        bounds = _bounds(metadata)
        low = bounds.get("minimum", bounds.get("exclusiveMinimum", 0))
        return max(1, int(low) + (1 if "exclusiveMinimum" in bounds else 0))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        name, info = next(iter(annotation.model_fields.items()))
        default = _json_default(info)
        return {info.alias or name: default if default is not None else
                _type_example(info.annotation, info.metadata)}
    if origin in (tuple, list):
        return [_type_example(args[0], [])] if args else []
    return "text"


def scenario_file_schema() -> JsonObject:
    """The JSON Schema (draft 7) of scenario files; see the module docstring."""
    builder = _Builder()
    builder.workload_defs()
    root = builder.object_schema(Scenario, sweep=True)
    return {
        "$schema": DRAFT,
        **root,
        "title": "vnetbench scenario",
        "description": "A vnetbench scenario: the lab to build (hosts, nodes, network layers, "
                       "link shaping, per-node resources), the workloads to run in it and how "
                       "often. Units as text (10ms, 512M, 500mbit, 0.5%); any key may be a "
                       "list to sweep it. Checked in full by `vnetbench plan FILE`.",
        "anyOf": [{"required": ["layers"]}, {"required": ["workloads"]}],
        "examples": [SCENARIO_EXAMPLE],
        "definitions": dict(sorted(builder.defs.items())),
    }


@cache
def label_unit_kinds() -> dict[str, str]:
    """Label name (as a sweep axis is labelled: ``link.delay``, ``rr.request``) -> unit
    kind, for every scenario key and workload option with a unit."""
    from pydantic import BaseModel

    from vnetbench.scenario.model import Scenario
    from vnetbench.workloads.registry import workload_models

    found: dict[str, set[str]] = {}

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, info in model.model_fields.items():
            kind = unit_kind(info.annotation, info.metadata)
            if kind:
                found.setdefault(prefix + (info.alias or name), set()).add(kind)
            sub = info.annotation
            for candidate in (sub, *getattr(sub, "__args__", ())):
                if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                    walk(candidate, f"{prefix}{name}.")

    walk(Scenario, "")
    for kind, model in workload_models().items():
        walk(model, f"{kind}.")
    return {name: kinds.pop() for name, kinds in found.items() if len(kinds) == 1}
