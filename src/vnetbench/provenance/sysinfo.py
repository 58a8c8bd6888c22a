"""The environment fingerprint stored with every run: what machine, kernel, tools, code.

Host-level facts only (no lab needed): kernel, CPU model, core count, memory, load, cgroup
version, the versions of the system tools that build the lab (``tools``) and of the programs
that produce the numbers (``programs``: the probe, mariadbd, sysbench, mpirun, java and
Hadoop, wireguard-go, the dockerd the docker backend starts...; see ``provenance``), the git
commit of vnetbench and whether the tree was dirty, and the root namespace's sysctls that
change what a path does. Per-layer facts (lab sysctls, MTUs,
offloads of lab interfaces) are added by the runner from the built lab.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path
from typing import Any

from vnetbench import __version__
from vnetbench.host.cgroups import cgroup_version
from vnetbench.provenance.gitinfo import git_facts
from vnetbench.provenance.record import program_versions

OS_RELEASE = (Path("/etc/os-release"), Path("/usr/lib/os-release"))
CACHE_DIR = Path("/run/vnetbench")  # tmpfs: emptied at boot
ROOT_SYSCTLS = ("net.ipv4.ip_forward", "net.core.rmem_max", "net.core.wmem_max",
                "net.ipv4.tcp_congestion_control", "kernel.sched_autogroup_enabled")
TOOL_VERSIONS = {"ip": ["ip", "-V"], "iptables": ["iptables", "--version"],
                 "wg": ["wg", "--version"], "python": ["python3", "--version"]}
"""The system tools that build the lab (the programs that measure are in ``programs``)."""


def _first_line(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=5, check=False)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return "absent"
    return ((proc.stdout or proc.stderr).strip().splitlines() or ["?"])[0]


def _tool_versions() -> dict[str, str]:
    """Each tool's version line; cached in /run per boot, keyed by the tools' paths and
    modification times (so an upgrade is noticed), asked in parallel otherwise."""
    stamp = []
    for argv in TOOL_VERSIONS.values():
        path = shutil.which(argv[0])
        stamp.append(f"{path}:{os.stat(path).st_mtime_ns if path else 0}")
    cache = CACHE_DIR / "tool-versions.json"
    with suppress(OSError, ValueError):
        cached = json.loads(cache.read_text())
        if cached.get("stamp") == stamp:
            return dict(cached["versions"])
    with ThreadPoolExecutor(max_workers=len(TOOL_VERSIONS)) as pool:
        futures = {name: pool.submit(_first_line, argv) for name, argv in TOOL_VERSIONS.items()}
        versions = {name: future.result() for name, future in futures.items()}
    with suppress(OSError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"stamp": stamp, "versions": versions}))
    return versions


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def os_name(paths: tuple[Path, ...] = OS_RELEASE) -> str:
    """``PRETTY_NAME`` of os-release(5), read as the shell would (quotes removed)."""
    for path in paths:
        try:
            text = path.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.strip().partition("=")
            if key == "PRETTY_NAME":
                value = value.strip()
                if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                    value = value[1:-1]
                return value
    return "unknown"


def _sysctl(key: str) -> str:
    try:
        return (Path("/proc/sys") / key.replace(".", "/")).read_text().strip()
    except OSError:
        return "absent"


def fingerprint() -> dict[str, Any]:
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
    return {
        "vnetbench": __version__,
        "git": git_facts(),
        "kernel": platform.release(),
        "os": os_name(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
        "cgroup_version": cgroup_version(),
        "root_sysctls": {k: _sysctl(k) for k in ROOT_SYSCTLS},
        "tools": _tool_versions(),
        "programs": program_versions(),
    }
