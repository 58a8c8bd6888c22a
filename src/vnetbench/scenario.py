"""Scenarios: YAML files validated into frozen pydantic models, with sweeps and clear errors.

    name: quick
    hosts: 2                     # emulated physical hosts
    nodes: 4                     # nodes, round-robin over hosts
    layers: [host, bridge, nat]  # or {vxlan: {vni: 7}} entries with layer options
    resources: {cpus: 0.5, memory: 512M}
    link: {delay: 10ms, jitter: 1ms, loss: 0.5%, rate: 500mbit}
    workloads:
      - rr: {protocol: tcp, request: 100, response: 200, duration: 5s}
    repeat: 3

Any scalar may be given as a list to sweep it (``nodes: [2, 4, 8]``, ``link: {delay: [0ms,
10ms]}``, ``rr: {request: [100, 1000]}``): ``expand`` yields one concrete scenario per point
of the cartesian product, labelled with the swept keys. Every problem becomes one
``ScenarioError`` line naming the file, the key and what is allowed.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from vnetbench.errors import ScenarioError
from vnetbench.layers.registry import LAYERS
from vnetbench.topology import MAX_HOSTS, MAX_NODES_PER_HOST, LinkShape, Resources
from vnetbench.units import Duration, Fraction, Rate, Size
from vnetbench.workloads.registry import NAMES, workload_model, workload_models


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LinkModel(Frozen):
    delay: Duration = 0.0
    jitter: Duration = 0.0
    loss: Fraction = 0.0
    rate: Rate = 0.0

    def shape(self) -> LinkShape:
        return LinkShape(self.delay, self.jitter, self.loss, self.rate)


class ResourcesModel(Frozen):
    cpus: float | None = Field(default=None, gt=0)
    memory: Size | None = None
    cpuset: str | None = None

    def resources(self) -> Resources:
        return Resources(self.cpus, self.memory, self.cpuset)


class QuietModel(Frozen):
    """Before each trial, wait until the machine is quiet (CPU busy outside the lab)."""

    threshold: float = Field(default=0.3, ge=0.0)
    """CPUs' worth of busy time (all CPUs together) below which the machine counts as quiet."""
    wait: Duration = Field(default=3.0, ge=0.0, le=600.0)
    """How long to wait for quiet before running anyway (the run records it)."""


