"""Where the ``vm`` backends' emulator is: a module of its own, so the run's fingerprint
(``provenance``) can find QEMU the way the backend does without loading the backend."""

from __future__ import annotations

import shutil

from vnetbench.errors import MissingToolError

QEMU = "qemu-system-x86_64"
SETUP_HINT = "run scripts/setup.sh --with vm"


def find_qemu() -> str:
    path = shutil.which(QEMU)
    if not path:
        raise MissingToolError(f"{QEMU} not found (Debian package qemu-system-x86): {SETUP_HINT}")
    return path
