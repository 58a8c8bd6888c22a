"""Directories root writes in are refused when another user could have planted them: not a
directory, owned by someone else, writable by others; made 0700 when absent."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from vnetbench.errors import VnetbenchError
from vnetbench.userpaths import trusted_dir


def test_an_absent_root_is_made_for_us_alone(tmp_path: Path) -> None:
    made = trusted_dir(tmp_path / "work", "work root")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700 and made.stat().st_uid == os.geteuid()
    assert trusted_dir(made, "work root") == made  # checked again on every use


def test_a_link_or_a_file_in_its_place_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(VnetbenchError, match="not a directory"):
        trusted_dir(tmp_path / "link", "work root")
    (tmp_path / "file").write_text("x")
    with pytest.raises(VnetbenchError, match="not a directory"):
        trusted_dir(tmp_path / "file", "work root")


def test_a_root_others_may_write_in_is_refused_in_one_line(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(VnetbenchError) as caught:
        trusted_dir(shared, "vnetbench's disk work root")
    text = str(caught.value)
    assert "writable by other users" in text and "\n" not in text and "777" in text


@pytest.mark.root
def test_a_root_another_user_made_first_is_refused(tmp_path: Path) -> None:
    """As another local user would: /var/tmp/vnetbench made first by nobody, mode 0777."""
    planted = tmp_path / "vnetbench"
    planted.mkdir()
    os.chown(planted, 65534, 65534)
    planted.chmod(0o777)
    with pytest.raises(VnetbenchError, match="belongs to uid 65534"):
        trusted_dir(planted, "vnetbench's disk work root")
    assert list(planted.iterdir()) == []  # nothing written


@pytest.mark.root
def test_an_out_directory_of_another_user_is_refused_with_nothing_written(tmp_path: Path) -> None:
    from vnetbench.errors import ScenarioError
    from vnetbench.run.outdir import prepare_out

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    with pytest.raises(ScenarioError, match="belongs to uid 65534"):
        prepare_out(str(theirs), "x")
    assert list(theirs.iterdir()) == []
    assert prepare_out(str(tmp_path / "mine"), "x").is_dir()  # root's own: fine


def test_python_children_never_import_from_the_callers_directory() -> None:
    """``python -m`` puts the working directory first on the import path: a child started as
    root from a directory another user can write in would import their ``vnetbench``.
    Every ``sys.executable ... -m`` vnetbench starts passes ``-P`` (Python 3.11: no unsafe
    path)."""
    import re

    import vnetbench

    root = Path(vnetbench.__file__).parent
    unsafe = [f"{p.relative_to(root)}:{n}" for p in root.rglob("*.py")
              for n, line in enumerate(p.read_text().splitlines(), 1)
              if re.search(r"sys\.executable,\s*\"-m\"", line)]
    assert unsafe == [], unsafe
    started = [p for p in root.rglob("*.py") if 'sys.executable, "-P", "-m"' in p.read_text()]
    assert len(started) >= 4


def test_a_replaced_file_reaches_the_disk_before_its_name_does(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """replace_file syncs the new content, then renames, then syncs the directory: a crash
    leaves the old file or the complete new one, never an empty file under the name."""
    from vnetbench import userpaths

    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    def replace(a: object, b: object) -> None:
        events.append("rename")
        real_replace(a, b)  # type: ignore[arg-type]

    monkeypatch.setattr(userpaths.os, "fsync", fsync)
    monkeypatch.setattr(userpaths.os, "replace", replace)
    target = tmp_path / "run.json"
    userpaths.replace_file(target, "run file", lambda p: p.write_text("{}"))
    assert target.read_text() == "{}" and events == ["file", "rename", "dir"]


def test_a_report_writes_through_no_link_planted_in_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``vnetbench report RUN`` with ``RUN/figures/<x>.svg`` a link to someone's file: the
    file is left alone and the report says so in one line (it overwrote the link's target)."""
    from tests.fakes.fake_backend import fake_backend
    from vnetbench.cli.main import main
    from vnetbench.report.html import build_report

    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: links\nhosts: 1\nnodes: 2\nlayers: [host, bridge]\n"
                        "workloads:\n  - rr: {duration: 200ms}\nrepeat: 2\nnoise_floor: false\n"
                        "platform: {placement: off, idle_states: false, governor: false, "
                        "quiet: null}\n")
    run = tmp_path / "run"
    with fake_backend(monkeypatch, tmp_path / "state"):
        assert main(["run", str(scenario), "--out", str(run)]) == 0
    figure = sorted((run / "figures").glob("*.svg"))[0]
    victim = tmp_path / "victim"
    victim.write_text("precious")
    figure.unlink()
    figure.symlink_to(victim)
    with pytest.raises(VnetbenchError, match="link"):
        build_report(run)
    assert victim.read_text() == "precious"
    figure.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run / "figures").rename(tmp_path / "old-figures")
    (run / "figures").symlink_to(elsewhere)
    with pytest.raises(VnetbenchError, match="it is a link"):
        build_report(run)
    assert list(elsewhere.iterdir()) == []
