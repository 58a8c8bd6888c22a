"""An SQLite index over one or more run directories, and export to csv, json or parquet.

csv and parquet are the DataFrame ``vnetbench.load`` returns (``results.frame``): one row per
sample, every label its own column, sweep axes included (typed in parquet; in csv as text a
reader types again, numbers as numbers, unit axes in their base unit, a missing label
empty); json holds the common labels as fields and every label in ``labels`` (an object).

The index is rebuilt from the run directories (they stay the source of truth). Tables::

    runs(run_id, path, status, truncated, scenario_sha256, started, finished,
         format_version, n_samples, meta_json)
    samples(id, run_id, metric, value, unit, t_ns, labels_json,
            layer, nodes, hosts, workload, repetition, trial)

The common labels are flattened into columns (nodes, hosts, repetition and trial have
integer affinity, so numeric label values compare and sort as numbers); every label is kept
in ``labels_json`` and can be reached with SQLite's ``json_extract``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sqlite3
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vnetbench.errors import VnetbenchError
from vnetbench.results.model import COMMON_LABELS
from vnetbench.results.store import RunData, load_run
from vnetbench.userpaths import WRITE_HINT, lookup, output_file, replace_file

if TYPE_CHECKING:
    import pandas as pd

EXPORT_FORMATS = ("csv", "json", "parquet")

_SCHEMA = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, path TEXT NOT NULL, status TEXT NOT NULL, truncated INTEGER,
    scenario_sha256 TEXT, started TEXT, finished TEXT, format_version INTEGER,
    n_samples INTEGER, meta_json TEXT
);
CREATE TABLE samples (
    id INTEGER PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(run_id),
    metric TEXT NOT NULL, value REAL, unit TEXT, t_ns INTEGER, labels_json TEXT,
    layer TEXT, nodes INTEGER, hosts INTEGER, workload TEXT, repetition INTEGER, trial INTEGER
);
CREATE INDEX samples_metric ON samples(metric, layer, nodes);
CREATE INDEX samples_run ON samples(run_id);
"""


