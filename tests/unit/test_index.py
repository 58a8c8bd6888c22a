"""Unit tests of the SQLite index and the csv/json/parquet export."""

from __future__ import annotations

import csv
import importlib
import json
from pathlib import Path
from types import ModuleType

import pytest

from vnetbench.errors import VnetbenchError
from vnetbench.results.index import ResultIndex, build_index, export
from vnetbench.scenario.schema import label_unit_kinds

EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "evidence"
RUNS = [EVIDENCE / "run_layers", EVIDENCE / "run_sweep"]


@pytest.fixture(scope="module")
def idx() -> ResultIndex:
    return build_index(RUNS)


def test_runs_and_metrics(idx: ResultIndex) -> None:
    runs = {r["run_id"]: r for r in idx.runs()}
    assert set(runs) == {"run_layers", "run_sweep"}
    assert runs["run_layers"]["n_samples"] == 770 and runs["run_sweep"]["n_samples"] == 486
    assert runs["run_layers"]["status"] == "complete"
    assert {"tps", "rtt_p50_us", "goodput_bps", "rx_drops"} <= set(idx.metrics())
    assert idx.layers() == ["bridge", "host", "vxlan", "wireguard"]


def test_sample_queries(idx: ResultIndex) -> None:
    rows = idx.samples(metric="tps", run_id="run_layers", layer="vxlan")
    assert len(rows) == 7
    assert rows[0]["labels"]["workload"] == "rr" and rows[0]["nodes"] == 2
    by_json = idx.samples(metric="rx_drops", run_id="run_layers", device="vxlan0", netns="n1")
    assert len(by_json) == 7 and all(r["value"] >= 120 for r in by_json)


def test_numeric_label_columns_sort_as_numbers(idx: ResultIndex) -> None:
    rows = idx.query("SELECT DISTINCT nodes FROM samples WHERE run_id = ? ORDER BY nodes",
                     ["run_sweep"])
    assert [r["nodes"] for r in rows] == [2, 4, 8, 12, 16, 20, 24, 28, 32]


def test_medians(idx: ResultIndex) -> None:
    meds = {(m["run_id"], m["layer"], m["workload"]): m for m in idx.medians("rtt_p50_us")
            if m["nodes"] == 2}
    assert meds[("run_layers", "vxlan", "rr")]["median"] == pytest.approx(60.0)
    assert meds[("run_layers", "host", "rr")]["n"] == 7


def test_a_nan_sample_is_left_out_of_the_medians(tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(RUNS[0], run)
    samples = run / "samples.jsonl"
    lines = samples.read_text().splitlines()
    first = json.loads(lines[0])
    samples.write_text("\n".join([*lines, json.dumps({**first, "value": float("nan")})]) + "\n")
    key = (first["labels"]["layer"], first["labels"]["workload"], first["labels"]["nodes"])

    def median_of(built: ResultIndex) -> dict[str, object]:
        return next(m for m in built.medians(first["metric"]) if (m["layer"], m["workload"],
                                                                  str(m["nodes"])) == key)

    assert median_of(build_index([run])) == median_of(build_index(RUNS[:1]))


def test_on_disk_rebuild_and_duplicates(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    build_index(RUNS[:1], db).close()
    again = build_index(RUNS, db)  # rebuilt, not appended
    assert len(again.runs()) == 2
    again.close()
    with pytest.raises(VnetbenchError, match="indexed twice"):
        build_index([RUNS[0], RUNS[0]])


def test_export_csv_and_json(tmp_path: Path) -> None:
    out = export(RUNS[:1], "csv", tmp_path / "x" / "s.csv", unit_kinds=label_unit_kinds)
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 770
    assert {"run_id", "metric", "value", "layer", "nodes", "device", "netns"} <= set(rows[0])
    assert "labels" not in rows[0]  # every label its own column, not one JSON string
    vx = [float(r["value"]) for r in rows if r["metric"] == "rtt_p50_us" and r["layer"] == "vxlan"]
    assert sorted(vx)[3] == pytest.approx(60.0)
    drops = [r for r in rows if r["metric"] == "rx_drops" and r["device"] == "vxlan0"
             and r["netns"] == "n1"]
    assert len(drops) == 7 and all(float(r["value"]) >= 120 for r in drops)
    out_json = export(RUNS, "JSON", tmp_path / "s.json", unit_kinds=label_unit_kinds)
    data = json.loads(out_json.read_text())
    assert len(data) == 770 + 486 and isinstance(data[0]["labels"], dict)


def test_export_rejects_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(VnetbenchError, match="csv, json, parquet"):
        export(RUNS, "xlsx", tmp_path / "s.xlsx", unit_kinds=label_unit_kinds)


def test_parquet_without_pyarrow_says_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def fake(name: str, package: str | None = None) -> ModuleType:
        if name.startswith("pyarrow"):
            raise ImportError("No module named 'pyarrow'")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(VnetbenchError, match="pip install pyarrow"):
        export(RUNS, "parquet", tmp_path / "s.parquet", unit_kinds=label_unit_kinds)


def test_parquet_with_pyarrow(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed")
    out = export(RUNS[:1], "parquet", tmp_path / "s.parquet", unit_kinds=label_unit_kinds)
    assert pq.read_table(out).num_rows == 770
