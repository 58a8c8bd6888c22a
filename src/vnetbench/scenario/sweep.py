"""A scenario file as a sweep: its data validated point by point (``expand``), one concrete
``Scenario`` per point of the cartesian product of the lists given where a scalar is expected
(``nodes: [2, 4, 8]``), labelled with the swept keys; the file read with its bounds
(``load_scenario``) and the sweep's own bounds (``MAX_POINTS`` points, ``MAX_TRIALS`` trials,
counted from the validated points)."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ValidationError

from vnetbench.scenario.loading import (
    parse_yaml,
    read_text,
    scenario_error,
)
from vnetbench.scenario.model import (
    MAX_POINTS,
    MAX_SWEEP_WORK,
    MAX_TRIALS,
    Scenario,
    first_error,
    is_machine_list,
    is_sweepable,
    submodel,
)
from vnetbench.workloads.registry import NAMES, workload_model


@dataclass(frozen=True)
class SweepPoint:
    """One concrete scenario of a sweep and the swept values that made it."""

    scenario: Scenario
    axes: dict[str, str]


@dataclass(frozen=True)
class ScenarioFile:
    """A loaded scenario file: its raw data, sweep points and digest."""

    path: str
    raw: dict[str, object]
    points: tuple[SweepPoint, ...]
    overrides: tuple[str, ...] = ()
    """The command-line overrides applied to the file's data, as given (``--nodes 4``,
    ``--set link.delay=10ms``; ``scenario_overrides``): ``raw`` is the data with them."""

    def record(self) -> dict[str, object]:
        """The scenario as ``run.json`` keeps it: the file it was read from, its data (as
        run, overrides applied) and, when there were any, the overrides as given."""
        extra = {"overrides": list(self.overrides)} if self.overrides else {}
        return {"file": self.path, **self.raw, **extra}

    @property
    def name(self) -> str:
        return self.points[0].scenario.name

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.raw, sort_keys=True, default=str).encode()).hexdigest()


def _sweep_axes(raw: Mapping[str, object], model: type[BaseModel],
                path: str) -> Iterator[tuple[str, list[object]]]:
    """(dotted key, values) for every list given where the model expects a scalar."""
    for key, value in raw.items():
        field = model.model_fields.get(key)
        if field is None:
            continue
        dotted = f"{path}{key}"
        sub = submodel(field.annotation)
        if isinstance(value, dict) and sub is not None:
            yield from _sweep_axes(value, sub, dotted + ".")
        elif (isinstance(value, list) and is_sweepable(field.annotation)
              and not (model is Scenario and key == "hosts" and is_machine_list(value))):
            if not value:
                raise ValueError(f"{dotted}: an empty list sweeps nothing")
            yield dotted, value


def _all_axes(raw: Mapping[str, object]) -> list[tuple[str, list[object]]]:
    axes = list(_sweep_axes(raw, Scenario, ""))
    entries = raw.get("workloads")
    for k, entry in enumerate(entries if isinstance(entries, list) else []):
        if isinstance(entry, dict) and len(entry) == 1:
            (kind, opts), = entry.items()
            if kind in NAMES and isinstance(opts, dict):
                axes += list(_sweep_axes(opts, workload_model(kind), f"workloads.{k}.{kind}."))
    return axes


def _set_path(data: dict[str, object], dotted: str, value: object) -> None:
    """Set the key ``dotted`` names (``_all_axes`` found it in this data: mappings down to
    it, list items by number) to ``value``."""
    parts = dotted.split(".")
    target: object = data
    for part in parts[:-1]:
        if isinstance(target, list):
            target = target[int(part)]
        else:
            assert isinstance(target, dict)  # the path runs through the data's own mappings
            target = target[part]
    assert isinstance(target, dict)  # a swept key is a mapping's key
    target[parts[-1]] = value


def _label(key: str) -> str:
    parts = key.split(".")
    return ".".join(parts[2:]) if parts[0] == "workloads" else key


def _axis_text(scenario: Scenario, key: str, value: object) -> str:
    """A swept value as its label: as written, except where validation read it otherwise
    (YAML's bare ``off`` is false; ``placement`` takes it as ``off``)."""
    if isinstance(value, bool) and not key.startswith("workloads."):
        current: object = scenario
        for part in key.split("."):
            current = getattr(current, part, None)
        if isinstance(current, str):
            return current
    return str(value)


def expand(raw: object, source: str = "<scenario>") -> ScenarioFile:
    """Validate ``raw`` and expand its sweeps; ScenarioError on the first problem.

    The sweep's size is checked before any point is built (at most ``MAX_POINTS``), and the
    trials the points ask for are added up point by point (at most ``MAX_TRIALS``)."""
    if not isinstance(raw, dict):
        raise scenario_error(source, "the file must hold a mapping of keys (name, layers, ...)")
    if not all(isinstance(key, str) for key in raw):
        raise scenario_error(source, "every top-level key must be text (name, layers, ...)")
    try:
        axes = _all_axes(raw)
    except ValueError as exc:
        raise scenario_error(source, str(exc)) from None
    count = math.prod(len(values) for _, values in axes)
    if count > MAX_POINTS:
        sizes = " x ".join(f"{len(values)} {key}" for key, values in axes)
        raise scenario_error(source, f"the sweep has {count} points ({sizes}); at most {MAX_POINTS}: "
                             "sweep fewer values or split the scenario")
    try:
        base = json.dumps(raw, default=str)
    except (TypeError, ValueError) as exc:
        raise scenario_error(source, f"cannot be read as data: {exc}") from None
    if count * len(base) > MAX_SWEEP_WORK:
        raise scenario_error(source, f"{count} sweep points of a {len(base)}-byte scenario are too "
                             "much to validate: sweep fewer values or shorten the file")
    points = []
    trials = 0
    for combo in itertools.product(*(values for _, values in axes)) if axes else [()]:
        data = json.loads(base)
        for (key, _), value in zip(axes, combo, strict=True):
            _set_path(data, key, value)
        try:
            scenario = Scenario.model_validate(data)
            scenario.check_capacity()
        except ValidationError as exc:
            raise scenario_error(source, first_error(exc, Scenario)) from None
        except ValueError as exc:
            raise scenario_error(source, str(exc)) from None
        trials += scenario.trial_count()
        if trials > MAX_TRIALS:
            raise scenario_error(source, f"the scenario asks for more than {MAX_TRIALS} trials (sweep "
                                 f"points x layers x rounds of warmup + repeat, or max_repeat "
                                 f"with until_cv; {count} point(s)): lower repeat/max_repeat or "
                                 "sweep fewer values")
        labels = {_label(key): _axis_text(scenario, key, value)
                  for (key, _), value in zip(axes, combo, strict=True)}
        points.append(SweepPoint(scenario, labels))
    return ScenarioFile(source, raw, tuple(points))


def load_scenario(path: str | Path) -> ScenarioFile:
    """Read, bound-check, parse and validate a scenario file (see the module docstring).
    ``scenario_overrides.load_scenario_with`` does the same with command-line overrides."""
    return expand_checked(read_data(path), str(path))


def read_data(path: str | Path) -> object:
    """A scenario file's data as parsed (bounded; an empty scenario refused), unvalidated."""
    path = Path(path)
    text = read_text(path)
    raw = parse_yaml(text, str(path))
    if raw is None or raw == {}:
        raise scenario_error(str(path), "empty scenario: give at least layers or workloads "
                                "(e.g. layers: [host, bridge])")
    return raw


def expand_checked(raw: object, source: str) -> ScenarioFile:
    """``expand``, then refuse data that names neither layers nor workloads."""
    scenario = expand(raw, source)  # a mistake in what is there is named first
    if isinstance(raw, dict) and "layers" not in raw and "workloads" not in raw:
        raise scenario_error(source, "the scenario names neither layers nor workloads: give at "
                             "least one (e.g. layers: [host, bridge])")
    return scenario
