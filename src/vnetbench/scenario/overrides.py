"""Command-line overrides of a scenario: ``--layers``, ``--nodes``, ``--hosts``, ``--repeat``
and ``--set KEY=VALUE``, applied to the file's data before it is validated.

    vnetbench run scenarios/quick.yaml --layers host,vxlan --nodes 2,4 --set link.delay=10ms
    vnetbench plan scenarios/quick.yaml --set pairing=off --set rr.duration=2s

A ``KEY`` is one of three things, told apart by its first name:

- a scenario key, dotted into its mappings: ``repeat``, ``link.delay``, ``pairing.slice``,
  ``platform.quiet.wait`` (a list index where the scenario holds a list: ``workloads.0.rr``);
- a workload's option, for every workload of that kind the scenario runs: ``rr.duration``,
  ``stream.streams``;
- a layer's option, for a layer the scenario lists: ``vxlan.vni`` (written where the scenario
  gives that layer's options, inline in ``layers`` or in ``layer_options``).

``VALUE`` is read as YAML, as in a scenario file: ``10ms`` is text, ``4`` a number, ``off``
false, ``[0ms, 10ms]`` a sweep, ``{slice: 50ms}`` a mapping. ``--nodes``/``--hosts`` take a
number or a comma list (a sweep: ``--nodes 2,4,8``); ``--layers`` a comma list of names (a
layer the scenario gives options for keeps them).

A key that names nothing is refused before validation, in one line naming the option as given
and the closest known name; a value is checked by the scenario's own validation, whose
one-line error then names the file *with* the overrides (``quick.yaml with --nodes x:
nodes: ...``). What was overridden is kept with the loaded scenario (``ScenarioFile.overrides``)
and recorded in the run's ``run.json`` (``scenario.overrides``).
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from vnetbench.backends.catalog import LAYERS
from vnetbench.errors import ScenarioError
from vnetbench.scenario.loading import did_you_mean, one_line, parse_yaml, shown
from vnetbench.scenario.model import Scenario, is_machine_list, is_sweepable, submodel
from vnetbench.scenario.sweep import ScenarioFile, expand_checked, read_data
from vnetbench.workloads.registry import NAMES, workload_model


@dataclass(frozen=True)
class Override:
    """One change to a scenario's data: a dotted ``key``, its ``value`` (as YAML reads it)
    and the option as the user gave it (``--set link.delay=10ms``, ``--nodes 4``)."""

    key: str
    value: Any
    given: str


def parse_set(text: str) -> Override:
    """``KEY=VALUE`` of ``--set``; ScenarioError (one line) when it is not of that form."""
    given = f"--set {text}"
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ScenarioError(one_line(f"{given}: give KEY=VALUE, e.g. --set link.delay=10ms"))
    if not value.strip():
        raise ScenarioError(one_line(f"{given}: give a value after '=' (write '' for empty "
                                     "text, null for none)"))
    return Override(key, parse_yaml(value, given), given)


def _comma_list(text: str, given: str) -> Any:
    """``4`` -> 4; ``2,4,8`` -> [2, 4, 8] (a sweep); as YAML reads each item."""
    parts = [p.strip() for p in text.split(",")]
    if not all(parts):
        raise ScenarioError(one_line(f"{given}: an empty item; give e.g. 4 or 2,4,8"))
    values = [parse_yaml(p, given) for p in parts]
    return values[0] if len(values) == 1 else values


def option_overrides(*, layers: str | None = None, nodes: str | None = None,
                     hosts: str | None = None, repeat: str | None = None,
                     sets: Sequence[str] = ()) -> list[Override]:
    """The overrides the command-line options ask for, in the order they apply: the named
    options first, then every ``--set`` in the order given."""
    out: list[Override] = []
    if layers is not None:
        names = [n.strip() for n in layers.split(",")]
        if not all(names):
            raise ScenarioError(one_line(f"--layers {layers}: an empty name; give e.g. "
                                         "host,bridge"))
        out.append(Override("layers", names, f"--layers {layers}"))
    for key, text in (("nodes", nodes), ("hosts", hosts)):
        if text is not None:
            out.append(Override(key, _comma_list(text, f"--{key} {text}"), f"--{key} {text}"))
    if repeat is not None:
        out.append(Override("repeat", parse_yaml(repeat, f"--repeat {repeat}"),
                            f"--repeat {repeat}"))
    out += [parse_set(text) for text in sets]
    return out


def load_scenario_with(path: str | Path, overrides: Sequence[Override] = ()) -> ScenarioFile:
    """``scenario.load_scenario`` of ``path`` with ``overrides`` applied to its data first."""
    return expand_with(read_data(path), str(path), overrides)


def expand_with(raw: object, source: str, overrides: Sequence[Override] = ()) -> ScenarioFile:
    """``raw`` with ``overrides`` applied, validated and expanded; errors name the source
    with the overrides (``quick.yaml with --nodes 4``), and the result records them."""
    if not overrides:
        return expand_checked(raw, source)
    loaded = expand_checked(apply_overrides(raw, overrides),
                            f"{source} with {describe(overrides)}")
    return dataclasses.replace(loaded, path=source, overrides=tuple(o.given for o in overrides))


def describe(overrides: Sequence[Override]) -> str:
    """The options as given, for messages: ``--nodes 4 --set link.delay=10ms``."""
    return " ".join(o.given for o in overrides)


def apply_overrides(raw: object, overrides: Sequence[Override]) -> object:
    """A copy of ``raw`` with every override applied (``raw`` itself is left alone);
    ScenarioError naming the option when a key names nothing the scenario has."""
    if not overrides or not isinstance(raw, dict):
        return raw
    data = copy.deepcopy(raw)
    for override in overrides:
        try:
            _apply(data, override.key, override.value)
        except ValueError as exc:
            raise ScenarioError(one_line(f"{override.given}: {exc}")) from None
    return data


def _scenario_keys() -> dict[str, Any]:
    return {name: field for name, field in Scenario.model_fields.items() if name != "machines"}


def _apply(data: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    if not all(parts):
        raise ValueError(f"{key!r} is not a key: names joined by dots, e.g. link.delay")
    head = parts[0]
    if head in _scenario_keys():
        _check_scenario_path(parts)
        if head == "hosts" and is_machine_list(data.get("hosts")):
            raise ValueError("the scenario's hosts are real machines (ssh): change them in "
                             "the file")
        if key == "layers" and isinstance(value, list):
            value = _keep_layer_options(data.get("layers"), value)
        _put(data, parts, value)
    elif head in NAMES:
        _set_workload_option(data, head, parts[1:], value)
    elif head in LAYERS:
        _set_layer_option(data, head, parts[1:], value)
    else:
        known = [*_scenario_keys(), *NAMES, *LAYERS]
        raise ValueError(f"unknown key {shown(head)}{did_you_mean(head, known)}: give a "
                         "scenario key (repeat, link.delay), a workload's option "
                         "(rr.duration) or a layer's option (vxlan.vni)")


def _field_names(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _check_scenario_path(parts: list[str]) -> None:
    """ValueError when a dotted scenario key names a key no mapping on its way has."""
    model: type[BaseModel] | None = Scenario
    for depth, part in enumerate(parts):
        if model is None:
            return  # free-form below (layer_options, workloads, a list): validation checks
        fields = {f.alias or n: f for n, f in model.model_fields.items()}
        if part not in fields:
            where = ".".join(parts[:depth])
            raise ValueError(f"unknown key {shown('.'.join(parts[:depth + 1]))}"
                             f"{did_you_mean(part, fields)}; allowed in {where}: "
                             f"{', '.join(fields)}")
        annotation = fields[part].annotation
        if not is_sweepable(annotation) or typing.get_origin(annotation) is dict:
            return
        model = submodel(annotation)
        if model is None and depth < len(parts) - 1:
            raise ValueError(f"{'.'.join(parts[:depth + 1])} is a single value, not a mapping "
                             f"with {parts[depth + 1]!r}")


def _put(data: Any, parts: Sequence[str], value: Any) -> None:
    """Set ``value`` at the dotted path in nested dicts (made where missing) and lists."""
    target = data
    for depth, part in enumerate(parts[:-1]):
        here = ".".join(parts[:depth + 1])
        if isinstance(target, list):
            nxt = target[_index(target, part, here)]
        else:
            nxt = target.get(part)
            if nxt is None:
                nxt = target[part] = {}
        if not isinstance(nxt, dict | list):
            raise ValueError(f"{here} is {shown(nxt)} in the scenario, not a mapping: set "
                             f"{here} itself (e.g. --set '{here}={{...}}')")
        target = nxt
    last = parts[-1]
    if isinstance(target, list):
        target[_index(target, last, ".".join(parts))] = value
    else:
        target[last] = value


def _index(items: list[Any], part: str, here: str) -> int:
    if not part.isdigit() or int(part) >= len(items):
        raise ValueError(f"{here}: the scenario's list has {len(items)} item(s); give an index "
                         f"from 0 to {len(items) - 1}")
    return int(part)


def _layer_name(entry: object) -> object:
    if isinstance(entry, dict) and len(entry) == 1:
        return next(iter(entry))
    return entry


def _keep_layer_options(current: object, names: list[Any]) -> list[Any]:
    """``--layers host,vxlan``: a layer given inline with options (``{vxlan: {vni: 7}}``)
    keeps them."""
    entries = current if isinstance(current, list) else [current] if current else []
    inline = {_layer_name(e): e for e in entries if isinstance(e, dict)}
    return [inline.get(n, n) if isinstance(n, str) else n for n in names]


def _set_workload_option(data: dict[str, Any], kind: str, rest: list[str], value: Any) -> None:
    allowed = _field_names(workload_model(kind))
    if not rest:
        raise ValueError(f"name one of the {kind} workload's options: {kind}.<option>, "
                         f"e.g. {kind}.{allowed[0]}; allowed: {', '.join(allowed)}")
    if rest[0] not in allowed:
        raise ValueError(f"the {kind} workload has no option {shown(rest[0])}"
                         f"{did_you_mean(rest[0], allowed)}; allowed: {', '.join(allowed)}")
    entries = data.get("workloads")
    entries = entries if isinstance(entries, list) else []
    hits = 0
    for k, entry in enumerate(entries):
        if entry == kind:
            entry = entries[k] = {kind: {}}
        if isinstance(entry, dict) and len(entry) == 1 and kind in entry:
            if entry[kind] is None:
                entry[kind] = {}
            if isinstance(entry[kind], dict):
                _put(entry[kind], rest, value)
                hits += 1
    if not hits:
        kinds = [str(_layer_name(e)) for e in entries]
        raise ValueError(f"the scenario runs no {kind} workload (it runs "
                         f"{', '.join(kinds) or 'none'}); add it in the file")


def _set_layer_option(data: dict[str, Any], layer: str, rest: list[str], value: Any) -> None:
    allowed = _field_names(LAYERS[layer].options)
    if not rest:
        raise ValueError(f"name one of layer {layer}'s options: {layer}.<option>; allowed: "
                         f"{', '.join(allowed) or 'none (it takes no options)'}")
    if rest[0] not in allowed:
        raise ValueError(f"layer {layer} has no option {shown(rest[0])}"
                         f"{did_you_mean(rest[0], allowed)}; allowed: "
                         f"{', '.join(allowed) or 'none (it takes no options)'}")
    layers = data.get("layers")
    entries = layers if isinstance(layers, list) else [layers] if layers else []
    names = [_layer_name(e) for e in entries]
    if layer not in names:
        raise ValueError(f"the scenario has no {layer} layer (it has "
                         f"{', '.join(map(str, names)) or 'none'}); add it (--layers)")
    for entry in entries:
        if isinstance(entry, dict) and layer in entry:
            if entry[layer] is None:
                entry[layer] = {}
            _put(entry[layer], rest, value)
            return
    options = data.get("layer_options")
    if options is None:
        options = data["layer_options"] = {}
    if not isinstance(options, dict):
        raise ValueError("layer_options in the scenario is not a mapping")
    _put(options, [layer, *rest], value)
