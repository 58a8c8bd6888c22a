"""The guest kernel and initramfs of the ``vm`` backend.

The kernel is Debian's stock ``linux-image-amd64`` (bookworm: 6.1), fetched with
``apt-get download`` and unpacked with ``dpkg-deb -x`` into a cache directory
(``/var/cache/vnetbench/vm-kernel/<version>/``, ``depmod -b`` run on it) instead of being
installed: installing it would put a second kernel into the host's /boot and /lib/modules,
run initramfs-tools and bootloader hooks on a machine that boots another kernel, and keep it
under apt's upgrades; the cache is self-contained, needs no hooks and is removed with
``rm -r``. Inside a guest the cached modules are bind-mounted onto /lib/modules/<version>,
so ``modprobe`` (bridge, veth, vxlan, ...) works there.

The initramfs is a newc cpio written here (no cpio tool): busybox-static as /bin/busybox,
the modules needed to reach the root file system (virtio PCI, virtio-net, 9p over virtio,
overlay) with their dependencies from ``modules.dep`` in load order, and ``/init``, a
busybox script that loads them, mounts the host's root (9p tag ``vnbroot``, read-only) under
an overlay with a tmpfs upper layer, mounts /proc, /sys, /dev, /dev/pts, /dev/shm, /tmp,
/run, cgroup2 and bpffs there, bind-mounts the kernel's modules and switches root to the
agent's init (``agent.py --init``) with the host's Python. The common part is built once per
kernel and init script (cached next to the kernel); each guest gets its own copy with a small
second cpio appended (``/vnetbench/boot.env`` for /init and the agent's JSON configuration),
which the kernel unpacks over the first.

``python -m vnetbench.backends.vm.guest_kernel fetch|check`` (the virtual environment's python) is
what the set-up part ``vm`` runs.
"""

from __future__ import annotations

import argparse
import hashlib
import lzma
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vnetbench.backends.vm.find import SETUP_HINT
from vnetbench.errors import LabError, MissingToolError

KERNEL_CACHE = Path("/var/cache/vnetbench/vm-kernel")
KERNEL_META_PACKAGE = "linux-image-amd64"
BUSYBOX = Path("/bin/busybox")
COMPLETE_MARK = ".complete"
ROOT_TAG = "vnbroot"
"""The 9p mount tag of the host's root file system."""

BOOT_MODULES: tuple[str, ...] = ("virtio_pci", "virtio_net", "9pnet_virtio", "9p", "overlay")
"""Modules /init loads (their dependencies are added from modules.dep)."""

BUSYBOX_APPLETS: tuple[str, ...] = ("sh", "mount", "mkdir", "insmod", "switch_root", "cat",
                                    "poweroff", "sleep", "ls", "cp", "echo", "dmesg")
INIT_PATH = "init"
BOOT_ENV_PATH = "vnetbench/boot.env"
CONFIG_PATH = "vnetbench/config.json"

INIT_SCRIPT = r"""#!/bin/sh
# vnetbench guest /init (stage 1): modules, root file system, mounts, then the agent's init.
fail() { echo "vnetbench-init: FAILED: $*"; dmesg | tail -n 20; poweroff -f; sleep 60; }
mkdir -p /proc /sys /dev /lower /upper /newroot
mount -t proc proc /proc || fail "mount /proc"
mount -t sysfs sysfs /sys || fail "mount /sys"
mount -t devtmpfs devtmpfs /dev || fail "mount /dev"
. /vnetbench/boot.env || fail "no /vnetbench/boot.env"
echo "vnetbench-init: loading modules"
for m in $(cat /modules.load); do insmod "/$m" || fail "insmod $m"; done
echo "vnetbench-init: mounting the root"
mount -t 9p -o "trans=virtio,version=9p2000.L,ro,msize=$MSIZE,cache=$CACHE" "$ROOT_TAG" /lower \
  || fail "mount 9p $ROOT_TAG (is the virtio-9p device there?)"
mount -t tmpfs -o mode=0755 upper /upper || fail "mount tmpfs upper"
mkdir -p /upper/upper /upper/work
mount -t overlay -o lowerdir=/lower,upperdir=/upper/upper,workdir=/upper/work root /newroot \
  || fail "mount overlay root"
for d in proc sys dev; do mount --move "/$d" "/newroot/$d" || fail "move /$d"; done
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /newroot/dev/pts || fail "mount devpts"
mount -t tmpfs -o mode=1777 shm /newroot/dev/shm || fail "mount /dev/shm"
mount -t tmpfs -o mode=1777 tmp /newroot/tmp || fail "mount /tmp"
mount -t tmpfs -o mode=0755 run /newroot/run || fail "mount /run"
mount -t cgroup2 cgroup2 /newroot/sys/fs/cgroup || fail "mount cgroup2"
mount -t bpf bpf /newroot/sys/fs/bpf || echo "vnetbench-init: no bpffs"
mkdir -p "/newroot/lib/modules/$KVER" && \
  mount --bind "/newroot$MODULES" "/newroot/lib/modules/$KVER" || fail "bind modules $MODULES"
mkdir -p -m 0700 /newroot/run/vnetbench
cp /vnetbench/config.json /newroot/run/vnetbench/config.json || fail "copy config"
echo "vnetbench-init: switching root to $PYTHON $AGENT"
exec switch_root /newroot "$PYTHON" -I -S "$AGENT" --init /run/vnetbench/config.json
fail "switch_root"
"""


