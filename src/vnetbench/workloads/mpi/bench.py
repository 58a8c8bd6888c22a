"""Finding (or building) the MPI workload's benchmark program: a module of its own, so the
run's fingerprint (``provenance``) finds it the way the workload does without loading the
workload."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from vnetbench.errors import MissingToolError
from vnetbench.host.binaries import PACKAGE_BIN, env_override

BENCH_NAME = "vnb-mpi-bench"
BENCH_ENV = "VNETBENCH_MPI_BENCH"
SOURCE = Path(__file__).resolve().parent / "vnb_mpi_bench.c"


def find_mpi_bench(build_dir: Path | None = None) -> Path:
    """The compiled benchmark: $VNETBENCH_MPI_BENCH, vnetbench/bin, else built with mpicc."""
    override = env_override(BENCH_ENV)
    if override:
        return override
    installed = PACKAGE_BIN / BENCH_NAME
    if installed.is_file() and os.access(installed, os.X_OK):
        return installed
    mpicc = shutil.which("mpicc")
    if build_dir is None or mpicc is None or not SOURCE.is_file():
        raise MissingToolError(f"{BENCH_NAME} not found (looked at ${BENCH_ENV}, {installed}); "
                               "run scripts/setup.sh --with apps (needs libopenmpi-dev)")
    build_dir.mkdir(parents=True, exist_ok=True)
    out = build_dir / BENCH_NAME
    proc = subprocess.run([mpicc, "-O2", "-o", str(out), str(SOURCE), "-lm"],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise MissingToolError(f"compiling {SOURCE} with mpicc failed: {proc.stderr.strip()}")
    return out
