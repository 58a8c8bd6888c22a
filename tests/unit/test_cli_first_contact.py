"""First contact with the CLI (issue 32): ``reproduce --list``, ``plan``'s summary, the
command-line overrides, "did you mean", ``labs``. Through ``vnetbench.cli.main.main`` in-process;
nothing here needs root or builds a lab."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vnetbench.cli.main import main
from vnetbench.studies import model
from vnetbench.studies.model import STUDIES_DIR

ROOT = Path(__file__).resolve().parents[2]


def _out(argv: list[str], capsys: pytest.CaptureFixture[str], code: int = 0) -> str:
    assert main(argv) == code
    captured = capsys.readouterr()
    return captured.out if code == 0 else captured.err


# ---- reproduce --list -------------------------------------------------------------------------

def test_reproduce_list_names_every_pack_on_disk(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(["reproduce", "--list"], capsys)
    packs = sorted(p for p in STUDIES_DIR.iterdir() if (p / "study.yaml").is_file())
    assert len(packs) >= 5
    for pack in packs:
        study = model.load_study(pack)
        first = f"{study.id} {study.name:12} {study.title}"
        assert first in out.splitlines()
        block = out.split(first, 1)[1].split("\n    in ", 1)[0]
        for path in study.scenario_paths(False):
            assert path.name in block.split("quick:", 1)[1].split("\n", 1)[0]
        for path in study.scenario_paths(True):
            assert path.name in block.split("full:", 1)[1].split("\n", 1)[0]


def test_reproduce_list_reads_the_packs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    pack = tmp_path / "s998_mine"
    pack.mkdir()
    (pack / "study.yaml").write_text(
        'id: "998"\nname: mine\ntitle: "My own study of loopback"\nseed: x.txt\nmapping: []\n'
        "scenarios: {quick: [a.yaml, b.yaml], full: c.yaml}\nfindings: []\n")
    study = model.load_study(pack)
    monkeypatch.setattr(model, "all_studies", lambda: {"mine": study, "998": study})
    out = _out(["reproduce", "--list"], capsys)
    assert out.splitlines() == ["998 mine         My own study of loopback",
                                "    quick:    a.yaml, b.yaml", "    full:     c.yaml",
                                f"    in        {pack}"]


def test_reproduce_list_takes_nothing_else(capsys: pytest.CaptureFixture[str]) -> None:
    err = _out(["reproduce", "--list", "percona"], capsys, code=2)
    assert err.count("\n") == 1 and "--list takes no study" in err
    err = _out(["reproduce"], capsys, code=2)
    assert "reproduce --list" in err


# ---- labs ---------------------------------------------------------------------------------------

def _kept(state_dir: Path, run_id: str, pid: int, start: int | None, layer: str, nodes: int,
          created: float) -> None:
    from dataclasses import asdict

    from vnetbench.host.state import RunState

    work = state_dir / "work" / run_id
    work.mkdir(parents=True)
    state = RunState(run_id, "10.200", pid, start, work_dir=str(work), created_at=created)
    (state_dir / f"{run_id}.json").write_text(json.dumps(asdict(state)))
    info = {"run_id": run_id, "layer": layer, "hosts": 2, "keeper": pid, "name": "mine",
            "nodes": [{"name": f"n{k}", "role": "node"} for k in range(nodes)]
            + [{"name": "h0", "role": "host"}]}
    (work / "lab.json").write_text(json.dumps(info))


def test_labs_lists_kept_labs_with_their_keepers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import time

    import vnetbench.host.state
    from vnetbench.host.state import process_start_time

    monkeypatch.setattr(vnetbench.host.state, "STATE_DIR", tmp_path)
    assert "no kept lab" in _out(["labs"], capsys)
    now = time.time()
    me = os.getpid()
    _kept(tmp_path, "aaaa", me, process_start_time(me), "vxlan", 3, now - 7200)
    _kept(tmp_path, "bbbb", me, (process_start_time(me) or 0) + 1, "bridge", 2, now - 30)
    (tmp_path / "work" / "cccc").mkdir(parents=True)  # a run's state, no lab.json: not listed
    (tmp_path / "cccc.json").write_text(json.dumps({
        "short_id": "cccc", "net": "10.201", "owner_pid": me, "owner_start": None,
        "work_dir": str(tmp_path / "work" / "cccc")}))
    out = _out(["labs"], capsys).splitlines()
    assert out[0].split() == ["id", "name", "layer", "nodes", "hosts", "age", "keeper"]
    assert out[1].split()[:5] == ["aaaa", "mine", "vxlan", "3", "2"]
    assert "2 h 0 min" in out[1] and out[1].endswith(f"alive (pid {me})")
    assert out[2].split()[:5] == ["bbbb", "mine", "bridge", "2", "2"]  # same pid, other start:
    assert "dead (pid" in out[2] and "vnetbench clean" in out[2]      # the keeper is gone
    assert len(out) == 4 and out[3].startswith("enter one: vnetbench exec n0")
    data = json.loads(_out(["labs", "--json"], capsys))
    assert [(e["id"], e["keeper_alive"]) for e in data] == [("aaaa", True), ("bbbb", False)]
    assert 7190 < data[0]["age_s"] < 7300


def test_sigterm_during_reproduce_is_one_line_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``reproduce`` stopped by SIGTERM (the runner raises ``Terminated`` once its lab is torn
    down) says where the finished trials are and exits 143, as ``run`` does."""
    import os

    from vnetbench.cli.main import main
    from vnetbench.run import runner
    from vnetbench.signals import EXIT_SIGTERM, Terminated

    if os.geteuid() != 0:
        pytest.skip("reproduce asks for root before it runs")

    def stopped(*_args: object, **_kwargs: object) -> None:
        raise Terminated("signal 15")

    monkeypatch.setattr(runner, "run_scenario", stopped)
    assert main(["reproduce", "000", "--out", str(tmp_path)]) == EXIT_SIGTERM
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err)
    assert err[-1].startswith("vnetbench: terminated (SIGTERM) while reproducing study 000; "
                              f"the finished trials are in {tmp_path}")
