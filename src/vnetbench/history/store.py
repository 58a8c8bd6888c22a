"""The history store: many runs in one SQLite file, each with its samples, labels,
provenance and headline cells (``vnetbench history add``, ``run --history``).

Why SQLite: it is in Python's standard library (nothing to install or pin), a single file a
user can copy, readable with ordinary SQL from any sqlite3 client, and safe for several
writers: each ``add`` is one ``BEGIN IMMEDIATE`` transaction (a second writer waits for the
first, up to ``BUSY_TIMEOUT_S``), in WAL mode so readers never block a writer. DuckDB reads
columns faster, but its single-process lock refuses a second writer outright, and it is one
more large wheel to pin.

Schema (``SCHEMA_VERSION`` 1; ``PRAGMA application_id`` marks the file as a store, ``PRAGMA
user_version`` holds the version, ``meta`` repeats both in words)::

    meta(key, value)                  format = vnetbench-history, schema = 1
    runs(run_id PK, added, started, finished, status, path, scenario, scenario_sha256,
         overrides, commit_sha, dirty, kernel, machine, packages, meta_json)
    samples(run_id, metric, value, unit, t_ns, labels)            labels: a JSON object
    cells(run_id, cell, scenario, layer, baseline, workload, metric, unit, config, kind,
          value, low, high, floor, n, design)                     PK (run_id, cell)

A cell is one headline figure of a run: ``kind`` ``ratio`` (a layer's paired ratio to the
baseline, its 95 % interval and the run's A/A floor) or ``level`` (the baseline's own median);
``cell`` names it (``<scenario> | <layer> | <workload> | <metric> | <config>``), the same in
every run of that scenario, so a cell's rows over the runs are its series. Adding a run that
is already stored changes nothing (idempotent). Query it with ``json_extract(labels, '$.x')``.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vnetbench.errors import VnetbenchError
from vnetbench.history.cells import Cell, run_cells
from vnetbench.results.model import Sample
from vnetbench.results.store import RunData, RunMeta
from vnetbench.userpaths import lookup, output_file

SCHEMA_VERSION = 1
APPLICATION_ID = 0x564E4248
"""``VNBH``: what ``PRAGMA application_id`` says in a store's header."""
FORMAT = "vnetbench-history"
BUSY_TIMEOUT_S = 60.0

_SCHEMA = f"""
PRAGMA application_id = {APPLICATION_ID};
PRAGMA user_version = {SCHEMA_VERSION};
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('format', '{FORMAT}'), ('schema', '{SCHEMA_VERSION}');
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, added TEXT NOT NULL, started TEXT, finished TEXT, status TEXT,
    path TEXT, scenario TEXT, scenario_sha256 TEXT, overrides TEXT, commit_sha TEXT,
    dirty INTEGER, kernel TEXT, machine TEXT, packages TEXT, meta_json TEXT NOT NULL
);
CREATE TABLE samples (
    run_id TEXT NOT NULL REFERENCES runs(run_id), metric TEXT NOT NULL, value REAL,
    unit TEXT, t_ns INTEGER, labels TEXT NOT NULL
);
CREATE INDEX samples_run ON samples(run_id);
CREATE TABLE cells (
    run_id TEXT NOT NULL REFERENCES runs(run_id), cell TEXT NOT NULL, scenario TEXT,
    layer TEXT, baseline TEXT, workload TEXT, metric TEXT, unit TEXT, config TEXT, kind TEXT,
    value REAL, low REAL, high REAL, floor REAL, n INTEGER, design TEXT,
    PRIMARY KEY (run_id, cell)
);
CREATE INDEX cells_by_cell ON cells(cell);
"""


@dataclass(frozen=True)
class StoredRun:
    """A run's row: when and from what it was measured."""

    run_id: str
    added: str
    started: str
    status: str
    path: str
    scenario: str
    scenario_sha256: str
    overrides: tuple[str, ...]
    commit: str
    dirty: bool
    kernel: str
    machine: str
    packages: dict[str, str]


@dataclass(frozen=True)
class Point:
    """One run's value of one cell."""

    run: StoredRun
    cell: Cell


def _machine(env: dict[str, Any]) -> str:
    """The machine as its run recorded it: CPU model, cores, memory, OS."""
    parts = [str(env.get("cpu_model", "") or "?"), f"{env.get('cores', '?')} cores",
             f"{env.get('memory_gib', '?')} GiB", str(env.get("os", "") or "")]
    return ", ".join(p for p in parts if p)


def _packages(env: dict[str, Any]) -> dict[str, str]:
    """Program -> version, as the run found them (tools and the programs behind numbers)."""
    out = {str(k): str(v) for k, v in (env.get("tools") or {}).items()}
    for name, facts in (env.get("programs") or {}).items():
        if isinstance(facts, dict):
            out[str(name)] = str(facts.get("version", ""))
    return out


