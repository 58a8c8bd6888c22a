"""``vnetbench.load()``: runs as a pandas DataFrame with every label a typed column.

The runs are written in the real format with the store's RunWriter, labelled by the
runner's own ``Trial.labels`` over a real sweep expansion (``scenario.expand``), so the
columns are those a run writes: sweep axes (``link.delay`` with units, ``rr.request`` with a
mix of plain and unit values, ``stream.nodelay`` as True/False), the A/A group, collector labels.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

import vnetbench
from vnetbench.errors import VnetbenchError
from vnetbench.results.histogram import HistogramRecord, LatencyHistogram
from vnetbench.results.index import export
from vnetbench.results.model import Sample
from vnetbench.results.store import RunWriter
from vnetbench.run.design import plan_trials
from vnetbench.scenario.schema import label_unit_kinds
from vnetbench.scenario.sweep import expand

SWEEP = """
name: frame
hosts: 1
nodes: [2, 3]
layers: [host, bridge]
link: {delay: [0ms, 10ms]}
workloads:
  - rr: {request: [100, 1k], duration: 1s}
  - stream: {nodelay: [true, false], duration: 1s}
repeat: 2
"""


def _write_run(run_dir: Path, run_id: str, scale: float = 1.0) -> int:
    """A run of SWEEP in the store's format; returns how many samples it holds."""
    sf = expand(yaml.safe_load(SWEEP), "frame.yaml")
    writer = RunWriter.create(run_dir, sf.raw, {"kernel": "test"}, run_id=run_id)
    count = 0
    for trial in plan_trials(sf, lambda p: list(p.scenario.layers)):
        labels = trial.labels()
        rtt = 40.0 * scale + trial.index
        samples = [Sample("rtt_p50_us", rtt, "us", {**labels, "workload": "rr"}),
                   Sample("goodput_bps", 9e9, "bit/s", {**labels, "workload": "stream"}),
                   Sample("cpu_busy_s", 0.5, "s", {**labels, "workload": "rr", "cpu": "1",
                                                   "source": "cpu"})]
        count += writer.append_samples(samples)
        if labels["layer"] == "bridge":  # a latency histogram of the trial, as the probe's
            writer.append_histograms([HistogramRecord("rtt_us", "us", {
                **labels, "workload": "rr"}, LatencyHistogram(((rtt, 3), (rtt * 2, 1))))])
    writer.close()
    return count


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    base = tmp_path_factory.mktemp("frame")
    n = _write_run(base / "a", "run-a")
    _write_run(base / "b", "run-b", scale=1.5)
    return base / "a", base / "b", n


def test_every_label_is_a_typed_column(runs: tuple[Path, Path, int]) -> None:
    run_a, _, n = runs
    df = vnetbench.load(run_a)
    # 16 points (2 nodes x 2 delays x 2 requests x 2 nodelay) x 3 trials a round (host a/b,
    # bridge) x 2 rounds x 3 samples
    assert len(df) == n == 16 * 3 * 2 * 3
    dtypes = {name: str(dtype) for name, dtype in df.dtypes.items()}
    assert dtypes["value"] == "float64" and dtypes["t_ns"] == "int64"
    for name in ("nodes", "hosts", "repetition", "trial", "cpu"):
        assert dtypes[name] == "Int64", name
    for name in ("run_id", "metric", "unit", "layer", "workload", "aa", "source"):
        assert isinstance(df[name].dtype, pd.StringDtype), name
    assert dtypes["link.delay"] == "float64" and dtypes["rr.request"] == "float64"
    assert dtypes["stream.nodelay"] == "boolean"
    assert df.attrs["units"] == {"link.delay": "s", "rr.request": "B"}
    assert df.attrs["runs"] == {"run-a": str(run_a)}


def test_sweep_axes_are_numbers_in_their_base_unit(runs: tuple[Path, Path, int]) -> None:
    df = vnetbench.load(runs[0])
    assert sorted(df["nodes"].unique()) == [2, 3]
    assert sorted(df["link.delay"].unique()) == pytest.approx([0.0, 0.01])
    assert sorted(df["rr.request"].unique()) == [100.0, 1024.0]
    assert set(df["stream.nodelay"].unique()) == {True, False}
    # numbers sort and compare as numbers, so a sweep curve needs no casting
    rtt = df[df.metric == "rtt_p50_us"]
    medians = rtt.groupby(["layer", "nodes"])["value"].median()
    assert list(medians.loc["bridge"].index) == [2, 3]


def test_missing_labels_are_missing_values(runs: tuple[Path, Path, int]) -> None:
    df = vnetbench.load(runs[0])
    plain = df[df.metric != "cpu_busy_s"]
    assert plain["cpu"].isna().all() and plain["source"].isna().all()
    host = df[df.layer == "host"]
    assert set(host["aa"].dropna()) == {"a", "b"} and df[df.layer == "bridge"]["aa"].isna().all()