class ResultIndex:
    """Queryable index of runs and samples (an in-memory or on-disk SQLite database)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.conn.row_factory = sqlite3.Row

    @classmethod
    def build(cls, run_dirs: Iterable[str | os.PathLike[str] | RunData],
              db_path: str | os.PathLike[str] = ":memory:") -> ResultIndex:
        """(Re)build the index from run directories; an existing database file is replaced
        (a regular file only: ``userpaths.output_file``, else VnetbenchError)."""
        if str(db_path) != ":memory:":
            db = output_file(db_path, "index database")
            with contextlib.suppress(FileNotFoundError):
                db.unlink()
        conn = sqlite3.connect(str(db_path))
        conn.executescript(_SCHEMA)
        index = cls(conn)
        for run in run_dirs:
            index.add_run(run if isinstance(run, RunData) else load_run(run))
        conn.commit()
        return index

    def add_run(self, run: RunData) -> None:
        if self.conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run.run_id,)).fetchone():
            raise VnetbenchError(f"run {run.run_id} is indexed twice ({run.path}); "
                                 "pass each run directory once")
        self.conn.execute(
            "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?)",
            (run.run_id, str(run.path), run.status.value, int(run.truncated),
             run.meta.scenario_sha256, run.meta.started, run.meta.finished,
             run.meta.format_version, len(run.samples), json.dumps(run.meta.to_dict())))
        self.conn.executemany(
            "INSERT INTO samples (run_id, metric, value, unit, t_ns, labels_json, layer, nodes, "
            "hosts, workload, repetition, trial) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [(run.run_id, s.metric, s.value, s.unit, s.t_ns, json.dumps(s.labels, sort_keys=True),
              *(s.labels.get(name) for name in COMMON_LABELS)) for s in run.samples])

    def query(self, sql: str, params: Sequence[object] = ()) -> list[dict[str, Any]]:
        """Run any read-only SQL and return rows as dicts."""
        return [dict(row) for row in self.conn.execute(sql, tuple(params)).fetchall()]

    def runs(self) -> list[dict[str, Any]]:
        return self.query("SELECT run_id, path, status, truncated, scenario_sha256, started, "
                          "finished, n_samples FROM runs ORDER BY started, run_id")

    def metrics(self) -> list[str]:
        return [r["metric"] for r in self.query("SELECT DISTINCT metric FROM samples ORDER BY 1")]

    def layers(self) -> list[str]:
        return [r["layer"] for r in self.query(
            "SELECT DISTINCT layer FROM samples WHERE layer IS NOT NULL ORDER BY 1")]

    def samples(self, *, metric: str | None = None, run_id: str | None = None,
                **labels: str | int) -> list[dict[str, Any]]:
        """Sample rows filtered by metric, run and any labels (common ones use their column)."""
        where: list[str] = []
        params: list[str | int] = []
        if metric is not None:
            where.append("metric = ?")
            params.append(metric)
        if run_id is not None:
            where.append("run_id = ?")
            params.append(run_id)
        for name, value in labels.items():
            if name in COMMON_LABELS:
                where.append(f"{name} = ?")
            else:
                where.append("json_extract(labels_json, ?) = ?")
                params.append(f'$."{name}"')
            params.append(value)
        sql = "SELECT * FROM samples" + (" WHERE " + " AND ".join(where) if where else "")
        rows = self.query(sql + " ORDER BY id", params)
        for row in rows:
            row["labels"] = json.loads(row.pop("labels_json") or "{}")
        return rows

    def medians(self, metric: str) -> list[dict[str, Any]]:
        """Median value of ``metric`` per (run, layer, nodes, hosts, workload); a sample
        without a number (NaN, which SQLite keeps as NULL) is left out of it and of ``n``."""
        out: list[dict[str, Any]] = []
        groups: dict[tuple[object, ...], list[float]] = {}
        for row in self.samples(metric=metric):
            if row["value"] is None:
                continue
            key: tuple[object, ...] = (row["run_id"], row["layer"], row["nodes"], row["hosts"],
                                       row["workload"])
            groups.setdefault(key, []).append(float(row["value"]))
        for key, values in groups.items():
            values.sort()
            mid = len(values) // 2
            med = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
            out.append(dict(zip(("run_id", "layer", "nodes", "hosts", "workload"), key,
                                strict=True)) | {"median": med, "n": len(values)})
        return out

    def close(self) -> None:
        self.conn.close()


def build_index(run_dirs: Iterable[str | os.PathLike[str] | RunData],
                db_path: str | os.PathLike[str] = ":memory:") -> ResultIndex:
    """Shorthand for :meth:`ResultIndex.build`."""
    return ResultIndex.build(run_dirs, db_path)


def _rows(run_dirs: Iterable[str | os.PathLike[str] | RunData]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for run in run_dirs:
        data = run if isinstance(run, RunData) else load_run(run)
        for s in data.samples:
            row: dict[str, Any] = {"run_id": data.run_id, "metric": s.metric, "value": s.value,
                                   "unit": s.unit, "t_ns": s.t_ns}
            for name in COMMON_LABELS:
                row[name] = s.labels.get(name, "")
            row["labels"] = json.dumps(s.labels, sort_keys=True)
            rows.append(row)
    return rows


def export(run_dirs: Iterable[str | os.PathLike[str] | RunData], fmt: str,
           out: str | os.PathLike[str], *, unit_kinds: Callable[[], Mapping[str, str]]
           ) -> Path:
    """Write all samples of the runs to ``out`` as csv, json (array of records) or parquet.

    The file is written beside ``out`` and renamed into place, so a failed export leaves no
    half-written file; ``out`` anything but a regular file or a new name (a directory, a
    device, a FIFO, a link: ``userpaths.replace_file``), unwritable or under a non-directory
    is a VnetbenchError (one line), as is a damaged run directory.
    """
    fmt = fmt.lower()
    if fmt not in EXPORT_FORMATS:
        raise VnetbenchError(f"unknown export format {fmt!r}; use one of: "
                             + ", ".join(EXPORT_FORMATS))
    runs = [r if isinstance(r, RunData) else load_run(r) for r in run_dirs]
    frame: pd.DataFrame | None = None
    if fmt == "parquet":
        try:
            importlib.import_module("pyarrow")
        except ImportError as exc:
            raise VnetbenchError("parquet export needs pyarrow: `pip install pyarrow` "
                                 "(or export as csv or json)") from exc
    if fmt in ("csv", "parquet"):
        from vnetbench.results.frame import load_frame

        frame = load_frame(runs, unit_kinds)
    rows = _rows(runs) if fmt == "json" else []
    path = Path(out)
    what = "cannot export to"
    found = lookup(path, what)  # a symlink loop, an over-long name: one line
    hint = (f"give a file name (e.g. {path / ('samples.' + fmt)})"
            if found is not None and stat.S_ISDIR(found.st_mode) else WRITE_HINT)

    def write(tmp: Path) -> None:
        if fmt == "csv":  # vnetbench.load()'s frame, as text
            assert frame is not None  # loaded above for csv and parquet
            frame.to_csv(tmp, index=False, encoding="utf-8")
        elif fmt == "json":
            for row in rows:
                row["labels"] = json.loads(row["labels"])
            tmp.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        else:  # vnetbench.load()'s frame: every label a typed column
            assert frame is not None
            frame.to_parquet(tmp, index=False)

    return replace_file(path, what, write, hint)
