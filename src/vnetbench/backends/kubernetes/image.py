"""vnetbench's pod image, built here from local files: the probe, busybox, and the programs of
the workloads this machine can run in a pod.

No registry is needed (nor reachable on the test machine): the image is one layer holding
``/usr/local/bin/vnetbench-probe`` with the shared libraries ``ldd`` names for it, a static
busybox (``/bin/busybox`` and a symlink per applet: ``sh``, ``cat``, ``sleep``, ``kill``,
``nc``...), and the programs of the workloads this machine has them for, at their paths here
with their libraries and data directories (``workload_programs``, from each workload's
registry line): oltp's ``mariadbd``,
``mariadb-install-db`` and the helpers it calls and ``sysbench`` (with MariaDB's system tables
and messages and sysbench's Lua tests), ``iperf3``, ``sockperf``. It is written as a
Docker-format image archive (what ``docker save`` writes), which ``ctr -n k8s.io images
import`` loads into a node's containerd under its name. The name is
``localhost/vnetbench/node:<version>-<12 hex of the layer's digest>``: the same files give the
same name, so a node that has it needs nothing new. The layer is deterministic (sorted, mtime
0, owned by root).

    python3 -m vnetbench.backends.kubernetes.image --out node-image.tar   # prints the name
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import vnetbench
from vnetbench.backends.docker.image import PLACEHOLDER_FILES, shared_libraries
from vnetbench.errors import MissingToolError
from vnetbench.host.binaries import find_binary

REPOSITORY = "localhost/vnetbench/node"
PROBE_IN_IMAGE = "/usr/local/bin/vnetbench-probe"
BUSYBOX_HINT = "apt-get install busybox-static (scripts/setup.d/50-vm.sh installs it)"
DIRS = ("bin", "dev", "etc", "proc", "sys", "tmp", "run", "root", "usr", "usr/local",
        "usr/local/bin", "var")
PASSWD = "root:x:0:0:root:/root:/bin/sh\n"
IMAGE_PATH = "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The pods' PATH: a node runs a program by its name (``machine_argv``), found here."""


@dataclass(frozen=True)
class WorkloadPrograms:
    """What a workload needs in the image: ``programs`` found on this machine's PATH (at
    their paths here), ``data`` directories (each the first match of its glob patterns),
    ``located`` programs found otherwise (path in the image, ``module:function`` returning
    the file here) and ``scripts`` made here (path in the image, text)."""

    workload: str
    programs: tuple[str, ...]
    data: tuple[tuple[str, ...], ...] = ()
    located: tuple[tuple[str, str], ...] = ()
    scripts: tuple[tuple[str, str], ...] = ()


KUBE_RSH = """\
#!/bin/sh
# vnetbench's remote shell between a lab's pods, as MPI's launcher calls ssh:
#   vnb-kube-rsh --map FILE ADDRESS COMMAND...   (FILE: lines "ADDRESS POD")
# runs COMMAND in that pod with kubectl exec, as the pod's service account (vnb-launcher),
# in the pod's own namespace (VNB_NAMESPACE, if set, names another).
map=""
while [ $# -gt 0 ]; do
  case "$1" in
    --map) map="$2"; shift 2 ;;
    --map=*) map="${1#--map=}"; shift ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ -n "$map" ] && [ $# -ge 2 ] || { echo "usage: vnb-kube-rsh --map FILE ADDRESS COMMAND..." >&2; exit 255; }
host="$1"; shift
pod=$(awk -v h="$host" '$1 == h { print $2; exit }' "$map")
[ -n "$pod" ] || { echo "vnb-kube-rsh: no pod for $host in $map" >&2; exit 255; }
ns=${VNB_NAMESPACE:-$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)} || exit 255
exec kubectl exec -i -n "$ns" "$pod" -c node -- sh -c "$*"
"""
"""Called by ``mpirun`` in a pod (``node.launch_agent``); ``kubectl`` finds the cluster from
the service account's token mounted in the pod."""

LAUNCHER_LOCATED = (("/usr/local/bin/kubectl", "vnetbench.backends.kubernetes.kubectl:find_kubectl"),)
LAUNCHER_SCRIPTS = (("/usr/local/bin/vnb-kube-rsh", KUBE_RSH),)
"""What a workload that starts programs in the other nodes (``WorkloadOptions.launches``:
MPI's launcher) needs beside its own programs: kubectl, and the remote shell that uses it."""