@dataclass(frozen=True)
class GuestKernel:
    """An unpacked kernel package in the cache: ``root/boot/vmlinuz-V``, ``root/lib/modules/V``."""

    version: str
    root: Path

    @property
    def vmlinuz(self) -> Path:
        return self.root / "boot" / f"vmlinuz-{self.version}"

    @property
    def modules_dir(self) -> Path:
        return self.root / "lib" / "modules" / self.version

    @property
    def vmlinux(self) -> Path:
        """The uncompressed ELF image (extracted from vmlinuz by ``extract_vmlinux``)."""
        return self.root / "boot" / f"vmlinux-{self.version}"

    @property
    def boot_image(self) -> Path:
        """What QEMU's ``-kernel`` gets: the ELF image when extracted (PVH entry: no
        decompression in the guest, ~4 s less under TCG), else the bzImage."""
        return self.vmlinux if self.vmlinux.is_file() else self.vmlinuz


XZ_MAGIC = b"\xfd7zXZ\x00"
ELF_MAGIC = b"\x7fELF"


def extract_vmlinux(kernel: GuestKernel) -> Path | None:
    """Unpack the xz-compressed ELF inside ``kernel.vmlinuz`` to ``kernel.vmlinux`` (Debian's
    bookworm kernels are xz; another compression leaves the bzImage in use: None)."""
    if kernel.vmlinux.is_file():
        return kernel.vmlinux
    data = kernel.vmlinuz.read_bytes()
    offset = data.find(XZ_MAGIC)
    while offset >= 0:
        try:
            image = lzma.LZMADecompressor().decompress(data[offset:])
        except lzma.LZMAError:
            image = b""
        if image.startswith(ELF_MAGIC):
            write_atomically(kernel.vmlinux, image)
            return kernel.vmlinux
        offset = data.find(XZ_MAGIC, offset + 1)
    return None


def write_atomically(path: Path, data: bytes, mode: int = 0o644) -> None:
    """``path`` with ``data``, appearing whole (concurrent writers each use their own file)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def find_kernel(cache: Path = KERNEL_CACHE) -> GuestKernel:
    """The newest complete kernel in ``cache``; MissingToolError naming the set-up otherwise."""
    found = []
    if cache.is_dir():
        for entry in cache.iterdir():
            kernel = GuestKernel(entry.name, entry)
            if (entry / COMPLETE_MARK).is_file() and kernel.vmlinuz.is_file():
                found.append(kernel)
    if not found:
        raise MissingToolError(f"no guest kernel in {cache}: {SETUP_HINT}")
    return max(found, key=lambda k: _version_key(k.version))


def _run(argv: Sequence[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        raise LabError(f"`{' '.join(argv)}` exited {proc.returncode}: {tail}")
    return proc.stdout


def _apt_download(package: str, into: Path) -> Path:
    """``apt-get download package`` into ``into``; the .deb's path."""
    _run(["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", package], cwd=into)
    debs = sorted(into.glob(f"{package}_*.deb"))
    if not debs:
        raise LabError(f"apt-get download {package} left no .deb in {into}")
    return debs[-1]


def _image_package(meta_deb: Path) -> str:
    """The versioned image package (``linux-image-6.1.0-N-amd64``) a meta package depends on."""
    depends = _run(["dpkg-deb", "--field", str(meta_deb), "Depends"])
    match = re.search(r"(linux-image-\d[\w.+-]*)", depends)
    if not match:
        raise LabError(f"{meta_deb.name} names no linux-image package in Depends: {depends.strip()}")
    return match.group(1)