class HistoryStore:
    """A store file, open (``open`` makes it when absent; see the module docstring)."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, create: bool = True) -> HistoryStore:
        """The store at ``path``, made when absent (``create``); a file that is not a store
        (another database, a damaged or foreign file, a newer schema) is refused in one
        line."""
        target = Path(path)
        found = lookup(target, "history store", follow=True)
        if found is None and not create:
            raise VnetbenchError(f"history store {target}: no such file; add runs to it "
                                 "first (`vnetbench history add STORE RUN...`)")
        if found is None:
            output_file(target, "history store")
        conn = sqlite3.connect(str(target), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            cls._prepare(target, conn)
        except BaseException:
            conn.close()
            raise
        return cls(target, conn)

    @staticmethod
    def _prepare(target: Path, conn: sqlite3.Connection) -> None:
        """Make the schema in an empty file, or check the file is a store this code reads;
        one transaction, so two processes making the same store meet one schema."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            app = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if app == 0 and version == 0 and tables == 0:  # empty: made here, or by a racer
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute("COMMIT")
                conn.execute("PRAGMA journal_mode = WAL")
                return
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            raise VnetbenchError(f"history store {target}: not a vnetbench history store "
                                 f"({exc}); give a new file name or a store made by "
                                 "`vnetbench history add`") from None
        if app != APPLICATION_ID:
            raise VnetbenchError(f"history store {target}: an SQLite database, but not a "
                                 "vnetbench history store (its application id is "
                                 f"{app:#x}); give a new file name")
        if version > SCHEMA_VERSION:
            raise VnetbenchError(f"history store {target}: schema {version}, newer than this "
                                 f"vnetbench reads ({SCHEMA_VERSION}); upgrade vnetbench")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, run: RunData) -> bool:
        """Store ``run`` with its samples and headline cells, in one transaction; False (and
        nothing written) when it is stored already."""
        cells = run_cells(run)
        meta = run.meta
        env = meta.environment
        found = env.get("git")
        git: dict[str, Any] = found if isinstance(found, dict) else {}
        recorded = meta.recorded
        overrides = recorded.raw.get("overrides")
        row = (run.run_id, _now(), meta.started, meta.finished, run.status.value,
               str(run.path), recorded.name, meta.scenario_sha256,
               json.dumps([str(o) for o in overrides] if isinstance(overrides, list) else []),
               str(git.get("commit", "") or ""), int(bool(git.get("dirty"))),
               str(env.get("kernel", "") or ""), _machine(env),
               json.dumps(_packages(env), sort_keys=True), json.dumps(meta.to_dict()))
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if self.conn.execute("SELECT 1 FROM runs WHERE run_id = ?",
                                 (run.run_id,)).fetchone():
                self.conn.execute("ROLLBACK")
                return False
            self.conn.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", row)
            self.conn.executemany(
                "INSERT INTO samples VALUES (?,?,?,?,?,?)",
                [(run.run_id, s.metric, s.value, s.unit, s.t_ns,
                  json.dumps(s.labels, sort_keys=True)) for s in run.samples])
            self.conn.executemany(
                "INSERT INTO cells VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run.run_id, c.key, c.scenario, c.layer, c.baseline, c.workload, c.metric,
                  c.unit, c.config, c.kind, c.value, c.low, c.high, c.floor, c.n, c.design)
                 for c in cells])
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return True

    def runs(self) -> list[StoredRun]:
        """Every stored run, oldest first (by start time, then id)."""
        rows = self.conn.execute(
            "SELECT run_id, added, started, status, path, scenario, scenario_sha256, "
            "overrides, commit_sha, dirty, kernel, machine, packages FROM runs "
            "ORDER BY started, run_id").fetchall()
        return [StoredRun(r[0], r[1], r[2] or "", r[3] or "", r[4] or "", r[5] or "",
                          r[6] or "", tuple(json.loads(r[7] or "[]")), r[8] or "",
                          bool(r[9]), r[10] or "", r[11] or "", json.loads(r[12] or "{}"))
                for r in rows]

    def points(self) -> list[Point]:
        """Every stored cell value with its run, runs oldest first."""
        by_id = {r.run_id: r for r in self.runs()}
        rows = self.conn.execute(
            "SELECT run_id, cell, scenario, layer, baseline, workload, metric, unit, config, "
            "kind, value, low, high, floor, n, design FROM cells").fetchall()
        order = {run_id: k for k, run_id in enumerate(by_id)}
        out = [Point(by_id[r[0]], _cell(r[1:])) for r in rows if r[0] in by_id]
        return sorted(out, key=lambda p: (order[p.run.run_id], p.cell.key))

    def run_data(self) -> Iterator[RunData]:
        """Every stored run as ``load_run`` would give it (its samples from the store)."""
        for run_id, meta_json, path in self.conn.execute(
                "SELECT run_id, meta_json, path FROM runs ORDER BY started, run_id").fetchall():
            samples = [Sample(m, v, u, json.loads(labels), t or 0) for m, v, u, t, labels in
                       self.conn.execute("SELECT metric, value, unit, t_ns, labels FROM "
                                         "samples WHERE run_id = ?", (run_id,))]
            yield RunData(Path(path or run_id), RunMeta.from_dict(json.loads(meta_json),
                                                                   f"{self.path}: {run_id}"),
                          samples)


def _cell(row: Sequence[Any]) -> Cell:
    """A ``cells`` row (SQLite keeps a NaN as NULL: read back as nan)."""
    (key, scenario, layer, baseline, workload, metric, unit, config, kind, value, low, high,
     floor, n, design) = row

    def num(x: object) -> float:
        return float("nan") if x is None else float(x)  # type: ignore[arg-type]

    return Cell(key, scenario, layer, baseline, workload, metric, unit, config, kind, num(value),
                num(low), num(high), num(floor), int(n or 0), design or "")


def is_store(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file whose SQLite header says it is a history store."""
    target = Path(path)
    if not target.is_file():
        return False
    with open(target, "rb") as f:
        header = f.read(72)
    return header[:16] == b"SQLite format 3\x00" and \
        int.from_bytes(header[68:72], "big") == APPLICATION_ID


def add_runs(store: str | os.PathLike[str], runs: Iterable[RunData]) -> list[tuple[str, bool]]:
    """Add ``runs`` to the store at ``store`` (made when absent): (run id, added) each."""
    with closing(HistoryStore.open(store)) as s:
        return [(run.run_id, s.add(run)) for run in runs]


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


__all__: Sequence[str] = ("HistoryStore", "Point", "StoredRun", "add_runs", "is_store")
