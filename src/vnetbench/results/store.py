"""The results store: one directory per run, written as the run goes and read back for reports.

Layout of a run directory::

    DIR/run.json        metadata: format_version, run_id, scenario (+ its sha256), environment
                        fingerprint, status (running|complete|incomplete|failed), failing_stage,
                        warnings, started/finished timestamps (rewritten atomically)
    DIR/samples.jsonl   one Sample per line, appended, flushed and fsynced after every trial
    DIR/histograms.jsonl  latency histograms (one per trial, workload and distribution), so
                        percentiles can be taken of the pooled distribution
    DIR/raw/            raw tool output, one file per trial and tool

``load_run`` reads a directory back. A run killed mid-write leaves a truncated last line in
``samples.jsonl`` and/or status ``running`` in ``run.json``: both are tolerated and the run
is then reported as ``incomplete``. Each file is read only if it is a regular file (a link to
one is followed): a FIFO or a link to a device is a damaged run, said in one line.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from vnetbench.errors import VnetbenchError
from vnetbench.results.histogram import HistogramRecord
from vnetbench.results.model import Sample
from vnetbench.results.recorded import Legend, RecordedScenario
from vnetbench.results.warning_model import EvidenceWarning
from vnetbench.userpaths import input_file

FORMAT_VERSION = 2
"""1: the first format; 2 (2026-12-07): ``environment.legend`` (what the run's labels and
layers meant when it ran, ``results.recorded.Legend``), which readers use instead of today's
catalogue; a run of format 1 is read with today's."""
RUN_FILE = "run.json"
SAMPLES_FILE = "samples.jsonl"
HISTOGRAMS_FILE = "histograms.jsonl"
RAW_DIR = "raw"


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETE = "complete"
    INCOMPLETE = "incomplete"
    FAILED = "failed"


T = TypeVar("T")


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def scenario_hash(scenario: Mapping[str, object]) -> str:
    """sha256 of the scenario's canonical JSON (sorted keys, no whitespace)."""
    canonical = json.dumps(scenario, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class RunMeta:
    """The content of ``run.json``."""

    run_id: str
    scenario: dict[str, object]
    scenario_sha256: str
    environment: dict[str, Any]
    status: RunStatus = RunStatus.RUNNING
    failing_stage: str | None = None
    warnings: list[dict[str, object]] = field(default_factory=list)
    started: str = field(default_factory=_now)
    finished: str | None = None
    format_version: int = FORMAT_VERSION
    thresholds: dict[str, object] | None = None
    """The scenario's ``thresholds`` judged after the run (``report.thresholds``): passed,
    the lines printed, every layer ratio judged; None when the scenario set none."""

    @property
    def recorded(self) -> RecordedScenario:
        """The scenario as recorded, typed (``results.recorded``): what readers use."""
        return RecordedScenario.from_dict(self.scenario)

    @property
    def legend(self) -> Legend:
        """What the run's labels and layers meant when it ran (``results.recorded``)."""
        return Legend.from_environment(self.environment)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "format_version": self.format_version, "run_id": self.run_id,
            "scenario": self.scenario, "scenario_sha256": self.scenario_sha256,
            "environment": self.environment, "status": self.status.value,
            "failing_stage": self.failing_stage, "warnings": self.warnings,
            "started": self.started, "finished": self.finished,
        }
        if self.thresholds is not None:
            out["thresholds"] = self.thresholds
        return out

    @staticmethod
    def from_dict(data: object, source: str = RUN_FILE) -> RunMeta:
        """Read ``run.json``'s content back; VnetbenchError naming ``source`` and the field if
        it is not an object or a field has the wrong type (missing fields take defaults)."""
        if not isinstance(data, dict):
            raise VnetbenchError(f"{source} is damaged: it holds {_json_kind(data)}, "
                                 "not a JSON object")
        version = _field(data, "format_version", (int,), 0, "an integer", source)
        if version > FORMAT_VERSION:
            raise VnetbenchError(
                f"{source} has format_version {version}, newer than this vnetbench reads "
                f"({FORMAT_VERSION}); upgrade vnetbench")
        status_text = _field(data, "status", (str,), "running", "a string", source)
        try:
            status = RunStatus(status_text)
        except ValueError as exc:
            raise VnetbenchError(
                f"{source} has unknown status {status_text!r}; expected one of "
                + ", ".join(s.value for s in RunStatus)) from exc
        warnings = _field(data, "warnings", (list,), [], "a list", source)
        for number, entry in enumerate(warnings):
            if isinstance(entry, str):
                continue
            if not isinstance(entry, dict):
                raise VnetbenchError(
                    f"{source} is damaged: warnings[{number}] should be an object (kind, "
                    f"message, advice, labels) or a string, found {_json_kind(entry)}")
            _field(entry, "labels", (dict,), {}, "an object", f"{source} warnings[{number}]")
        return RunMeta(
            run_id=_field(data, "run_id", (str,), "", "a string", source),
            scenario=_field(data, "scenario", (dict,), {}, "an object", source),
            scenario_sha256=_field(data, "scenario_sha256", (str,), "", "a string", source),
            environment=_field(data, "environment", (dict,), {}, "an object", source),
            status=status,
            failing_stage=_field(data, "failing_stage", (str, type(None)), None,
                                 "a string or null", source),
            warnings=[w if isinstance(w, dict) else EvidenceWarning.from_dict(w).to_dict()
                      for w in warnings],
            started=_field(data, "started", (str,), "", "a string", source),
            finished=_field(data, "finished", (str, type(None)), None, "a string or null",
                            source),
            format_version=version,
            thresholds=_field(data, "thresholds", (dict, type(None)), None,
                              "an object or null", source),
        )


