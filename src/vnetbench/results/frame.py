"""Runs as a pandas DataFrame: one row per sample, every label a typed column.

``vnetbench.load(run_dir, ...)`` and ``vnetbench export --format parquet`` use it. Columns:
``run_id``, ``metric``, ``value`` (float), ``unit``, ``t_ns`` (int), then one column per label
any sample carries: the common ones first (``layer``, ``nodes``, ``hosts``, ``workload``,
``repetition``, ``trial``), the others (sweep axes such as ``link.delay`` or ``rr.request``,
places such as ``cpu`` or ``device``, the A/A group ``aa``) in name order. A sample without a
label has a missing value (``<NA>``) there.

Labels are stored as text; here each column gets the type its values share:

- whole numbers -> ``Int64`` (nullable integers): ``nodes``, ``repetition``, ``cpu``;
- other numbers -> ``float64``;
- ``True``/``False`` -> ``boolean``;
- a sweep axis written with units (``link.delay: [0ms, 10ms]``, ``rr: {request: [100, 1k]}``
  labelled ``rr.request``) ->
  ``float64`` in the base unit (seconds, bytes, bits per second, fraction), the unit recorded
  in ``frame.attrs["units"]`` (``{"link.delay": "s"}``), when every value parses as the
  unit of the scenario key of that name (the caller gives those: ``unit_kinds``);
- anything else -> ``string``.

``frame.attrs["runs"]`` maps each run id to its directory. A label named like a fixed column
(``value``, ``metric`` ...) is renamed ``label.<name>``.

``vnetbench.load_histograms(run_dir, ...)`` is the same for the latency histograms the runs
kept (``histograms.jsonl``: the probe's HDR buckets per trial or interleaved slice): one row
per bucket (``load_histogram_frame``), labels typed alike, so a percentile of merged trials
is a ``groupby`` and a cumulative sum away.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from vnetbench.results.model import COMMON_LABELS
from vnetbench.results.store import RunData, load_run

if TYPE_CHECKING:
    import pandas as pd
    from pandas.api.extensions import ExtensionArray

FIXED_COLUMNS = ("run_id", "metric", "value", "unit", "t_ns")
BASE_UNITS = {"duration": "s", "size": "B", "rate": "bit/s", "fraction": "fraction"}
"""The base unit a unit kind's values are given in."""

_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_BOOLS = {"True": True, "False": False, "true": True, "false": False}

RunSource = str | os.PathLike[str] | RunData


def _typed(values: Sequence[str | None], kind: str | None
           ) -> tuple[ExtensionArray, str | None]:
    """(pandas array of the column, unit or None) for one label column's text values;
    ``kind``: the unit kind of the scenario key the label names, if it has one."""
    import pandas as pd

    present = [v for v in values if v is not None]
    if present and all(_INT.fullmatch(v) for v in present):
        return pd.array([None if v is None else int(v) for v in values], dtype="Int64"), None
    if present and all(_FLOAT.fullmatch(v) for v in present):
        return pd.array([float("nan") if v is None else float(v) for v in values],
                        dtype="float64"), None
    if present and all(v in _BOOLS for v in present):
        return pd.array([None if v is None else _BOOLS[v] for v in values],
                        dtype="boolean"), None
    if present and kind:
        parsed = _parse_all(kind, present)
        if parsed is not None:
            lookup = dict(zip(present, parsed, strict=True))
            return pd.array([float("nan") if v is None else lookup[v] for v in values],
                            dtype="float64"), BASE_UNITS[kind]
    return pd.array(values, dtype="string"), None


def _parse_all(kind: str, texts: Sequence[str]) -> list[float] | None:
    from vnetbench.units import parse_duration, parse_fraction, parse_rate, parse_size

    parser = {"duration": parse_duration, "size": parse_size, "rate": parse_rate,
              "fraction": parse_fraction}[kind]
    try:
        return [float(parser(text)) for text in texts]
    except ValueError:
        return None


def _runs(sources: Iterable[RunSource]) -> list[RunData]:
    return [s if isinstance(s, RunData) else load_run(s) for s in sources]


TodaysKinds = Callable[[], Mapping[str, str]]
"""Label name -> unit kind as today's scenario schema has them
(``scenario.schema.label_unit_kinds``), asked only for runs that recorded no legend."""


