"""A recorded run's scenario and legend, typed: what ``run.json`` says, read back without
today's scenario model or layer catalogue.

A run directory outlives the code that wrote it: a key may since have been renamed, a layer
removed, an option's unit changed. So the report, the explanations and the study judge never
read ``run.json``'s ``scenario`` as a dict, and never ask today's catalogue what a recorded
layer was: they read a ``RecordedScenario`` (each field of the kind they use, with the value
a run of its format had when the scenario did not say) and the run's ``Legend`` (what its
labels and layers meant when it ran: each label's unit kind, each layer's namespace twin).

    RecordedScenario.from_dict(meta.scenario)   the scenario as recorded (``raw``: verbatim,
                                                for its hash and for a study's pack check)
    Legend.from_environment(meta.environment)   recorded since format 2; for older runs it
                                                says so (``recorded`` False) and the reader
                                                falls back to today's definitions

Pure: nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

LEGEND_KEY = "legend"
"""The environment key of a run's legend (``run.json``'s ``environment.legend``)."""

REPETITION_KEYS = ("design", "rounds", "repeat", "until_cv", "max_repeat", "budget")
"""Scenario keys the report shows as they were written (``RecordedScenario.shown``)."""

Options = Mapping[str, object]
"""A workload's options as the scenario wrote them (values of any JSON kind)."""


def _mapping(value: object) -> Options | None:
    return value if isinstance(value, Mapping) else None


def _workloads(value: object) -> tuple[tuple[str, Options], ...]:
    """(kind, options) of the workload entries in order, written ``{rr: {duration: 5s}}``
    or ``{kind: rr, duration: 5s}`` (``kind`` then among the options); others skipped."""
    if not isinstance(value, list):
        return ()
    out: list[tuple[str, Options]] = []
    for entry in value:
        if not isinstance(entry, Mapping):
            continue
        if "kind" in entry:
            kind, options = str(entry["kind"]), entry
        elif len(entry) == 1:
            name, given = next(iter(entry.items()))
            kind, options = str(name), given if isinstance(given, Mapping) else {}
        else:
            continue
        out.append((kind, options))
    return tuple(out)


@dataclass(frozen=True)
class RecordedScenario:
    """The scenario a run recorded (a scenario file's content: keys may hold sweeps)."""

    raw: Mapping[str, object]
    """Verbatim, as ``run.json`` holds it."""
    name: str = ""
    file: str = ""
    """The scenario file the run read (empty when it did not say)."""
    layers: tuple[str, ...] = ()
    """The layer names it lists by name (entries with inline options left out)."""
    workloads: tuple[tuple[str, Options], ...] = ()
    shown: Mapping[str, str] = field(default_factory=dict)
    """``REPETITION_KEYS`` present, each as written (``until_cv: 5%``)."""
    warmup: int = 0
    builds: int = 1
    """``pairing.builds``: how many times each session's labs were built."""
    busy: bool = False
    pairing: Options | None = None
    link: Options | None = None
    cpuset: str | None = None
    """``resources.cpuset`` when one fixed set (not a sweep)."""
    duration: object = None
    """A top-level ``duration`` (older scenarios), as written."""
    thresholds: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> RecordedScenario:
        """Read ``run.json``'s ``scenario``; a field of the wrong kind reads as absent."""
        layers = data.get("layers")
        named = tuple(str(n) for n in layers if isinstance(n, str | int)) \
            if isinstance(layers, list) else ()
        pairing = _mapping(data.get("pairing"))
        builds = pairing.get("builds", 1) if pairing is not None else 1
        resources = _mapping(data.get("resources"))
        cpuset = resources.get("cpuset") if resources is not None else None
        given = data.get("warmup", 0) or 0
        try:  # JSON's other kinds (lists, objects) are not counts either
            warmup = int(given) if isinstance(given, str | int | float) else 0
        except (TypeError, ValueError):
            warmup = 0
        return cls(
            raw=data, name=str(data.get("name", "") or ""),
            file=str(data.get("file", "") or ""), layers=named,
            workloads=_workloads(data.get("workloads")),
            shown={k: str(data[k]) for k in REPETITION_KEYS if k in data},
            warmup=warmup,
            builds=builds if isinstance(builds, int) and not isinstance(builds, bool)
            and builds >= 1 else 1,
            busy=bool(data.get("busy")), pairing=pairing, link=_mapping(data.get("link")),
            cpuset=str(cpuset) if isinstance(cpuset, str | int) and not isinstance(
                cpuset, bool) else None,
            duration=data.get("duration"),
            thresholds=_mapping(data.get("thresholds")) or {})

    def without_file(self) -> dict[str, object]:
        """The scenario's content without the ``file`` key the run added (what a study pack
        or ``expand`` reads)."""
        return {k: v for k, v in self.raw.items() if k != "file"}


@dataclass(frozen=True)
class Legend:
    """What a run's labels and layers meant when it ran (``environment.legend``)."""

    recorded: bool = False
    """Whether the run recorded its legend (runs before format 2 did not)."""
    label_kinds: Mapping[str, str] = field(default_factory=dict)
    """Label name -> unit kind (``scenario.schema.label_unit_kinds`` at the time)."""
    twins: Mapping[str, str] = field(default_factory=dict)
    """Layer -> the namespace layer it is measured beside (Docker modes, VM layers)."""
    between_hosts: Mapping[str, str] = field(default_factory=dict)
    """Layer -> the part of its path that joins emulated hosts (``the WireGuard tunnel``),
    for the run's layers that have one."""

    @classmethod
    def from_environment(cls, environment: Mapping[str, object]) -> Legend:
        given = environment.get(LEGEND_KEY)
        if not isinstance(given, Mapping):
            return cls()
        kinds, twins = given.get("label_kinds"), given.get("twins")
        between = given.get("between_hosts")
        return cls(True,
                   {str(k): str(v) for k, v in kinds.items()} if isinstance(kinds, Mapping)
                   else {},
                   {str(k): str(v) for k, v in twins.items() if isinstance(v, str)}
                   if isinstance(twins, Mapping) else {},
                   {str(k): str(v) for k, v in between.items()}
                   if isinstance(between, Mapping) else {})

    def to_dict(self) -> dict[str, dict[str, str]]:
        return {"label_kinds": dict(self.label_kinds), "twins": dict(self.twins),
                "between_hosts": dict(self.between_hosts)}
