"""The conditions of a run, short: the test parameters set beside the headline table and the
environment folded into a summary (the full record behind a disclosure).

The parameters come from the scenario as the run recorded it, completed with each
workload's defaults from its options model (``workloads.registry``), so a table of ratios
always says what was measured: message sizes, protocol, streams, duration, repetitions (or
rounds) and the layers the run skipped. Nothing here is measured; it only reads run.json.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping, Sequence

from pydantic import BaseModel

from vnetbench.report.tables import HeadlineTable, describe_config, layer_sort_key
from vnetbench.results.recorded import LEGEND_KEY, RecordedScenario
from vnetbench.units import counted, parse_duration, parse_size


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _model(kind: str) -> type[BaseModel] | None:
    from vnetbench.workloads.registry import NAMES, workload_model

    return workload_model(kind) if kind in NAMES else None


def _options(kind: str, given: Mapping[str, object]) -> dict[str, object]:
    """The workload's options: those the scenario gave, then its model's defaults."""
    model = _model(kind)
    out: dict[str, object] = {}
    if model is not None:
        for name, spec in model.model_fields.items():
            if not spec.is_required():
                out[name] = spec.default
    out.update({k: v for k, v in given.items() if k != "kind"})
    return out


def _swept(value: object, show: Callable[[object], str]) -> str:
    """A value, or a swept list of them as ``64 B | 16 KiB``."""
    if isinstance(value, list | tuple):
        return " | ".join(show(v) for v in value)
    return str(show(value))


def _size(value: object) -> str:
    """``100 B``, ``16 KiB``, ``1.5 MiB``."""
    try:
        size = parse_size(value)
    except (ValueError, TypeError):
        return str(value)
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= scale and (size % scale == 0 or size >= 10 * scale):
            return f"{size / scale:.3g} {unit}"
    return f"{size} B"


def _seconds(value: object) -> str:
    try:
        return f"{parse_duration(value):g} s"
    except (ValueError, TypeError):
        return str(value)


PROBE_WORDS: tuple[tuple[str, Callable[[object], str]], ...] = (
    ("protocol", lambda v: _swept(v, lambda x: str(x).upper())),
    ("request", lambda v: _swept(v, _size) + " request"),
    ("response", lambda v: _swept(v, _size) + " response"),
    ("streams", lambda v: counted(v, "stream") if not isinstance(v, list)
     else _swept(v, str) + " streams"),
    ("send_size", lambda v: _swept(v, _size) + " writes"),
    ("bitrate", lambda v: f"at {_swept(v, str)}"),
    ("burst", lambda v: f"{_swept(v, str)} in flight"),
    ("duration", lambda v: _swept(v, _seconds)),
    ("warmup", lambda v: _swept(v, _seconds) + " warm-up"),
)
"""How a workload option reads in the parameters box (shown when set and not trivial)."""
TRIVIAL: Mapping[str, tuple[object, ...]] = {"burst": (1,), "warmup": (0, 0.0, "0s"),
                                             "send_size": (None,), "bitrate": (None,)}
KNOWN = {name for name, _ in PROBE_WORDS}
BOOKKEEPING = frozenset({"port", "interval", "client", "server", "circuits", "nodelay",
                         "direction"})


def workload_line(kind: str, given: Mapping[str, object]) -> str:
    """``TCP, 100 B request, 200 B response, 1 s`` for a probe workload; a workload without
    those options lists what the scenario gave it (``key=value``)."""
    options = _options(kind, given)
    words = [show(options[name]) for name, show in PROBE_WORDS
             if options.get(name) is not None
             and options[name] not in TRIVIAL.get(name, ())]
    if kind == "stream" and str(options.get("protocol", "tcp")) == "tcp":
        words.append("TCP_NODELAY" if options.get("nodelay") else "Nagle on")
    if options.get("direction") not in (None, "forward"):
        words.append(f"{options['direction']} direction")
    if kind == "crr":
        words.insert(0, "a new TCP connection per transaction")
    others = [f"{k}={v}" for k, v in given.items()
              if k not in KNOWN and k not in BOOKKEEPING and k != "kind"]
    return ", ".join([*words, *others]) or "defaults"


def repetitions_line(scenario: RecordedScenario, table: HeadlineTable | None,
                     rounds: int = 0) -> str:
    """``4 per layer (until CV 5%, at most 6, budget 260s); measured 4-6 trials a layer``;
    ``rounds``: how many rounds the samples' ``round`` label counts (a paired design)."""
    parts: list[str] = []
    shown = scenario.shown
    for key, word in (("design", "design"), ("rounds", "rounds")):
        if key in shown:
            parts.append(f"{word} {shown[key]}")
    if "repeat" in shown:
        extra = [f"{word} {shown[key]}" for key, word in
                 (("until_cv", "until CV"), ("max_repeat", "at most"), ("budget", "budget"))
                 if key in shown]
        more = ", ".join(extra)
        parts.append(f"{shown['repeat']} per layer" + (f" ({more})" if more else ""))
    if rounds:
        parts.append(f"{counted(rounds, 'round')} measured")
    if table is not None:
        ns = sorted({c.ratio.ratio.n for c in table.cells.values() if c.ratio is not None})
        nb = sorted({c.ratio.ratio.n_baseline for c in table.cells.values()
                     if c.ratio is not None})
        designs = {c.ratio.ratio.design for c in table.cells.values() if c.ratio is not None}
        if ns and designs - {"unpaired"}:
            span = f"{ns[0]}" if ns[0] == ns[-1] else f"{ns[0]}\u2013{ns[-1]}"
            paired = ", ".join(sorted(designs - {"unpaired"}))
            parts.append(f"measured: {span} rounds, every layer beside {table.baseline} in each "
                         f"({paired})")
        elif ns:
            span = f"{ns[0]}" if ns[0] == ns[-1] else f"{ns[0]}\u2013{ns[-1]}"
            base = f"{nb[0]}" if nb[0] == nb[-1] else f"{nb[0]}\u2013{nb[-1]}"
            parts.append(f"measured: {span} trials a layer, {base} of {table.baseline}")
    return "; ".join(parts)