def test_several_runs_in_one_frame(runs: tuple[Path, Path, int]) -> None:
    run_a, run_b, n = runs
    df = vnetbench.load(run_a, run_b)
    assert len(df) == 2 * n
    assert df.groupby("run_id")["value"].size().to_dict() == {"run-a": n, "run-b": n}
    as_list = vnetbench.load([run_a, run_b])
    pd.testing.assert_frame_equal(df, as_list)
    rtt = df[(df.metric == "rtt_p50_us") & (df.trial == 0)].set_index("run_id")["value"]
    assert rtt["run-b"] == pytest.approx(rtt["run-a"] * 1.5)


def test_parquet_export_is_the_same_frame(runs: tuple[Path, Path, int], tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    out = export([runs[0], runs[1]], "parquet", tmp_path / "s.parquet", unit_kinds=label_unit_kinds)
    back = pd.read_parquet(out)
    loaded = vnetbench.load(runs[0], runs[1])
    pd.testing.assert_frame_equal(back, loaded)
    assert back.attrs["units"] == {"link.delay": "s", "rr.request": "B"}


def test_csv_export_is_the_same_wide_frame(runs: tuple[Path, Path, int], tmp_path: Path) -> None:
    out = export([runs[0], runs[1]], "csv", tmp_path / "s.csv", unit_kinds=label_unit_kinds)
    back = pd.read_csv(out)
    loaded = vnetbench.load(runs[0], runs[1])
    assert back.columns.tolist() == loaded.columns.tolist()
    assert "labels" not in back.columns and {"link.delay", "rr.request", "cpu"} <= set(back)
    assert len(back) == len(loaded) == 2 * runs[2]
    for name in loaded.columns:  # read back, every column holds the frame's values
        mine = [None if pd.isna(v) else v for v in loaded[name].astype(object)]
        theirs = [None if pd.isna(v) else v for v in back[name].astype(object)]
        assert mine == theirs, name
    # numbers come back as numbers, unit axes in their base unit
    assert str(back["nodes"].dtype) == "int64" and sorted(back["link.delay"].unique()) == [
        0.0, 0.01]


def test_histograms_load_as_a_typed_frame(runs: tuple[Path, Path, int]) -> None:
    h = vnetbench.load_histograms(runs[0])
    assert h.columns.tolist()[:6] == ["run_id", "metric", "histogram", "value", "count", "unit"]
    dtypes = {name: str(dtype) for name, dtype in h.dtypes.items()}
    assert dtypes["value"] == "float64" and dtypes["count"] == "int64"
    assert dtypes["nodes"] == "Int64" and dtypes["link.delay"] == "float64"
    assert h.attrs["units"] == {"link.delay": "s", "rr.request": "B"}
    # 16 points x 2 rounds: one bridge histogram each, two buckets
    assert h["histogram"].nunique() == 32 and len(h) == 64 and set(h.layer) == {"bridge"}
    # merging trials is adding counts: the merged percentile is the records' own
    from vnetbench.results.store import load_histograms

    records = [r for r in load_histograms(runs[0]) if r.labels["nodes"] == "2"]
    merged = LatencyHistogram.merge(r.hist for r in records)
    counts = h[h.nodes == 2].groupby("value")["count"].sum().sort_index()
    reached = counts.cumsum() >= math.ceil(0.5 * counts.sum())
    assert counts.index[reached.argmax()] == merged.percentile(50)


def test_a_run_without_histograms_gives_no_row(tmp_path: Path) -> None:
    writer = RunWriter.create(tmp_path / "r", {"name": "x"}, {}, run_id="r")
    writer.append_samples([Sample("m", 1.0, "us", {"layer": "host"})])
    writer.close()
    h = vnetbench.load_histograms(tmp_path / "r")
    assert len(h) == 0 and h.columns.tolist() == ["run_id", "metric", "histogram", "value",
                                                  "count", "unit"]
    with pytest.raises(TypeError):
        vnetbench.load_histograms()


def test_a_run_given_twice_or_damaged_is_one_clear_error(runs: tuple[Path, Path, int],
                                                          tmp_path: Path) -> None:
    with pytest.raises(VnetbenchError, match="given twice"):
        vnetbench.load(runs[0], runs[0])
    with pytest.raises(VnetbenchError, match="not a vnetbench run directory"):
        vnetbench.load(tmp_path)
    with pytest.raises(TypeError):
        vnetbench.load()


def test_a_label_named_like_a_column_is_kept_apart(tmp_path: Path) -> None:
    writer = RunWriter.create(tmp_path / "r", {"name": "x"}, {}, run_id="r")
    writer.append_samples([Sample("m", 1.0, "us", {"value": "3", "layer": "host"})])
    writer.close()
    df = vnetbench.load(tmp_path / "r")
    assert df["value"].tolist() == [1.0] and df["label.value"].tolist() == [3]
    assert not math.isnan(df["value"].iloc[0])


def test_the_notebooks_scenario_ships() -> None:
    """docs/notebook.md's sweep is scenarios/notebook.yaml, word for word, and it loads."""
    import re

    from vnetbench.scenario.sweep import load_scenario

    root = Path(__file__).resolve().parents[2]
    block = re.search(r"```yaml\n(.*?)```", (root / "docs" / "notebook.md").read_text(), re.S)
    shipped = root / "scenarios" / "notebook.yaml"
    assert block is not None and block.group(1) == shipped.read_text()
    assert len(load_scenario(shipped).points) == 4
