"""``vnetbench clean`` keeps the record of what it could not clean and says so with exit 1,
and reaches machines and clusters without holding the lock every new run waits on. No root
needed: the state directory, the namespaces' directory and the backends are the test's."""

from __future__ import annotations

import fcntl
from pathlib import Path
from typing import ClassVar

import pytest

from vnetbench.cli import clean as clean_mod
from vnetbench.host import state as state_mod
from vnetbench.host.cleaned import CleanResult
from vnetbench.host.state import RunState


class Remote:
    """A backend whose leftovers sit on a machine that does (not) answer."""

    answers: ClassVar[bool] = False
    lock_free: ClassVar[list[bool]] = []

    @classmethod
    def clean_leftovers(cls, state: RunState) -> CleanResult:
        with open(state_mod.STATE_DIR / ".lock", "w") as other:
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(other, fcntl.LOCK_UN)
                cls.lock_free.append(True)
            except BlockingIOError:
                cls.lock_free.append(False)
        if cls.answers:
            return CleanResult([f"ran run {state.short_id}'s teardown on m1"])
        return CleanResult(failed=["host m1: not cleaned: ssh: connection timed out"])


def test_clean_keeps_what_it_could_not_reach_and_exits_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vnetbench.cli.main import Exit, _print_clean

    monkeypatch.setattr(state_mod, "STATE_DIR", tmp_path / "state")
    (tmp_path / "state").mkdir()
    monkeypatch.setattr(clean_mod, "NETNS_DIR", tmp_path / "netns")
    monkeypatch.setattr(clean_mod, "DISK_WORK_ROOT", tmp_path / "work")
    monkeypatch.setattr(clean_mod, "leftover_cgroups", lambda: [])
    monkeypatch.setattr(clean_mod, "all_backends", lambda: [Remote])
    dead = RunState("abcd", "10.200", 2**22, None)  # no such process: a killed run
    dead.save()
    Remote.lock_free.clear()

    first = clean_mod.clean()
    assert any("m1: not cleaned" in line for line in first.failed)
    assert any("kept the state of run abcd" in line for line in first.failed)
    assert dead.path.is_file()  # a later clean still knows the machine holds run abcd
    assert Remote.lock_free == [True]  # the network call ran without the lock
    with pytest.raises(Exit) as exc:
        _print_clean(first, "nothing to clean")
    assert exc.value.code == 1

    Remote.answers = True
    second = clean_mod.clean()
    assert not second.failed
    assert "removed state of run abcd" in second.done and not dead.path.exists()