def workload_programs() -> tuple[WorkloadPrograms, ...]:
    """The workloads beyond the probe's whose programs the image carries when this machine
    has them: each one's pod needs, from its registry line (``workloads.registry.pod_needs``:
    ``mariadb-install-db`` is a shell script, busybox's ``sh`` runs it), and the launcher's
    for those that launch (MPI's daemons are started in the other pods by ``vnb-kube-rsh``)."""
    from vnetbench.workloads.registry import pod_needs, workload_model

    out = []
    for name, needs in pod_needs().items():
        launches = workload_model(name).launches
        out.append(WorkloadPrograms(name, needs.programs, needs.data,
                                    needs.located + (LAUNCHER_LOCATED if launches else ()),
                                    LAUNCHER_SCRIPTS if launches else ()))
    return tuple(out)


def find_busybox() -> Path:
    """A statically linked busybox (the image has no C library of its own for it)."""
    for candidate in ("/bin/busybox", "/usr/bin/busybox"):
        path = Path(candidate)
        if path.is_file():
            out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, check=False)
            if "not a dynamic executable" in out.stdout + out.stderr or out.returncode != 0:
                return path
    raise MissingToolError(f"a static busybox is needed for vnetbench's pod image: {BUSYBOX_HINT}")


def applets(busybox: Path) -> list[str]:
    got = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=True)
    return sorted({a for a in got.stdout.split() if a and "/" not in a and a != "busybox"})


def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o1777 if name == "tmp" else 0o755, 0
    tar.addfile(info)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    tar.addfile(info, io.BytesIO(data))


@dataclass
class WorkloadFiles:
    """What ``workload_files`` found: the workloads, their files (path in the image -> file
    here), the programs placed elsewhere than here (path here -> path in the image) and the
    scripts made here (path in the image -> text)."""

    workloads: list[str] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)
    moved: dict[str, str] = field(default_factory=dict)
    scripts: dict[str, str] = field(default_factory=dict)


def _first_dir(patterns: tuple[str, ...]) -> Path | None:
    for pattern in patterns:
        found = sorted(p for p in Path("/").glob(pattern.lstrip("/")) if p.is_dir())
        if found:
            return found[0]
    return None


def _located(spec: str) -> Path | None:
    module, _, function = spec.partition(":")
    try:
        return Path(getattr(importlib.import_module(module), function)())
    except (MissingToolError, OSError):
        return None


def workload_files() -> WorkloadFiles:
    """The workloads whose programs this machine has, and their files (each workload whole
    or not at all)."""
    out = WorkloadFiles()
    for entry in workload_programs():
        found = [shutil.which(name) for name in entry.programs]
        dirs = [_first_dir(patterns) for patterns in entry.data]
        located = [(inside, _located(spec)) for inside, spec in entry.located]
        if None in found or None in dirs or any(here is None for _, here in located):
            continue
        out.workloads.append(entry.workload)
        for program in found:
            assert program is not None
            out.files[str(Path(program).absolute()).lstrip("/")] = Path(program)
        for directory in dirs:
            assert directory is not None
            for path in sorted(directory.rglob("*")):
                if path.is_file():
                    out.files[str(path).lstrip("/")] = path
        for inside, here in located:
            assert here is not None
            out.files[inside.lstrip("/")] = here
            out.moved[str(here)] = inside
        out.scripts.update({inside.lstrip("/"): text for inside, text in entry.scripts})
    return out


def _needs_libraries(path: Path) -> bool:
    """An executable or a shared object (MPI's components are loaded with dlopen: ldd of the
    programs does not name their libraries)."""
    return os.access(path, os.X_OK) or path.name.endswith(".so") or ".so." in path.name