def skipped_layers(scenario: RecordedScenario, measured: Sequence[str]) -> list[str]:
    """Layers the scenario names that the run has no sample of."""
    return sorted(set(scenario.layers) - set(measured), key=layer_sort_key)


def parameters_html(scenario: RecordedScenario, table: HeadlineTable | None,
                    measured_layers: Sequence[str], rounds: int = 0) -> str:
    """The test parameters as a short definition list (``<aside id="parameters">``)."""
    rows: list[tuple[str, str]] = []
    if table is not None and table.config:
        rows.append(("measured at", describe_config(table.config)))
    for kind, given in scenario.workloads:
        rows.append((kind, workload_line(kind, given)))
    reps = repetitions_line(scenario, table, rounds)
    if reps:
        rows.append(("repetitions", reps))
    if table is not None:
        rows.append(("baseline", f"{table.baseline} (native)"))
    skipped = skipped_layers(scenario, measured_layers)
    if skipped:
        rows.append(("not measured", ", ".join(skipped) + " (see warnings)"))
    items = "".join(f"<dt>{_esc(k)}</dt><dd>{_esc(v)}</dd>" for k, v in rows)
    return (f'<aside id="parameters"><h3>Test parameters</h3><dl>{items}</dl></aside>'
            if rows else "")


def environment_summary(env: Mapping[str, object]) -> list[tuple[str, str]]:
    """The environment in a few (name, value) lines: machine, kernel, vnetbench's version
    and commit, the tools that moved packets."""
    if not env:
        return []
    rows: list[tuple[str, str]] = []
    machine = ", ".join(str(p) for p in (
        env.get("cpu_model"),
        counted(env["cores"], "core") if env.get("cores") else None,
        f"{env['memory_gib']} GiB" if env.get("memory_gib") else None) if p)
    if machine:
        rows.append(("machine", machine))
    system = ", ".join(str(p) for p in (env.get("os"), f"kernel {env['kernel']}"
                                        if env.get("kernel") else None,
                                        f"cgroup v{env['cgroup_version']}"
                                        if env.get("cgroup_version") else None) if p)
    if system:
        rows.append(("system", system))
    given_git = env.get("git")
    git = given_git if isinstance(given_git, Mapping) else {}
    version = str(env.get("vnetbench", "")) + (
        f" (commit {str(git.get('commit', ''))[:12]}{', dirty' if git.get('dirty') else ''})"
        if git and git.get("commit") else "")
    if version.strip():
        rows.append(("vnetbench", version.strip()))
    load = env.get("loadavg")
    if isinstance(load, list | tuple) and load:
        rows.append(("load at start", " ".join(str(v) for v in load)))
    tools = env.get("tools")
    if isinstance(tools, Mapping) and tools:
        rows.append(("tools", "; ".join(str(v).split(" - ")[0] for v in tools.values())))
    return rows


def _flatten(data: Mapping[str, object], prefix: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out += _flatten(value, name + ".")
        elif isinstance(value, list | tuple) and value and isinstance(value[0], Mapping):
            out.append((name, json.dumps(value, default=str)))
        elif isinstance(value, list | tuple):
            out.append((name, ", ".join(str(v) for v in value)))
        else:
            out.append((name, str(value)))
    return out


def kv_table(rows: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"<tr><td>{_esc(k)}</td><td>{_esc(v)}</td></tr>" for k, v in rows)
    return f'<table class="kv">{body}</table>'


def environment_html(env: Mapping[str, object], scenario: RecordedScenario,
                     controls: str) -> str:
    """The environment section: a summary, then the whole record (but the run's legend, a
    reader's key to its labels) and the scenario behind disclosures."""
    summary = environment_summary(env)
    full = _flatten({k: v for k, v in env.items() if k != LEGEND_KEY}) if env else []
    scen = _flatten(scenario.raw)
    return ('<section id="environment"><h2>Environment</h2>'
            + (kv_table(summary) if summary else "<p>Not recorded.</p>")
            + (f'<p class="lead">{_esc(controls)}</p>' if controls else "")
            + (f"<details><summary>The full environment record ({len(full)} entries of "
               f"run.json)</summary>{kv_table(full)}</details>" if full else "")
            + f"<details><summary>The scenario as run ({len(scen)} entries)</summary>"
            + kv_table(scen) + "</details></section>")