def _unit_kinds(runs: Sequence[RunData], today: TodaysKinds) -> dict[str, str]:
    """Label name -> unit kind of the runs: each run's own legend (what its labels meant
    when it ran), ``today``'s for a run recorded without one."""
    kinds: dict[str, str] = {}
    todays: Mapping[str, str] | None = None
    for run in runs:
        legend = run.meta.legend
        if not legend.recorded and todays is None:
            todays = today()
        kinds.update(legend.label_kinds if legend.recorded else todays or {})
    return kinds


def load_frame(sources: Iterable[RunSource], unit_kinds: TodaysKinds) -> pd.DataFrame:
    """Every sample of the runs as a DataFrame (see the module docstring); a label's unit
    kind from its run's legend (``unit_kinds``: today's, for runs recorded without one)."""
    import pandas as pd

    runs = _runs(sources)
    seen: dict[str, str] = {}
    for run in runs:
        if run.run_id in seen:
            from vnetbench.errors import VnetbenchError

            raise VnetbenchError(f"run {run.run_id} is given twice ({seen[run.run_id]} and "
                                 f"{run.path}); pass each run directory once")
        seen[run.run_id] = str(run.path)
    samples = [(run.run_id, s) for run in runs for s in run.samples]
    columns: dict[str, ExtensionArray] = {
        "run_id": pd.array([r for r, _ in samples], dtype="string"),
        "metric": pd.array([s.metric for _, s in samples], dtype="string"),
        "value": pd.array([s.value for _, s in samples], dtype="float64"),
        "unit": pd.array([s.unit for _, s in samples], dtype="string"),
        "t_ns": pd.array([s.t_ns for _, s in samples], dtype="int64"),
    }
    label_units = _add_label_columns(columns, [s.labels for _, s in samples], FIXED_COLUMNS,
                                     _unit_kinds(runs, unit_kinds))
    frame = pd.DataFrame(columns)
    frame.attrs["runs"] = seen
    frame.attrs["units"] = label_units
    return frame


def _add_label_columns(columns: dict[str, ExtensionArray], labels: Sequence[dict[str, str]],
                       fixed: Sequence[str], unit_kinds: Mapping[str, str]) -> dict[str, str]:
    """One typed column per label name into ``columns`` (a name among ``fixed`` becomes
    ``label.<name>``), common labels first; the units of the unit axes."""
    names = {name for row in labels for name in row}
    ordered = [n for n in COMMON_LABELS if n in names] + sorted(names - set(COMMON_LABELS))
    label_units: dict[str, str] = {}
    for name in ordered:
        column, unit = _typed([row.get(name) for row in labels], unit_kinds.get(name))
        key = f"label.{name}" if name in fixed else name
        columns[key] = column
        if unit:
            label_units[key] = unit
    return label_units


HISTOGRAM_COLUMNS = ("run_id", "metric", "histogram", "value", "count", "unit")


def load_histogram_frame(sources: Iterable[RunSource], unit_kinds: TodaysKinds
                         ) -> pd.DataFrame:
    """The latency histograms of the runs as a DataFrame, one row per bucket: ``run_id``,
    ``metric`` (``rtt_us``...), ``histogram`` (the histogram's number within its run: the
    rows of one histogram share it), ``value`` (the bucket's value, float), ``count``
    (values recorded in it, int64), ``unit`` (``us``), then the histogram's labels as typed
    columns, as in ``load_frame``. Runs without histograms add no row."""
    import pandas as pd

    from vnetbench.results.store import load_histograms

    runs = _runs(sources)
    rows: list[tuple[str, str, int, float, int, str]] = []
    labels: list[dict[str, str]] = []
    seen: dict[str, str] = {}
    for run in runs:
        seen[run.run_id] = str(run.path)
        for k, record in enumerate(load_histograms(run.path)):
            for value, count in record.hist.buckets:
                rows.append((run.run_id, record.metric, k, value, count, record.unit))
                labels.append(record.labels)
    columns: dict[str, ExtensionArray] = {
        "run_id": pd.array([r[0] for r in rows], dtype="string"),
        "metric": pd.array([r[1] for r in rows], dtype="string"),
        "histogram": pd.array([r[2] for r in rows], dtype="int64"),
        "value": pd.array([r[3] for r in rows], dtype="float64"),
        "count": pd.array([r[4] for r in rows], dtype="int64"),
        "unit": pd.array([r[5] for r in rows], dtype="string"),
    }
    label_units = _add_label_columns(columns, labels, HISTOGRAM_COLUMNS,
                                     _unit_kinds(runs, unit_kinds))
    frame = pd.DataFrame(columns)
    frame.attrs["runs"] = seen
    frame.attrs["units"] = label_units
    return frame