def layer_tar(probe: Path, busybox: Path, extra: dict[str, Path] | None = None,
              scripts: dict[str, str] | None = None) -> bytes:
    """The image's one layer (an uncompressed tar): the probe, busybox, ``extra`` (path in
    the image -> file here), the shared libraries of every executable or shared object
    among them, and ``scripts`` (path in the image -> text, executable)."""
    files: dict[str, Path] = {PROBE_IN_IMAGE.lstrip("/"): probe, "bin/busybox": busybox,
                              **(extra or {})}
    for binary in [probe, *(p for p in (extra or {}).values() if _needs_libraries(p))]:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
        for lib in shared_libraries(out.stdout):
            files[lib.lstrip("/")] = Path(lib)
    files = {k: v for k, v in files.items() if k not in (scripts or {})}
    dirs = set(DIRS)
    for name in [*files, *(scripts or {})]:
        parent = Path(name).parent
        while str(parent) != ".":
            dirs.add(str(parent))
            parent = parent.parent
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for d in sorted(dirs):
            _add_dir(tar, d)
        for name in (*PLACEHOLDER_FILES, "etc/group"):
            _add_bytes(tar, name, b"root:x:0:\n" if name == "etc/group" else b"", 0o644)
        _add_bytes(tar, "etc/passwd", PASSWD.encode(), 0o644)
        for name, source in sorted(files.items()):
            mode = 0o755 if os.access(source, os.X_OK) else 0o644
            _add_bytes(tar, name, source.resolve().read_bytes(), mode)
        for name, text in sorted((scripts or {}).items()):
            _add_bytes(tar, name, text.encode(), 0o755)
        for applet in applets(busybox):
            if f"bin/{applet}" in files or f"bin/{applet}" in (scripts or {}):
                continue  # a program of the same name is there
            info = tarfile.TarInfo(f"bin/{applet}")
            info.type, info.linkname, info.mode, info.mtime = tarfile.SYMTYPE, "busybox", 0o777, 0
            tar.addfile(info)
    return buf.getvalue()


@dataclass(frozen=True)
class NodeImage:
    """The image: its name and its archive's members."""

    name: str
    layer: bytes
    config: bytes
    workloads: tuple[str, ...] = ()
    """The workloads beyond the probe's whose programs it holds (``workload_programs``)."""
    programs: Mapping[str, str] = field(default_factory=dict)
    """Programs at another path in the image than here: path here -> path in the image."""

    def archive(self) -> bytes:
        """The Docker-format image archive (``manifest.json``, config, layer)."""
        layer_id = hashlib.sha256(self.layer).hexdigest()
        config_id = hashlib.sha256(self.config).hexdigest()
        manifest = [{"Config": f"{config_id}.json", "RepoTags": [self.name],
                     "Layers": [f"{layer_id}/layer.tar"]}]
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
            _add_dir(tar, layer_id)
            _add_bytes(tar, f"{layer_id}/layer.tar", self.layer, 0o644)
            _add_bytes(tar, f"{config_id}.json", self.config, 0o644)
            _add_bytes(tar, "manifest.json", json.dumps(manifest).encode(), 0o644)
        return buf.getvalue()


def image_config(layer: bytes, workloads: tuple[str, ...] = ()) -> bytes:
    holds = "vnetbench-probe, busybox" + "".join(f", {w}'s programs" for w in workloads)
    config = {
        "architecture": "amd64", "os": "linux",
        "config": {"Env": [f"PATH={IMAGE_PATH}"], "Cmd": ["/bin/sleep", "2147483647"],
                   "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(layer).hexdigest()}"]},
        "history": [{"created_by": f"vnetbench {vnetbench.__version__}: {holds}"}],
    }
    return json.dumps(config, sort_keys=True).encode()


@lru_cache(maxsize=1)
def node_image() -> NodeImage:
    """vnetbench's pod image (built once per process; MissingToolError without the probe
    or a static busybox)."""
    if shutil.which("ldd") is None:
        raise MissingToolError("ldd (libc-bin) is needed to build vnetbench's pod image")
    found = workload_files()
    layer = layer_tar(find_binary("vnetbench-probe"), find_busybox(), found.files, found.scripts)
    digest = hashlib.sha256(layer).hexdigest()
    return NodeImage(f"{REPOSITORY}:{vnetbench.__version__}-{digest[:12]}", layer,
                     image_config(layer, tuple(found.workloads)), tuple(found.workloads),
                     dict(found.moved))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m vnetbench.backends.kubernetes.image",
        description="Write vnetbench's pod image as an archive for `ctr -n k8s.io images "
                    "import` on every Kubernetes node; print its name.")
    parser.add_argument("--out", type=Path, required=True, help="the archive to write")
    args = parser.parse_args(argv)
    try:
        image = node_image()
    except MissingToolError as exc:
        print(f"vnetbench: error: {exc}", file=sys.stderr)
        return 2
    args.out.write_bytes(image.archive())
    print(image.name)
    missing = [w for w in workload_programs() if w.workload not in image.workloads]
    if missing:
        print(f"without the programs of {', '.join(w.workload for w in missing)} (not all "
              f"found on this machine: {'; '.join(' '.join(w.programs) for w in missing)}"
              "); those workloads cannot run in its pods", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