def _json_kind(value: object) -> str:
    """How a JSON value reads in an error message: ``a number (5)``, ``a list``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({shown!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _field(data: Mapping[str, object], name: str, types: tuple[type[T], ...], default: T,
           expected: str, source: str) -> T:
    """``data[name]`` (``default`` when absent) if it is one of ``types`` (a bool is not a
    number), else VnetbenchError naming the file and the field."""
    value = data.get(name, default)
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise VnetbenchError(f"{source} is damaged: {name!r} should be {expected}, "
                             f"found {_json_kind(value)}")
    return value


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


_SAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


class RunWriter:
    """Writes one run directory as the run proceeds. Use :meth:`create`, then append.

    As a context manager it closes the run ``complete`` on normal exit and ``failed`` when
    an exception escapes (the exception still propagates).
    """

    def __init__(self, run_dir: Path, meta: RunMeta) -> None:
        self.run_dir = run_dir
        self.meta = meta
        self._samples = open(run_dir / SAMPLES_FILE, "a", encoding="utf-8")  # noqa: SIM115
        self.n_samples = 0
        self.stage: str | None = None

    @classmethod
    def create(cls, run_dir: str | os.PathLike[str], scenario: Mapping[str, object],
               environment: Mapping[str, object] | None = None, *,
               run_id: str | None = None) -> RunWriter:
        """Create ``run_dir`` (it may exist but must not hold a run yet) and its run.json."""
        path = Path(run_dir)
        if (path / RUN_FILE).exists():
            raise VnetbenchError(f"{path} already holds a run ({RUN_FILE} exists); "
                                 "choose a new output directory")
        path.mkdir(parents=True, exist_ok=True)
        (path / RAW_DIR).mkdir(exist_ok=True)
        scenario_dict = json.loads(json.dumps(dict(scenario), default=str))
        meta = RunMeta(
            run_id=run_id or f"{_dt.datetime.now(_dt.UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}",
            scenario=scenario_dict, scenario_sha256=scenario_hash(scenario_dict),
            environment=json.loads(json.dumps(dict(environment or {}), default=str)),
        )
        writer = cls(path, meta)
        writer._save()
        return writer

    @property
    def raw_dir(self) -> Path:
        return self.run_dir / RAW_DIR

    def _save(self) -> None:
        _write_atomic(self.run_dir / RUN_FILE, json.dumps(self.meta.to_dict(), indent=2) + "\n")

    def append_samples(self, samples: Iterable[Sample]) -> int:
        """Append samples (one trial's worth) and make them durable; returns how many."""
        if self._samples.closed:
            raise VnetbenchError(f"run {self.meta.run_id} is closed; cannot append samples")
        lines = [s.to_json() + "\n" for s in samples]
        self._samples.write("".join(lines))
        self._samples.flush()
        os.fsync(self._samples.fileno())
        self.n_samples += len(lines)
        return len(lines)

    def append_histograms(self, records: Iterable[HistogramRecord]) -> int:
        """Append latency histograms (one trial's worth), flushed; returns how many."""
        lines = [r.to_json() + "\n" for r in records]
        if not lines:
            return 0
        with open(self.run_dir / HISTOGRAMS_FILE, "a", encoding="utf-8") as fh:
            fh.write("".join(lines))
            fh.flush()
            os.fsync(fh.fileno())
        return len(lines)

    def set_environment(self, key: str, value: object, *, save: bool = True) -> None:
        """Record one more fact of the environment (e.g. the platform controls); run.json is
        rewritten only when the fact changed, and with ``save=False`` only by the next write
        (a warning, ``close``), for a fact recorded just before one."""
        fact = json.loads(json.dumps(value, default=str))
        if key in self.meta.environment and self.meta.environment[key] == fact:
            return
        self.meta.environment[key] = fact
        if save:
            self._save()

    def write_raw(self, name: str, content: str | bytes) -> Path:
        """Store raw tool output under ``raw/`` (the name is sanitised); returns its path."""
        safe = _SAFE.sub("_", name).strip("._") or "output"
        path = self.raw_dir / safe
        data = content.encode() if isinstance(content, str) else content
        with open(path, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        return path

    def add_lab_facts(self, layer: str, facts: Mapping[str, object]) -> None:
        """Record one layer's lab facts (sysctls, MTUs, offloads) once, in the environment."""
        layers = self.meta.environment.setdefault("layers", {})
        if layer not in layers:
            layers[layer] = json.loads(json.dumps(dict(facts), default=str))
            self._save()

    def set_stage(self, stage: str) -> None:
        """Remember the current stage (named as failing_stage if the run then fails)."""
        self.stage = stage

    def update_status(self, status: RunStatus | str, failing_stage: str | None = None) -> None:
        self.meta.status = RunStatus(status)
        if failing_stage is not None:
            self.meta.failing_stage = failing_stage
        self._save()

    def add_warning(self, warning: EvidenceWarning) -> None:
        """Record a warning in run.json (immediately durable)."""
        self.meta.warnings.append(warning.to_dict())
        self._save()

    def close(self, status: RunStatus | str = RunStatus.COMPLETE,
              failing_stage: str | None = None) -> None:
        """Finish the run with ``status``; a failed run names its failing stage."""
        if not self._samples.closed:
            self._samples.close()
        self.meta.status = RunStatus(status)
        if self.meta.status is RunStatus.FAILED:
            self.meta.failing_stage = failing_stage or self.meta.failing_stage or self.stage
        elif failing_stage is not None:
            self.meta.failing_stage = failing_stage
        self.meta.finished = _now()
        self._save()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._samples.closed:
            return
        if exc_type is None:
            self.close(RunStatus.COMPLETE)
        elif issubclass(exc_type, KeyboardInterrupt):
            self.close(RunStatus.INCOMPLETE)
        else:
            self.close(RunStatus.FAILED)


@dataclass
class RunData:
    """A run read back from disk."""

    path: Path
    meta: RunMeta
    samples: list[Sample]
    truncated: bool = False
    histograms: list[HistogramRecord] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.meta.run_id

    @property
    def status(self) -> RunStatus:
        """The effective status: a run that stopped while running is ``incomplete``."""
        if self.meta.status is RunStatus.RUNNING or (
                self.truncated and self.meta.status is RunStatus.COMPLETE):
            return RunStatus.INCOMPLETE
        return self.meta.status

    @property
    def warnings(self) -> list[EvidenceWarning]:
        return [EvidenceWarning.from_dict(w) for w in self.meta.warnings]


def load_run(run_dir: str | os.PathLike[str]) -> RunData:
    """Read a run directory. Tolerates a truncated last sample line (the run is then incomplete).

    Raises VnetbenchError, naming the file and what is wrong, if run.json is missing,
    unreadable, not UTF-8, not a JSON object or has a field of the wrong type, or if a sample
    line other than the last is damaged (a line that is valid JSON but not a sample is
    damage wherever it is: a killed writer leaves a cut line, not a wrong one).
    """
    path = Path(run_dir)
    meta_path = path / RUN_FILE
    try:
        found = input_file(meta_path, RUN_FILE)
    except VnetbenchError as exc:  # a directory, a FIFO, a device: said so
        raise VnetbenchError(f"{path} is not a vnetbench run directory ({exc})") from None
    if found is None:
        raise VnetbenchError(f"{path} is not a vnetbench run directory (no {RUN_FILE})")
    try:
        text = meta_path.read_bytes().decode("utf-8")
        meta_data = json.loads(text)
    except OSError as exc:
        raise VnetbenchError(f"cannot read {meta_path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise VnetbenchError(f"{meta_path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} "
                             f"at offset {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise VnetbenchError(f"{meta_path} is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise VnetbenchError(f"{meta_path} is not valid JSON: nested too deeply") from exc
    meta = RunMeta.from_dict(meta_data, source=str(meta_path))
    samples, truncated = _load_samples(path / SAMPLES_FILE)
    return RunData(path=path, meta=meta, samples=samples, truncated=truncated,
                   histograms=load_histograms(path))


def _load_samples(samples_path: Path) -> tuple[list[Sample], bool]:
    """The samples of ``samples.jsonl`` and whether its last line was cut (a killed run);
    VnetbenchError when it is there but not a regular file (a FIFO, a link to a device)."""
    if input_file(samples_path, "samples file") is None:
        return [], False
    try:
        raw = samples_path.read_bytes()
    except OSError as exc:
        raise VnetbenchError(f"cannot read {samples_path}: {exc.strerror or exc}") from exc
    lines = raw.split(b"\n")
    # a complete file ends with "\n" so the last element is empty
    last_index = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    samples: list[Sample] = []
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            data = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            if number == last_index:
                return samples, True
            what = ("not UTF-8 text" if isinstance(exc, UnicodeDecodeError)
                    else "nested too deeply" if isinstance(exc, RecursionError) else str(exc))
            raise VnetbenchError(
                f"{samples_path}:{number + 1}: corrupt sample line ({what}); only the last "
                "line of a killed run may be incomplete") from exc
        problem = _sample_problem(data)
        if problem:
            raise VnetbenchError(f"{samples_path}:{number + 1}: damaged sample line: {problem}")
        samples.append(Sample.from_dict(data))
    return samples, False


_LABEL_TYPES = (str, int, float, bool)


def _sample_problem(data: object) -> str:
    """What makes ``data`` (one parsed line) not a sample; "" if it is one."""
    if not isinstance(data, dict):
        return f"{_json_kind(data)}, not a JSON object"
    for name, types, expected, required in (
            ("metric", (str,), "a string", True), ("unit", (str,), "a string", True),
            ("value", (int, float), "a number", True), ("labels", (dict,), "an object", False),
            ("t_ns", (int,), "an integer", False)):
        if name not in data:
            if required:
                return f"no {name!r}"
            continue
        value = data[name]
        if not isinstance(value, types) or isinstance(value, bool):
            return f"{name!r} should be {expected}, found {_json_kind(value)}"
    if not data["metric"]:
        return "'metric' is empty"
    for key, value in data.get("labels", {}).items():
        if not isinstance(value, _LABEL_TYPES):
            return f"label {key!r} should be a string, found {_json_kind(value)}"
    return ""


def record_thresholds(run_dir: str | os.PathLike[str], verdict: Mapping[str, object]) -> None:
    """Write the judged ``thresholds`` of a finished run into its run.json (atomically)."""
    path = Path(run_dir) / RUN_FILE
    meta = RunMeta.from_dict(json.loads(path.read_text(encoding="utf-8")), str(path))
    meta.thresholds = json.loads(json.dumps(dict(verdict), allow_nan=False))
    _write_atomic(path, json.dumps(meta.to_dict(), indent=2) + "\n")


def load_histograms(run_dir: str | os.PathLike[str]) -> list[HistogramRecord]:
    """The run's latency histograms (none for runs made before they were kept). A truncated
    or damaged line (a killed run) is skipped: histograms refine percentiles, samples rule."""
    path = Path(run_dir) / HISTOGRAMS_FILE
    if input_file(path, "histograms file") is None:
        return []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out: list[HistogramRecord] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        with contextlib.suppress(json.JSONDecodeError, KeyError, TypeError, ValueError,
                                 AttributeError, RecursionError, VnetbenchError):
            out.append(HistogramRecord.from_dict(json.loads(line)))
    return out
