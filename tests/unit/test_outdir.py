"""Unit tests of the output directory rules: a safe bounded slug, a unique default, and
`--out` only where a run can be written alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vnetbench.errors import ScenarioError
from vnetbench.run.outdir import SLUG_MAX, default_out, prepare_out, slug


@pytest.mark.parametrize("name", ["../../../tmp/x", "a/b/c", "..", "", "/etc/passwd",
                                  "x" * 300, "naïve name\twith\nbreaks", ".hidden"])
def test_slug_is_safe_and_bounded(name: str) -> None:
    s = slug(name)
    assert s and "/" not in s and ".." not in s and not s.startswith(".")
    assert len(s) <= SLUG_MAX
    assert all(c.isascii() and (c.isalnum() or c in "._-") for c in s)


def test_default_stays_under_results_and_is_unique(tmp_path: Path) -> None:
    a, b = default_out("../../../tmp/x", tmp_path), default_out("../../../tmp/x", tmp_path)
    assert a != b, "two runs started in the same second must not collide"
    for path in (a, b):
        assert path.parent == tmp_path
        assert re.fullmatch(r"\d{8}T\d{6}Z-tmp-x-[0-9a-f]{6}", path.name), path.name


def test_prepare_out_accepts_new_and_empty(tmp_path: Path) -> None:
    new = prepare_out(tmp_path / "a" / "b", "s")
    assert new.is_dir()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert prepare_out(empty, "s") == empty


@pytest.mark.parametrize("case", ["empty string", "file", "under a file", "not empty", "proc",
                                  "sys"])
def test_prepare_out_refuses_with_one_line(tmp_path: Path, case: str) -> None:
    target: str | Path
    if case == "empty string":
        target = ""
    elif case == "file":
        target = tmp_path / "f"
        target.write_text("x")
    elif case == "under a file":
        (tmp_path / "f").write_text("x")
        target = tmp_path / "f" / "out"
    elif case == "not empty":
        target = tmp_path / "full"
        target.mkdir()
        (target / "other.txt").write_text("someone else's")
    else:
        target = Path(f"/{case}/vnb-test-out")
    with pytest.raises(ScenarioError) as err:
        prepare_out(target, "s")
    message = str(err.value)
    assert "\n" not in message and message.startswith("--out")
    if case == "not empty":
        assert (tmp_path / "full" / "other.txt").read_text() == "someone else's"
    assert not Path("/proc/vnb-test-out").exists()


def test_one_out_is_claimed_for_one_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    """Two runs started on one empty --out at the same moment both find it empty; only the
    first to claim it goes on, and the claim is never made through a planted link."""
    from vnetbench.run import outdir

    out = tmp_path / "shared"
    first = prepare_out(out, "s")
    assert (first / outdir.CLAIM).is_file()
    outdir.release_claim(first)  # a run refused before writing leaves it as it found it
    assert not any(first.iterdir())
    prepare_out(out, "s")
    # the second run passed the emptiness check before the first claimed the directory
    monkeypatch.setattr(Path, "iterdir", lambda self: iter(()))
    with pytest.raises(ScenarioError, match="another run claimed it"):
        prepare_out(out, "s")
    planted = tmp_path / "planted"
    planted.mkdir()
    target = tmp_path / "victim"
    target.write_text("keep\n")
    (planted / outdir.CLAIM).symlink_to(target)
    with pytest.raises(ScenarioError, match="another run claimed it"):
        prepare_out(planted, "s")
    assert target.read_text() == "keep\n"