def fetch_kernel(cache: Path = KERNEL_CACHE, package: str = KERNEL_META_PACKAGE) -> GuestKernel:
    """Download the current ``package`` kernel and unpack it into ``cache`` (idempotent)."""
    for tool in ("apt-get", "dpkg-deb", "depmod"):
        if not shutil.which(tool) and not shutil.which(tool, path="/usr/sbin:/sbin"):
            raise MissingToolError(f"{tool} not found: the guest kernel is fetched with apt on Debian")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".fetch-") as tmp_name:
        tmp = Path(tmp_name)
        image = _image_package(_apt_download(package, tmp))
        version = image.removeprefix("linux-image-")
        kernel = GuestKernel(version, cache / version)
        if (kernel.root / COMPLETE_MARK).is_file():
            return kernel
        deb = _apt_download(image, tmp)
        unpacked = tmp / "root"
        _run(["dpkg-deb", "-x", str(deb), str(unpacked)])
        shutil.rmtree(unpacked / "usr", ignore_errors=True)  # docs only
        depmod = shutil.which("depmod") or shutil.which("depmod", path="/usr/sbin:/sbin") or "depmod"
        _run([depmod, "-b", str(unpacked), version])
        extract_vmlinux(GuestKernel(version, unpacked))
        (unpacked / COMPLETE_MARK).write_text(f"{image} from {deb.name}\n")
        if kernel.root.exists():
            shutil.rmtree(kernel.root)
        unpacked.rename(kernel.root)
    return kernel


def _module_name(relpath: str) -> str:
    base = relpath.rsplit("/", 1)[-1]
    return re.sub(r"\.ko(\.xz|\.zst|\.gz)?$", "", base).replace("-", "_")


def read_modules_dep(modules_dir: Path) -> dict[str, tuple[str, list[str]]]:
    """modules.dep as ``name -> (relpath, [dependency relpaths])``."""
    dep_file = modules_dir / "modules.dep"
    if not dep_file.is_file():
        raise MissingToolError(f"{dep_file} is missing (depmod not run): {SETUP_HINT}")
    table: dict[str, tuple[str, list[str]]] = {}
    for line in dep_file.read_text().splitlines():
        if ":" not in line:
            continue
        path, deps = line.split(":", 1)
        table[_module_name(path)] = (path, deps.split())
    return table


def builtin_modules(modules_dir: Path) -> set[str]:
    builtin = modules_dir / "modules.builtin"
    if not builtin.is_file():
        return set()
    return {_module_name(line.strip()) for line in builtin.read_text().splitlines() if line.strip()}


def module_load_order(modules_dir: Path, names: Iterable[str]) -> list[str]:
    """Relative paths of ``names`` and their dependencies, each after what it needs."""
    table = read_modules_dep(modules_dir)
    by_path = {path: name for name, (path, _) in table.items()}
    builtin = builtin_modules(modules_dir)
    order: list[str] = []

    def visit(name: str) -> None:
        path, deps = table[name]
        if path in order:
            return
        for dep in deps:
            visit(by_path[dep])
        order.append(path)

    for raw in names:
        name = raw.replace("-", "_")
        if name in table:
            visit(name)
        elif name not in builtin:
            raise LabError(f"kernel module {raw} is neither in {modules_dir}/modules.dep nor built in")
    return order


@dataclass(frozen=True)
class CpioEntry:
    """One member of a newc archive: a directory, a regular file, a symlink or a device node."""

    name: str
    mode: int
    data: bytes = b""
    rdev: tuple[int, int] = (0, 0)


def _cpio_header(ino: int, entry: CpioEntry, size: int) -> bytes:
    name = entry.name.encode() + b"\0"
    fields = (ino, entry.mode, 0, 0, 1, 0, size, 0, 0, entry.rdev[0], entry.rdev[1], len(name), 0)
    header = b"070701" + b"".join(f"{value:08x}".encode() for value in fields) + name
    return header + b"\0" * (-len(header) % 4)


