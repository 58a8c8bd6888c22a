"""First contact with the CLI (issue 32): ``reproduce --list``, ``plan``'s summary, the
command-line overrides, "did you mean", ``labs``. Through ``vnetbench.cli.main`` in-process;
nothing here needs root or builds a lab."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetbench.cli import main
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
                                "    quick: a.yaml, b.yaml", "    full:  c.yaml",
                                f"    in     {pack}"]


def test_reproduce_list_takes_nothing_else(capsys: pytest.CaptureFixture[str]) -> None:
    err = _out(["reproduce", "--list", "percona"], capsys, code=2)
    assert err.count("\n") == 1 and "--list takes no study" in err
    err = _out(["reproduce"], capsys, code=2)
    assert "reproduce --list" in err
