"""Which programs produce a run's numbers, and which version of each: ``run.json``'s
``environment.programs``.

Each program is found the way the run finds it (``$VNETBENCH_*`` overrides, the package's
``bin/``, ``PATH``; the dockerd the docker backend would start, the java the hadoop workload
would use), then asked for its version line. Programs built here (the probe, the link
emulator, the tunnel forwarder, the MPI benchmark) also get the SHA-256 of their binary, since
their version number alone does not change with every build. One entry per program::

    {"path": "/usr/sbin/mariadbd", "version": "mariadbd  Ver 10.11.19-MariaDB ..."}
    {"path": null, "version": "absent", "why": "mariadbd not found: apt-get install ..."}

Answers are cached per boot in ``/run/vnetbench`` (keyed by every program's path and
modification time, so an upgrade is noticed) and asked in parallel otherwise.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path

from vnetbench.errors import MissingToolError
from vnetbench.host.programs import Program

CACHE_FILE = Path("/run/vnetbench/program-versions.json")  # tmpfs: emptied at boot
ABSENT = "absent"


def _dockerd() -> str:
    from vnetbench.backends.docker.engine import find_dockerd

    return find_dockerd()


def _qemu() -> str:
    from vnetbench.backends.vm.find import find_qemu

    return find_qemu()


ENGINES: tuple[Program, ...] = (
    Program("dockerd", _dockerd),
    Program("qemu-system-x86_64", _qemu),
)
"""The backends' engines."""


def all_programs() -> tuple[Program, ...]:
    """The programs whose output becomes samples: the workloads' (as the workload registry
    declares them), the layers' (``layers.programs``: datapath daemons and their tools), the
    engines."""
    from vnetbench.layers.registry import layer_programs
    from vnetbench.workloads.registry import programs

    return (*programs(), *layer_programs(), *ENGINES)


def _first_line(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({type(exc).__name__})"
    lines = [line.strip() for line in (proc.stdout + "\n" + proc.stderr).splitlines()
             if line.strip()]
    return lines[0] if lines else "unknown"


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _hadoop() -> dict[str, str | int | None]:
    """The Hadoop the hadoop workload would load: its version from the jar cache."""
    from vnetbench.workloads.hadoop.install import HADOOP_VERSION, hadoop_home

    try:
        home = hadoop_home()
    except MissingToolError as exc:
        return {"path": None, "version": ABSENT, "why": str(exc)}
    return {"path": str(home.jar_dir), "version": f"Hadoop {HADOOP_VERSION}",
            "jars": len(home.jars)}


def _located() -> dict[str, str | MissingToolError]:
    found: dict[str, str | MissingToolError] = {}
    for program in all_programs():
        try:
            found[program.name] = program.find()
        except MissingToolError as exc:
            found[program.name] = exc
    return found


def _describe(program: Program, path: str) -> dict[str, str]:
    entry: dict[str, str] = {"path": path}
    entry["version"] = (_first_line([path, *program.version_args]) if program.version_args
                        else "none (no --version)")
    if program.digest:
        entry["sha256"] = _sha256(path)
    return entry


def _stamp(located: dict[str, str | MissingToolError]) -> list[str]:
    stamp = []
    for name, path in sorted(located.items()):
        mtime = 0
        if isinstance(path, str):
            with suppress(OSError):
                mtime = os.stat(path).st_mtime_ns
        stamp.append(f"{name}={path}:{mtime}")
    return stamp


def program_versions() -> dict[str, Mapping[str, object]]:
    """``{program: {"path", "version"[, "sha256"]}}`` for every program of ``all_programs()`` and
    Hadoop; an absent one says so and why."""
    located = _located()
    stamp = _stamp(located)
    with suppress(OSError, ValueError, KeyError, TypeError):
        cached = json.loads(CACHE_FILE.read_text())
        if cached["stamp"] == stamp:
            return {**dict(cached["programs"]), "hadoop": _hadoop()}
    programs: dict[str, Mapping[str, object]] = {}
    every = all_programs()
    present = [(p, located[p.name]) for p in every if isinstance(located[p.name], str)]
    with ThreadPoolExecutor(max_workers=max(1, len(present))) as pool:
        futures = {p.name: pool.submit(_describe, p, str(path)) for p, path in present}
        for program in every:
            where = located[program.name]
            if isinstance(where, MissingToolError):
                programs[program.name] = {"path": None, "version": ABSENT, "why": str(where)}
            else:
                programs[program.name] = futures[program.name].result()
    with suppress(OSError):
        CACHE_FILE.parent.mkdir(parents=True, exist_ok=True)
        tmp = CACHE_FILE.with_name(f".{CACHE_FILE.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"stamp": stamp, "programs": programs}))
        os.replace(tmp, CACHE_FILE)
    return {**programs, "hadoop": _hadoop()}