def cpio_newc(entries: Iterable[CpioEntry]) -> bytes:
    """A newc ("070701") cpio archive of ``entries``, with its trailer."""
    parts: list[bytes] = []
    for ino, entry in enumerate(entries, start=1):
        parts.append(_cpio_header(ino, entry, len(entry.data)))
        parts.append(entry.data + b"\0" * (-len(entry.data) % 4))
    parts.append(_cpio_header(0, CpioEntry("TRAILER!!!", 0), 0))
    archive = b"".join(parts)
    return archive + b"\0" * (-len(archive) % 512)


def _dirs_of(paths: Iterable[str]) -> list[str]:
    dirs: set[str] = set()
    for path in paths:
        parts = path.split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return sorted(dirs, key=lambda d: (d.count("/"), d))


def _module_bytes(path: Path) -> bytes:
    if path.suffix == ".xz":
        return lzma.decompress(path.read_bytes())
    if path.suffix in (".zst", ".gz"):
        raise LabError(f"{path}: compressed modules ({path.suffix}) are not supported; use .ko or .ko.xz")
    return path.read_bytes()


def base_entries(kernel: GuestKernel, busybox: Path = BUSYBOX) -> list[CpioEntry]:
    """Everything of the common initramfs: /init, busybox and its links, the boot modules."""
    if not busybox.is_file():
        raise MissingToolError(f"{busybox} not found (busybox-static): {SETUP_HINT}")
    modules = module_load_order(kernel.modules_dir, BOOT_MODULES)
    stored = [m.removesuffix(".xz") for m in modules]
    files = ["bin/busybox", INIT_PATH, "modules.load", *stored]
    entries = [CpioEntry(d, 0o040755) for d in _dirs_of([*files, "dev/x", "vnetbench/x"])]
    entries.append(CpioEntry("dev/console", 0o020600, rdev=(5, 1)))
    entries.append(CpioEntry("bin/busybox", 0o100755, busybox.read_bytes()))
    entries += [CpioEntry(f"bin/{a}", 0o120777, b"busybox") for a in BUSYBOX_APPLETS]
    entries.append(CpioEntry(INIT_PATH, 0o100755, INIT_SCRIPT.encode()))
    entries.append(CpioEntry("modules.load", 0o100644, "\n".join(stored).encode() + b"\n"))
    entries += [CpioEntry(s, 0o100644, _module_bytes(kernel.modules_dir / m))
                for m, s in zip(modules, stored, strict=True)]
    return entries


def build_initramfs(kernel: GuestKernel, busybox: Path = BUSYBOX) -> Path:
    """The common initramfs of ``kernel`` (built once, cached next to the kernel)."""
    entries = base_entries(kernel, busybox)
    digest = hashlib.sha256()
    for entry in entries:
        digest.update(entry.name.encode() + b"\0" + entry.data)
    path = kernel.root / f"initramfs-{digest.hexdigest()[:16]}.cpio"
    if not path.is_file():
        write_atomically(path, cpio_newc(entries))
    return path


def boot_env(values: Mapping[str, str]) -> bytes:
    """``/vnetbench/boot.env``: shell assignments /init sources (each value quoted)."""
    for key in values:
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", key):
            raise ValueError(f"bad boot.env variable name {key!r}")
    return "".join(f"{k}={shlex.quote(v)}\n" for k, v in values.items()).encode()


def guest_initrd(base: Path, boot_values: Mapping[str, str], config_json: bytes, dest: Path) -> Path:
    """``dest``: the common initramfs followed by a cpio with this guest's boot.env and config."""
    extra = cpio_newc([
        CpioEntry("vnetbench", 0o040755),
        CpioEntry(BOOT_ENV_PATH, 0o100644, boot_env(boot_values)),
        CpioEntry(CONFIG_PATH, 0o100600, config_json),
    ])
    write_atomically(dest, base.read_bytes() + extra, 0o600)
    return dest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m vnetbench.backends.vm.guest_kernel",
                                     description="Fetch or check the vm backend's guest kernel.")
    parser.add_argument("action", choices=["fetch", "check"])
    parser.add_argument("--cache", type=Path, default=KERNEL_CACHE)
    args = parser.parse_args(argv)
    try:
        kernel = fetch_kernel(args.cache) if args.action == "fetch" else find_kernel(args.cache)
        extract_vmlinux(kernel)
        initramfs = build_initramfs(kernel)
    except (LabError, MissingToolError) as exc:
        print(f"guest_kernel: {exc}", file=sys.stderr)
        return 1
    print(f"guest kernel {kernel.version}: {kernel.boot_image}; initramfs {initramfs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