class PlatformModel(Frozen):
    """What the run controls on the machine during every trial (each on by default; what
    took effect is recorded in run.json under environment.controls)."""

    placement: Literal["cross", "same", "off"] = "cross"
    """CPU placement of client, server and the layer's daemons, the same for every layer:
    ``cross`` puts server and client on different CPUs, ``same`` on one, ``off`` leaves it
    to the scheduler."""
    cpus: tuple[int, ...] | None = None
    """CPUs to place on (default: every CPU vnetbench may use)."""
    idle_states: bool = True
    """Hold CPU idle states off during the run (``/dev/cpu_dma_latency`` = 0)."""
    governor: bool = True
    """Set the cpufreq governor to ``performance`` where the machine has one."""
    quiet: QuietModel | None = QuietModel()
    """Quiet-machine check before each trial; ``null`` turns it off."""

    @field_validator("cpus")
    @classmethod
    def _cpus_exist(cls, value: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if value is None:
            return None
        import os

        usable = sorted(os.sched_getaffinity(0))
        bad = [c for c in value if c not in usable]
        if not value or bad:
            raise ValueError(f"CPUs {bad or '[]'} are not usable here; usable: {usable}")
        return tuple(dict.fromkeys(value))


class Scenario(Frozen):
    """One concrete (sweep-free) scenario."""

    name: str = "scenario"
    description: str = ""
    hosts: int = Field(default=1, ge=1, le=MAX_HOSTS)
    nodes: int = Field(default=2, ge=1)
    layers: tuple[str, ...] = ("host", "bridge")
    layer_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    resources: ResourcesModel = ResourcesModel()
    link: LinkModel = LinkModel()
    workloads: tuple[dict[str, dict[str, Any]], ...] = ()
    repeat: int = Field(default=1, ge=1)
    until_cv: Fraction | None = None
    """Adaptive repetition: after ``repeat`` rounds, repeat a (point, layer) until the
    coefficient of variation of its headline metrics is below this (e.g. ``3%``)."""
    max_repeat: int = Field(default=10, ge=1)
    budget: Duration | None = Field(default=None, gt=0)
    """Adaptive repetition stops starting rounds that would end after this much run time
    (the fixed ``repeat`` rounds always run)."""
    warmup: int = Field(default=0, ge=0)
    """Untimed rounds run first (their samples are discarded)."""
    seed: int = 1
    busy: bool = False
    """Every node also runs a CPU-bound neighbour inside its cgroup (density sweeps)."""
    busy_duty: float = Field(default=1.0, gt=0, le=1)
    """Fraction of the time each neighbour spins (1.0 = always busy)."""
    skip_unsupported: bool = False
    """Skip (with a warning) layers this host cannot build instead of failing."""
    platform: PlatformModel = PlatformModel()
    noise_floor: bool = True
    """A/A control: the baseline layer (``host``) runs twice a round, as two interleaved
    groups, so the run knows the smallest change it can resolve per metric (differences
    below it are reported as not resolved)."""

    @model_validator(mode="before")
    @classmethod
    def _inline_layer_options(cls, data: object) -> object:
        """``layers: [{vxlan: {vni: 7}}]`` moves the options into ``layer_options``."""
        if not isinstance(data, dict) or not isinstance(data.get("layers"), list):
            return data
        options = dict(data.get("layer_options") or {})
        for entry in data["layers"]:
            if isinstance(entry, dict) and len(entry) == 1:
                (name, opts), = entry.items()
                options[name] = opts or {}
        return {**data, "layer_options": options}

    @field_validator("layer_options")
    @classmethod
    def _check_layer_options(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for name, opts in value.items():
            if name not in LAYERS:
                raise ValueError(f"options for unknown layer {name!r}; allowed: {', '.join(LAYERS)}")
            try:
                LAYERS[name].options.model_validate(opts)
            except ValidationError as exc:
                raise ValueError(f"{name}: {_first_error(exc, LAYERS[name].options)}") from None
        return value

    @field_validator("layers", mode="before")
    @classmethod
    def _layers(cls, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple) or not value:
            raise ValueError("give a list of layer names, e.g. [host, bridge]")
        names = []
        for entry in value:
            name = next(iter(entry)) if isinstance(entry, dict) and len(entry) == 1 else entry
            if not isinstance(name, str) or name not in LAYERS:
                raise ValueError(f"unknown layer {name!r}; allowed: {', '.join(LAYERS)}")
            names.append(name)
        if len(set(names)) != len(names):
            raise ValueError("a layer is listed twice")
        return names

    @field_validator("workloads", mode="before")
    @classmethod
    def _workloads(cls, value: object) -> object:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise ValueError("give a list such as [{rr: {duration: 5s}}]")
        out = []
        for k, entry in enumerate(value):
            if isinstance(entry, str):
                entry = {entry: {}}
            if not isinstance(entry, dict) or len(entry) != 1:
                raise ValueError(f"entry {k} must be one workload name with its options")
            (kind, opts), = entry.items()
            if kind not in NAMES:
                raise ValueError(f"unknown workload {kind!r}; allowed: {', '.join(NAMES)}")
            model = workload_model(kind)
            try:
                validated = model.model_validate(opts or {})
            except ValidationError as exc:
                raise ValueError(f"{kind}: {_first_error(exc, model)}") from None
            out.append({kind: validated.model_dump()})
        return out

    def workload_options(self) -> list[tuple[str, BaseModel]]:
        return [(kind, workload_model(kind).model_validate(opts))
                for entry in self.workloads for kind, opts in entry.items()]

    def check_capacity(self) -> None:
        per_host = -(-self.nodes // self.hosts)
        if per_host > MAX_NODES_PER_HOST:
            raise ValueError(
                f"{self.nodes} nodes on {self.hosts} host(s) is {per_host} per host; the address "
                f"plan allows {MAX_NODES_PER_HOST}: add hosts or lower nodes")

    def digest(self) -> str:
        return hashlib.sha256(
            json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class SweepPoint:
    """One concrete scenario of a sweep and the swept values that made it."""

    scenario: Scenario
    axes: dict[str, str]


@dataclass(frozen=True)
class ScenarioFile:
    """A loaded scenario file: its raw data, sweep points and digest."""

    path: str
    raw: dict[str, Any]
    points: tuple[SweepPoint, ...]

    @property
    def name(self) -> str:
        return self.points[0].scenario.name

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.raw, sort_keys=True, default=str).encode()).hexdigest()


def _first_error(exc: ValidationError, model: type[BaseModel]) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
    if err["type"] == "extra_forbidden":
        parent = _model_at(model, err["loc"][:-1])
        allowed = ", ".join(parent.model_fields) if parent else "see the docs"
        return f"unknown key {loc!r}; allowed here: {allowed}"
    msg = err["msg"].removeprefix("Value error, ")
    return f"{loc}: {msg}"


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    current: type[BaseModel] = model
    for part in loc:
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        sub = _submodel(field.annotation)
        if sub is None:
            return None
        current = sub
    return current


def _submodel(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        sub = _submodel(arg)
        if sub:
            return sub
    return None


def _is_list_field(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_is_list_field(a) for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _is_list_field(typing.get_args(annotation)[0])
    return False


def _sweep_axes(raw: Mapping[str, Any], model: type[BaseModel],
                path: str) -> Iterator[tuple[str, list[Any]]]:
    """(dotted key, values) for every list given where the model expects a scalar."""
    for key, value in raw.items():
        field = model.model_fields.get(key)
        if field is None:
            continue
        dotted = f"{path}{key}"
        sub = _submodel(field.annotation)
        if isinstance(value, dict) and sub is not None:
            yield from _sweep_axes(value, sub, dotted + ".")
        elif isinstance(value, list) and not _is_list_field(field.annotation):
            if not value:
                raise ValueError(f"{dotted}: an empty list sweeps nothing")
            yield dotted, value


def _all_axes(raw: Mapping[str, Any]) -> list[tuple[str, list[Any]]]:
    axes = list(_sweep_axes(raw, Scenario, ""))
    for k, entry in enumerate(raw.get("workloads") or []):
        if isinstance(entry, dict) and len(entry) == 1:
            (kind, opts), = entry.items()
            if kind in NAMES and isinstance(opts, dict):
                axes += list(_sweep_axes(opts, workload_model(kind), f"workloads.{k}.{kind}."))
    return axes


def _set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    target: Any = data
    for part in parts[:-1]:
        target = target[int(part)] if isinstance(target, list) else target[part]
    target[parts[-1]] = value


def _label(key: str) -> str:
    parts = key.split(".")
    return ".".join(parts[2:]) if parts[0] == "workloads" else key


def expand(raw: dict[str, Any], source: str = "<scenario>") -> ScenarioFile:
    """Validate ``raw`` and expand its sweeps; ScenarioError on the first problem."""
    if not isinstance(raw, dict):
        raise ScenarioError(f"{source}: the file must hold a mapping of keys (name, layers, ...)")
    try:
        axes = _all_axes(raw)
    except ValueError as exc:
        raise ScenarioError(f"{source}: {exc}") from None
    points = []
    for combo in itertools.product(*(values for _, values in axes)) if axes else [()]:
        data = json.loads(json.dumps(raw, default=str))
        for (key, _), value in zip(axes, combo, strict=True):
            _set_path(data, key, value)
        try:
            scenario = Scenario.model_validate(data)
            scenario.check_capacity()
        except ValidationError as exc:
            raise ScenarioError(f"{source}: {_first_error(exc, Scenario)}") from None
        except ValueError as exc:
            raise ScenarioError(f"{source}: {exc}") from None
        labels = {_label(key): str(value) for (key, _), value in zip(axes, combo, strict=True)}
        points.append(SweepPoint(scenario, labels))
    return ScenarioFile(source, raw, tuple(points))


def load_scenario(path: str | Path) -> ScenarioFile:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ScenarioError(f"{path}:{where} is not valid YAML: "
                            f"{getattr(exc, 'problem', exc)}") from None
    return expand(raw if raw is not None else {}, str(path))


def scenario_json_schema() -> dict[str, Any]:
    """JSON Schema for editors (workload options are listed per workload)."""
    schema = Scenario.model_json_schema()
    schema["$defs"] = schema.get("$defs", {})
    for kind, model in workload_models().items():
        schema["$defs"][f"workload_{kind}"] = model.model_json_schema()
    return schema
