"""Finding vnetbench's native programs (the probe, the link emulator, the tunnel forwarder).

Search order: an environment variable naming the file, then the package's own ``bin/``
directory (where the set-up copies cargo's output), then the crate's cargo target directory
in a source checkout, then ``PATH``. A missing binary is one clear error saying how to build it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from vnetbench.errors import MissingToolError

PACKAGE_BIN = Path(__file__).resolve().parents[1] / "bin"
_SOURCE_ROOT = Path(__file__).resolve().parents[3]

# binary name -> (environment variable, crate directory relative to the source checkout)
KNOWN: dict[str, tuple[str, str]] = {
    "vnetbench-probe": ("VNETBENCH_PROBE", "probe"),
    "vnetbench-linkem": ("VNETBENCH_LINKEM", "native"),
    "vnetbench-tunnel": ("VNETBENCH_TUNNEL", "native"),
}


def env_override(env_var: str) -> Path | None:
    """The executable named by ``$env_var`` (None when unset); MissingToolError if it is not one."""
    override = os.environ.get(env_var)
    if not override:
        return None
    path = Path(override)
    if path.is_file() and os.access(path, os.X_OK):
        return path.resolve()
    raise MissingToolError(f"{env_var}={override} is not an executable file")


def find_binary(name: str) -> Path:
    """Absolute path of one of vnetbench's native programs, or MissingToolError."""
    env_var, crate = KNOWN[name]
    override = env_override(env_var)
    if override:
        return override
    candidates = [
        PACKAGE_BIN / name,
        _SOURCE_ROOT / crate / "target" / "release" / name,
    ]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    raise MissingToolError(
        f"{name} not found (looked at ${env_var}, {PACKAGE_BIN}, {candidates[1]}, PATH); "
        f"build it with: cargo build --release --manifest-path {crate}/Cargo.toml "
        "(or run scripts/setup.sh)"
    )
