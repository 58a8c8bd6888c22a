"""Machine-wide settings several runs share (the CPU governor): who holds them, and what to
put back when the last one lets go.

A run that changes a setting of the whole machine records, under the allocation lock, the
setting's original values and itself as a holder (its PID and start time) in
``<state dir>/holds/<name>.json``. A second run finding live holders takes the recorded
originals, not the values the first run wrote; a run letting go restores only when no other
holder is alive; ``vnetbench clean`` restores a setting whose holders were all killed. So
two runs ending in either order, or one killed, leave the machine's own values.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from vnetbench.host import state
from vnetbench.host.state import allocation_lock, process_alive, process_start_time


def _path(name: str) -> Path:
    return state.STATE_DIR / "holds" / f"{name}.json"


def _me() -> list[int | None]:
    pid = os.getpid()
    return [pid, process_start_time(pid)]


def _load(name: str) -> tuple[dict[str, str], list[list[int | None]]]:
    """The recorded originals and the holders still alive (none without a record)."""
    try:
        data = json.loads(_path(name).read_text())
    except (OSError, ValueError):
        return {}, []
    holders = [h for h in data.get("holders", [])
               if isinstance(h, list) and len(h) == 2 and isinstance(h[0], int)
               and process_alive(h[0], h[1])]
    originals = {str(k): str(v) for k, v in data.get("originals", {}).items()}
    return originals, holders


def _save(name: str, originals: dict[str, str], holders: list[list[int | None]]) -> None:
    path = _path(name)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"originals": originals, "holders": holders}))
    tmp.replace(path)


def take(name: str, current: dict[str, str]) -> dict[str, str]:
    """Hold setting ``name``: the originals to restore one day (those a live holder recorded,
    else ``current``, the values read now, before this run writes any)."""
    with allocation_lock():
        originals, holders = _load(name)
        # with live holders, their originals; a key none of them recorded: its value now
        originals = {**current, **originals} if holders else dict(current)
        _save(name, originals, [*holders, _me()])
        return originals


def release(name: str) -> dict[str, str]:
    """Let go of setting ``name``: the originals to restore now when this was the last live
    holder (the record removed), else nothing (another run still needs the setting)."""
    with allocation_lock():
        originals, holders = _load(name)
        others = [h for h in holders if h != _me()]
        if others:
            _save(name, originals, others)
            return {}
        with contextlib.suppress(FileNotFoundError):
            _path(name).unlink()
        return originals


def orphaned(name: str) -> dict[str, str]:
    """For ``clean``: the originals of setting ``name`` when every holder is dead (the record
    removed: the caller restores them), else nothing."""
    with allocation_lock():
        if not _path(name).exists():
            return {}
        originals, holders = _load(name)
        if holders:
            return {}
        with contextlib.suppress(FileNotFoundError):
            _path(name).unlink()
        return originals
