"""The node image: a root filesystem made from local files, loaded with ``docker import``.

No registry is reachable, and none is needed: the image holds the probe
(``/usr/local/bin/vnetbench-probe``), ``/bin/sleep`` as the container's idle main process,
and the shared libraries both need (found with ``ldd``), plus the empty directories and files
Docker mounts over (/proc, /sys, /dev, /etc/hosts, ...). A few megabytes, written per lab
and imported by every engine (a fraction of a second).
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from vnetbench.errors import MissingToolError

EMPTY_DIRS = ("proc", "sys", "dev", "etc", "tmp", "run", "root", "usr/local/bin", "bin")
PLACEHOLDER_FILES = ("etc/hosts", "etc/hostname", "etc/resolv.conf")
PASSWD = "root:x:0:0:root:/root:/bin/sleep\n"
_LIB = re.compile(r"(/\S+) \(0x[0-9a-f]+\)")


def shared_libraries(ldd_output: str) -> list[str]:
    """Absolute paths of the libraries in ``ldd`` output (the loader included)."""
    return [m.group(1) for m in _LIB.finditer(ldd_output)]


def rootfs_members(probe: Path) -> dict[str, Path]:
    """Path inside the image -> file on this machine."""
    sleep = shutil.which("sleep")
    if not sleep:
        raise MissingToolError("sleep (coreutils) not found: the node image needs it")
    members = {"usr/local/bin/vnetbench-probe": probe, "bin/sleep": Path(sleep)}
    for binary in list(members.values()):
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
        for lib in shared_libraries(out.stdout):
            members[lib.lstrip("/")] = Path(lib)
    return members


def write_rootfs(target: Path, members: dict[str, Path]) -> None:
    """A tar of the image's root filesystem (files dereferenced, owned by root)."""
    with tarfile.open(target, "w") as tar:
        dirs = set(EMPTY_DIRS)
        for name in members:
            parent = Path(name).parent
            while str(parent) != ".":
                dirs.add(str(parent))
                parent = parent.parent
        for d in sorted(dirs):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, data in [(f, b"") for f in PLACEHOLDER_FILES] + [("etc/passwd", PASSWD.encode())]:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        for name, source in sorted(members.items()):
            real = source.resolve()
            info = tar.gettarinfo(str(real), arcname=name)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            with open(real, "rb") as handle:
                tar.addfile(info, handle)
