"""``vnetbench reproduce --judge``: a study's findings judged against a recorded run (made
through the fake backend, so no root), written first in the report and as
reproduction.json, and printed as the verdict table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.fake_backend import fake_backend
from vnetbench.cli.main import main
from vnetbench.studies import model
from vnetbench.studies.model import Study

STUDY = """\
id: "999"
name: fakestudy
title: "A study of loopback"
seed: none.txt
mapping:
  - {study: "native", layer: host}
  - {study: "a bridge", layer: bridge, note: "the fake backend puts both on loopback"}
scenarios: {quick: quick.yaml, full: quick.yaml}
differences: ["loopback on one machine"]
findings:
  - id: bridge-slower
    claim: "the bridge is slower"
    source: "Fig. 1"
    published: [{what: "bridge", value: 30, unit: "us"}]
    check: {workload: rr, metric: rtt_p50_us, layer: bridge, baseline: host, expect: higher}
  - id: needs-npb
    claim: "NPB"
    source: "Fig. 7"
    check: {workload: mpi, metric: mpi_runtime_s, layer: bridge, baseline: host, expect: higher}
    needs: [npb-kernels]
"""

SCENARIO = """\
name: fake-study
hosts: 1
nodes: 2
layers: [host, bridge]
workloads:
  - rr: {duration: 200ms}
repeat: 2
noise_floor: false
platform: {placement: off, idle_states: false, governor: false, quiet: null}
"""


def test_judging_a_recorded_run_writes_the_verdicts_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pack = tmp_path / "s999_fakestudy"
    pack.mkdir()
    (pack / "study.yaml").write_text(STUDY)
    (pack / "quick.yaml").write_text(SCENARIO)
    study = model.load_study(pack)
    monkeypatch.setattr(model, "all_studies", lambda: {"fakestudy": study, "999": study})
    monkeypatch.setattr(model, "AVAILABLE", frozenset())
    with fake_backend(monkeypatch, tmp_path / "state"):
        assert main(["run", str(pack / "quick.yaml"), "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert main(["reproduce", "fakestudy", "--judge", str(tmp_path / "run")]) == 0
    printed = capsys.readouterr().out
    assert "study 999 fakestudy" in printed and "needs-npb (Fig. 7): not comparable" in printed
    data = json.loads((tmp_path / "run" / "reproduction.json").read_text())
    verdicts = {f["id"]: f["verdict"] for f in data["findings"]}
    assert verdicts["needs-npb"] == "not comparable"
    # 2 vs 2 repetitions can never be significant: the rule says so instead of guessing
    assert verdicts["bridge-slower"] == "not comparable"
    assert "could not resolve" in {f["id"]: f["why"] for f in data["findings"]}["bridge-slower"]
    report = (tmp_path / "run" / "report.html").read_text()
    assert report.index('id="reproduction"') < report.index('id="headline"')
    assert "A study of loopback" in report and "bridge 30 us" in report


def _pack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str = "fakestudy",
          scenario: str = SCENARIO) -> Path:
    pack = tmp_path / f"s999_{name}"
    pack.mkdir()
    (pack / "study.yaml").write_text(STUDY.replace("fakestudy", name))
    (pack / "quick.yaml").write_text(scenario)
    study = model.load_study(pack)
    monkeypatch.setattr(model, "all_studies", lambda: {name: study, "999": study})
    return pack


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("vnetbench: error: ") and "\n" not in err, err
    return err


def test_judge_refuses_a_run_of_another_scenario_without_writing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pack = _pack(tmp_path, monkeypatch)
    other = tmp_path / "other.yaml"
    other.write_text(SCENARIO.replace("name: fake-study", "name: not-the-study"))
    with fake_backend(monkeypatch, tmp_path / "state"):
        assert main(["run", str(other), "--out", str(tmp_path / "run")]) == 0
    report = tmp_path / "run" / "report.html"
    before = (report.stat().st_mtime_ns, report.read_bytes())
    err = _refused(["reproduce", "fakestudy", "--judge", str(tmp_path / "run")], capsys)
    assert "'not-the-study', not of study 999" in err and "fake-study" in err
    assert not (tmp_path / "run" / "reproduction.json").exists()
    assert (report.stat().st_mtime_ns, report.read_bytes()) == before
    # the same name with other content (the pack changed since, or a hand-edited copy)
    (pack / "quick.yaml").write_text(SCENARIO.replace("repeat: 2", "repeat: 3"))
    monkeypatch.setattr(model, "all_studies",
                        lambda: {"fakestudy": model.load_study(pack), "999": model.load_study(pack)})
    edited = tmp_path / "edited.yaml"
    edited.write_text(SCENARIO)  # the pack's old content under its name
    with fake_backend(monkeypatch, tmp_path / "state"):
        assert main(["run", str(edited), "--out", str(tmp_path / "run3")]) == 0
    err = _refused(["reproduce", "fakestudy", "--judge", str(tmp_path / "run3")], capsys)
    assert "differs from study 999's pack" in err
    assert not (tmp_path / "run3" / "reproduction.json").exists()


def test_judge_refuses_a_run_without_a_measured_value(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import math

    from vnetbench.results.model import Sample
    from vnetbench.results.store import RunWriter
    from vnetbench.scenario.sweep import load_scenario

    pack = _pack(tmp_path, monkeypatch)
    sf = load_scenario(pack / "quick.yaml")
    with RunWriter.create(tmp_path / "nan", {"file": sf.path, **sf.raw}, {"cores": 2}) as w:
        w.append_samples([Sample("rtt_p50_us", math.nan, "us", {"layer": layer, "workload": "rr"})
                          for layer in ("host", "bridge")])
    err = _refused(["reproduce", "fakestudy", "--judge", str(tmp_path / "nan")], capsys)
    assert "no measured value" in err
    assert not (tmp_path / "nan" / "reproduction.json").exists()


def test_an_unknown_study_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "nosuchstudy", "--judge", "/nonexistent"]) == 2
    assert "unknown study 'nosuchstudy'" in capsys.readouterr().err


def test_shipped_packs_load(tmp_path: Path) -> None:
    studies = {s.id: s for s in model.all_studies().values()}
    assert all(isinstance(s, Study) and s.findings for s in studies.values())
