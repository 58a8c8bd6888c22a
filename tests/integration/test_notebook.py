"""A real run of docs/notebook.md's sweep: ``vnetbench run --json`` prints a summary that
parses, ``vnetbench.load()`` types its labels (sweep axes included) and agrees with it,
parquet export is the same frame, and the notebook's code redraws the scaling figure."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import vnetbench
from vnetbench.results.index import export
from vnetbench.scenario.schema import label_unit_kinds

from ..conftest import new_leftovers, settled

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "notebook.md"


def _scenario() -> str:
    """The notebook's scenario, one repetition (2 x 2 points x 3 trials: about a minute)."""
    text = re.search(r"```yaml\n(.*?)```", NOTEBOOK.read_text(), re.S)
    assert text is not None
    return text.group(1).replace("repeat: 2", "repeat: 1")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    base = tmp_path_factory.mktemp("notebook")
    (base / "notebook.yaml").write_text(_scenario())
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-m", "vnetbench", "run", "notebook.yaml", "--out",
                           "run", "--json"], cwd=base, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return base / "run", json.loads(done.stdout)


def test_run_json_summary(run: tuple[Path, dict[str, Any]]) -> None:
    out, summary = run
    assert summary["status"] == "complete" and summary["run_dir"] == str(out.resolve())
    assert summary["trials_done"] == 12 and summary["trials_failed"] == 0
    assert Path(summary["report"]).is_file()
    tps = [g for g in summary["headline"] if g["metric"] == "tps"]
    assert {(g["labels"]["layer"], g["labels"]["nodes"], g["labels"]["rr.request"])
            for g in tps} == {(layer, n, r) for layer in ("host", "bridge") for n in ("2", "3")
                              for r in ("100", "1k")}
    # paired: every round holds one slice of each path, the baseline's two (A/A) and bridge's
    n = {(g["labels"]["layer"], g["labels"]["nodes"], g["labels"]["rr.request"]): g["n"]
         for g in tps}
    assert all(g["median"] > 0 for g in tps)
    assert all(n[("host", k, r)] == 2 * n[("bridge", k, r)] >= 2 * 8
               for _, k, r in n)
    assert settled(set(new_leftovers())) == set()  # other runs on the machine aside


def test_load_types_the_labels_and_agrees_with_the_summary(
        run: tuple[Path, dict[str, Any]]) -> None:
    out, summary = run
    df = vnetbench.load(out)
    assert str(df["nodes"].dtype) == "Int64" and str(df["repetition"].dtype) == "Int64"
    assert str(df["rr.request"].dtype) == "float64"
    assert sorted(df["rr.request"].dropna().unique()) == [100.0, 1024.0]
    assert df.attrs["units"]["rr.request"] == "B"
    tps = df[df.metric == "tps"].groupby(["layer", "nodes", "rr.request"])["value"].median()
    request = {"100": 100.0, "1k": 1024.0}
    for group in summary["headline"]:
        if group["metric"] == "tps":
            labels = group["labels"]
            key = (labels["layer"], int(labels["nodes"]), request[labels["rr.request"]])
            assert tps[key] == pytest.approx(group["median"])


def test_parquet_export_is_the_loaded_frame(run: tuple[Path, dict[str, Any]],
                                            tmp_path: Path) -> None:
    out, _ = run
    target = export([out], "parquet", tmp_path / "samples.parquet", unit_kinds=label_unit_kinds)
    pd.testing.assert_frame_equal(pd.read_parquet(target), vnetbench.load(out))


def test_the_notebook_redraws_the_scaling_figure(run: tuple[Path, dict[str, Any]],
                                                 tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    out, summary = run
    code = "\n".join(re.findall(r"```python\n(.*?)```", NOTEBOOK.read_text(), re.S))
    assert 'RUN_DIR = "results/notebook"' in code
    code = code.replace('RUN_DIR = "results/notebook"', f"RUN_DIR = {str(out)!r}")
    monkeypatch.chdir(tmp_path)
    import matplotlib

    matplotlib.use("Agg")
    namespace: dict[str, Any] = {}
    exec(compile(code, str(NOTEBOOK), "exec"), namespace)  # the documented code, as written
    assert (tmp_path / "scaling.png").stat().st_size > 10_000
    table = namespace["table"]
    headline = {(g["metric"], g["labels"]["layer"], int(g["labels"]["nodes"])): g["median"]
                for g in summary["headline"] if g["labels"]["rr.request"] == "100"
                and g["metric"] in ("tps", "rtt_p99_us")}
    assert len(headline) == 8
    for (metric, layer, nodes), median in headline.items():
        assert table.loc[(metric, nodes), layer] == pytest.approx(median)
    # the distributions: the notebook's p99 of merged buckets is the histograms' own
    assert (tmp_path / "rtt_cdf.png").stat().st_size > 5_000
    from vnetbench.results.histogram import LatencyHistogram
    from vnetbench.results.store import load_histograms

    records = [r for r in load_histograms(out) if r.metric == "rtt_us"
               and r.labels.get("rr.request") == "100" and r.labels.get("nodes") == "2"]
    for layer in ("host", "bridge"):
        mine = [r.hist for r in records if r.labels["layer"] == layer]
        assert mine and namespace["p99"][layer] == LatencyHistogram.merge(mine).percentile(99)
    namespace["plt"].close("all")
