"""One QEMU guest of the ``vm`` backend: its command line, boot wait, commands, shutdown.

``Guest(spec)`` prepares the guest's directory (``spec.work_dir``): a random token (mode
0600), the guest's initramfs (the common one of ``guest_kernel`` plus this guest's
configuration) and the paths of its console log and pid file. ``qemu_argv()`` is the full,
pure command line; the caller starts it itself (in the network namespace of its TAP devices,
in its cgroup, tracking the PID), then calls ``wait_ready(proc, timeout)``, which polls the
agent through the management port until it answers, and raises LabError with the tail of the
console log (and QEMU's stderr, when it is a pipe) if QEMU exits or the agent stays silent.

The guest boots Debian's kernel straight from ``-kernel``/``-initrd`` (q35, qboot instead of
SeaBIOS, no option ROMs; the kernel as its uncompressed ELF through the PVH entry when
``guest_kernel`` extracted it: under TCG that reaches the agent in ~5.5 s against ~9.8 s for
the bzImage, which spends ~4 s decompressing itself; microvm (``pcie=on``) was no faster with
the bzImage and did not boot the ELF), with the host's / shared read-only over
virtio-9p, one virtio-net-pci NIC per ``Nic`` on ``-netdev tap`` (the TAP exists already)
and a management NIC on QEMU user networking (slirp, ``restrict=on``: no route out) whose
only way in is ``hostfwd`` from 127.0.0.1:<port> of QEMU's network namespace to the agent.
Its subnet (10.0.2.0/24) is outside the lab's ranges (10.200-254/16, 172.16-31/16) and it has
no default route, so no lab traffic can leave through it.

``exec_argv(argv)`` is a host argv (``python3 -m vnetbench.backends.vm.client ...``) that
runs ``argv`` in the guest and behaves like a local process (see ``client.py``); it joins
QEMU's network namespace itself, so it works from any namespace. ``run`` wraps it like
``subprocess.run``. ``shutdown(proc, grace)`` asks the agent to power off, waits ``grace``
seconds and SIGKILLs QEMU (by the PID of ``proc`` and of the pid file) if it is still there.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vnetbench.backends.vm import agent as proto
from vnetbench.backends.vm.find import QEMU, find_qemu
from vnetbench.backends.vm.guest_kernel import (
    ROOT_TAG,
    GuestKernel,
    build_initramfs,
    find_kernel,
    guest_initrd,
)
from vnetbench.errors import CommandError, LabError
from vnetbench.host.netns import NETNS_DIR, setns, submit_in_thread

QBOOT = Path("/usr/share/qemu/qboot.rom")
MGMT_NET = "10.0.2.0/24"
MGMT_HOST = "10.0.2.2"
MGMT_GUEST = "10.0.2.15"
MGMT_PREFIX = 24
MGMT_MAC = "52:54:00:76:6e:62"
MGMT_NAME = "mgmt0"
NINEP_MSIZE = 512 * 1024
NINEP_CACHE = "mmap"
"""9p caching: ``mmap`` boots as fast as ``loose`` but shows a host file's new content (loose
keeps the old one). Either way the overlay keeps a failed lookup: a file the host creates
after the guest looked for it stays invisible there."""
KERNEL_ARGS = ("console=ttyS0", "quiet", "panic=-1", "rdinit=/init", "8250.nr_uarts=1",
               "i8042.noaux", "i8042.nokbd", "i8042.nopnp", "mitigations=off",
               "random.trust_cpu=on", "tsc=reliable")
CONSOLE_TAIL_LINES = 15
PING_TIMEOUT_S = 3.0
POLL_INTERVAL_S = 0.1
CONSOLE_SILENT_S = 30.0
"""Seconds after which the agent is pinged although the console has not said it is ready."""
STANDARD_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")

_HANDED_OUT: set[int] = set()

_IFNAME = re.compile(r"[A-Za-z0-9_.-]{1,15}")
_MAC = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")
_HOSTNAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,62})")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Nic:
    """A lab NIC of a guest: an existing TAP device, its MAC, and its name in the guest."""

    tap: str
    mac: str
    guest_name: str


@dataclass(frozen=True)
class GuestSpec:
    """What one guest is: name, NICs, size, accelerator, directory, boot commands."""

    name: str
    hostname: str
    nics: tuple[Nic, ...]
    vcpus: int
    memory_mib: int
    accel: str
    work_dir: Path
    boot_commands: tuple[tuple[str, ...], ...] = ()
    disk: Path | None = None
    """A sparse raw file of ``disk_mib`` MiB the guest gets as its virtio disk (/dev/vda)."""
    disk_mib: int = 0


def validate(spec: GuestSpec) -> None:
    """ValueError naming the first field of ``spec`` QEMU or the guest would refuse."""
    checks = [
        (bool(_NAME.fullmatch(spec.name)), f"name {spec.name!r}: letters, digits, _ . - (64 at most)"),
        (bool(_HOSTNAME.fullmatch(spec.hostname)), f"hostname {spec.hostname!r} is not a host name"),
        (spec.vcpus >= 1, f"vcpus {spec.vcpus} < 1"),
        (spec.memory_mib >= 256, f"memory_mib {spec.memory_mib} < 256 (the guest runs Python from 9p)"),
        (spec.accel in ("kvm", "tcg"), f"accel {spec.accel!r} is not kvm or tcg"),
        (spec.disk is None or (spec.disk_mib >= 64 and "," not in str(spec.disk)),
         f"disk {spec.disk} of {spec.disk_mib} MiB: at least 64 MiB, and no comma in its path"),
    ]
    guest_names = [nic.guest_name for nic in spec.nics]
    macs = [nic.mac.lower() for nic in spec.nics]
    checks += [
        (len(set(guest_names)) == len(guest_names) and MGMT_NAME not in guest_names,
         f"guest NIC names {guest_names} repeat or use {MGMT_NAME}"),
        (len(set(macs)) == len(macs) and MGMT_MAC not in macs, f"NIC MACs {macs} repeat or use {MGMT_MAC}"),
    ]
    for nic in spec.nics:
        checks += [(bool(_IFNAME.fullmatch(nic.tap)), f"tap {nic.tap!r} is not an interface name"),
                   (bool(_IFNAME.fullmatch(nic.guest_name)), f"guest_name {nic.guest_name!r} is not one"),
                   (bool(_MAC.fullmatch(nic.mac.lower())), f"mac {nic.mac!r} is not aa:bb:cc:dd:ee:ff")]
    for ok, what in checks:
        if not ok:
            raise ValueError(f"guest {spec.name}: {what}")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (in this process's network namespace) and not handed
    out before by this process (guests of one lab share QEMU's namespace)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def guest_path() -> str:
    """PATH in the guest: this Python's directory first (a virtual environment's bin/, whose
    python3 has vnetbench; then the interpreter's own, not a shim), then this PATH."""
    dirs = [str(Path(sys.executable).absolute().parent), str(Path(sys.executable).resolve().parent)]
    dirs += [d for d in os.environ.get("PATH", "").split(":") if d]
    dirs += STANDARD_PATH
    return ":".join(dict.fromkeys(dirs))


def console_tail(path: Path, lines: int = CONSOLE_TAIL_LINES) -> str:
    """The last lines of a console log, joined with " | " (for one-line errors)."""
    try:
        text = path.read_bytes().decode(errors="replace")
    except OSError:
        return "(no console log)"
    kept = [line.strip() for line in text.replace("\r", "").splitlines() if line.strip()]
    return " | ".join(kept[-lines:]) or "(console log empty)"


def guest_failure(path: Path) -> str | None:
    """The guest's own last word on why it stopped (init, agent, kernel panic), if any."""
    try:
        lines = path.read_bytes().decode(errors="replace").replace("\r", "").splitlines()
    except OSError:
        return None
    said = [line.strip() for line in lines if "FAILED" in line or "Kernel panic" in line]
    return said[-1] if said else None


def netns_of(pid: int) -> str:
    """A path naming the network namespace of ``pid``: its /run/netns name when it has one."""
    proc_path = f"/proc/{pid}/ns/net"
    inode = os.stat(proc_path).st_ino
    if NETNS_DIR.is_dir():
        for entry in NETNS_DIR.iterdir():
            with contextlib.suppress(OSError):
                if entry.stat().st_ino == inode:
                    return str(entry)
    return proc_path


def connect_in(netns: str | None, port: int, timeout: float) -> socket.socket:
    """A TCP connection to 127.0.0.1:port made from inside ``netns`` (None: our own)."""
    def dial() -> socket.socket:
        if netns is not None:
            fd = os.open(netns, os.O_RDONLY | os.O_CLOEXEC)
            try:
                setns(fd)
            finally:
                os.close(fd)
        return socket.create_connection(("127.0.0.1", port), timeout=timeout)

    return submit_in_thread(dial).result() if netns else dial()


def agent_op(netns: str | None, port: int, token: str, op: str, timeout: float) -> int:
    """Run a one-shot agent op (ping, poweroff); its status, OSError/EOFError if unanswered."""
    with connect_in(netns, port, timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(json.dumps({"token": token, "op": op}).encode() + b"\n")
        kind, payload = proto.recv_frame(sock)
    if kind != proto.EXIT:
        raise EOFError(f"agent answered {op} with frame {kind}: {payload[:200]!r}")
    return int(proto.STATUS.unpack(payload)[0])


@dataclass(frozen=True)
class QemuFiles:
    """The host files one QEMU command line names."""

    kernel: Path
    initrd: Path
    console: Path
    pidfile: Path
    port: int


def net_args(spec: GuestSpec, port: int) -> list[str]:
    fwd = f"tcp:127.0.0.1:{port}-{MGMT_GUEST}:{proto.AGENT_PORT}"
    args = ["-netdev", f"user,id=mgmt,net={MGMT_NET},host={MGMT_HOST},restrict=on,hostfwd={fwd}",
            "-device", f"virtio-net-pci,netdev=mgmt,mac={MGMT_MAC},romfile="]
    for i, nic in enumerate(spec.nics):
        args += ["-netdev", f"tap,id=lab{i},ifname={nic.tap},script=no,downscript=no",
                 "-device", f"virtio-net-pci,netdev=lab{i},mac={nic.mac.lower()},romfile="]
    return args


def qemu_command(spec: GuestSpec, files: QemuFiles, qemu: str = QEMU) -> list[str]:
    """The full QEMU argv of ``spec`` (pure)."""
    cpu = "host" if spec.accel == "kvm" else "max"
    argv = [qemu, "-name", spec.name, "-nodefaults", "-no-user-config", "-nographic",
            "-monitor", "none", "-no-reboot",
            "-machine", "q35", "-accel", spec.accel, "-cpu", cpu,
            "-smp", str(spec.vcpus), "-m", str(spec.memory_mib)]
    if QBOOT.is_file():
        argv += ["-bios", str(QBOOT)]
    argv += ["-kernel", str(files.kernel), "-initrd", str(files.initrd),
             "-append", " ".join(KERNEL_ARGS),
             "-serial", f"file:{files.console}", "-pidfile", str(files.pidfile),
             "-fsdev", f"local,id={ROOT_TAG},path=/,security_model=none,readonly=on,multidevs=remap",
             "-device", f"virtio-9p-pci,fsdev={ROOT_TAG},mount_tag={ROOT_TAG}",
             "-device", "virtio-rng-pci"]
    if spec.disk is not None:
        argv += ["-drive", f"file={spec.disk},format=raw,if=none,id=disk0,cache=unsafe,"
                 "discard=unmap,aio=threads",
                 "-device", "virtio-blk-pci,drive=disk0"]
    return argv + net_args(spec, files.port)


def guest_config(spec: GuestSpec, token: str) -> dict[str, object]:
    """The agent's configuration (``/run/vnetbench/config.json`` in the guest)."""
    return {
        "token": token,
        "hostname": spec.hostname,
        "port": proto.AGENT_PORT,
        "mgmt": {"mac": MGMT_MAC, "name": MGMT_NAME, "address": MGMT_GUEST, "prefix": MGMT_PREFIX},
        "nics": [{"mac": nic.mac.lower(), "name": nic.guest_name} for nic in spec.nics],
        "boot_commands": [list(argv) for argv in spec.boot_commands],
        "env": {"PATH": guest_path(), "HOME": "/root", "LANG": "C.UTF-8", "TERM": "dumb"},
    }


def boot_values(kernel: GuestKernel) -> dict[str, str]:
    """What /init needs: root mount options, the modules to bind, Python and the agent."""
    return {
        "ROOT_TAG": ROOT_TAG,
        "MSIZE": str(NINEP_MSIZE),
        "CACHE": NINEP_CACHE,
        "KVER": kernel.version,
        "MODULES": str(kernel.modules_dir.resolve()),
        "PYTHON": str(Path(sys.executable).resolve()),
        "AGENT": str(Path(proto.__file__).resolve()),
    }


class Guest:
    """A prepared guest: files in ``spec.work_dir``; QEMU is started by the caller."""

    def __init__(self, spec: GuestSpec, kernel: GuestKernel | None = None) -> None:
        validate(spec)
        self.spec = spec
        self.kernel = kernel or find_kernel()
        spec.work_dir.mkdir(parents=True, exist_ok=True)
        self.token_file = spec.work_dir / "token"
        self.console_log = spec.work_dir / "console.log"
        self.pidfile = spec.work_dir / "qemu.pid"
        self.initrd = spec.work_dir / "initrd.img"
        self.port = free_port()
        self.qemu_pid: int | None = None
        self.netns: str | None = None
        token = secrets.token_hex(32)
        fd = os.open(self.token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
        self._token = token
        config = json.dumps(guest_config(spec, token)).encode()
        guest_initrd(build_initramfs(self.kernel), boot_values(self.kernel), config, self.initrd)
        self.console_log.unlink(missing_ok=True)
        if spec.disk is not None:  # sparse: this host's disk is used as the guest writes
            spec.disk.parent.mkdir(parents=True, exist_ok=True)
            with open(spec.disk, "wb") as f:
                f.truncate(spec.disk_mib * 2**20)

    def files(self) -> QemuFiles:
        return QemuFiles(self.kernel.boot_image, self.initrd, self.console_log, self.pidfile, self.port)

    def qemu_argv(self) -> list[str]:
        """The full QEMU command line (the caller runs it)."""
        return qemu_command(self.spec, self.files(), find_qemu())

    def _boot_failed(self, proc: subprocess.Popen[bytes], why: str) -> LabError:
        stderr = ""
        if proc.poll() is not None and proc.stderr is not None:
            with contextlib.suppress(OSError, ValueError):
                stderr = " ".join(proc.stderr.read().decode(errors="replace").split())[-500:]
        qemu_said = f"; qemu: {stderr}" if stderr else ""
        guest_said = guest_failure(self.console_log)
        if guest_said:
            why = f"{guest_said} ({why})"
        return LabError(f"vm guest {self.spec.name} did not boot: {why}{qemu_said}; "
                        f"console ({self.console_log}): {console_tail(self.console_log)}")

    def wait_ready(self, proc: subprocess.Popen[bytes], timeout: float) -> None:
        """Block until the agent answers; LabError with the console tail otherwise."""
        self.qemu_pid = proc.pid
        start = time.monotonic()
        while True:
            if proc.poll() is not None:
                raise self._boot_failed(proc, f"qemu exited with status {proc.returncode}")
            if self.netns is None:
                with contextlib.suppress(OSError):
                    self.netns = netns_of(proc.pid)
            # Pinging before the guest listens costs a slirp SYN retransmission (1 s): wait
            # for the agent's console line (unless the console stays silent for long).
            waited = time.monotonic() - start
            if self.netns is not None and (self._said_ready() or waited > CONSOLE_SILENT_S) \
                    and self._answers():
                return
            if waited > timeout:
                raise self._boot_failed(proc, f"the agent did not answer within {timeout:g} s "
                                              f"(accel {self.spec.accel}; raise the timeout under tcg)")
            time.sleep(POLL_INTERVAL_S)

    def _said_ready(self) -> bool:
        try:
            return f"{proto.LOG_PREFIX}{proto.READY}".encode() in self.console_log.read_bytes()
        except OSError:
            return False

    def _answers(self) -> bool:
        try:
            return agent_op(self.netns, self.port, self._token, "ping", PING_TIMEOUT_S) == 0
        except OSError as exc:
            if exc.errno == errno.ENETUNREACH:
                raise LabError(f"vm guest {self.spec.name}: 127.0.0.1 is unreachable in QEMU's network "
                               f"namespace {self.netns}: bring its loopback up (ip link set lo up)") from exc
            return False
        except EOFError:
            return False

    def exec_argv(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
                  cwd: str | None = None) -> list[str]:
        """A host argv running ``argv`` in the guest (stdio relayed, exit status kept)."""
        if self.netns is None:
            raise LabError(f"vm guest {self.spec.name}: exec before wait_ready (QEMU's namespace unknown)")
        host = [sys.executable, "-P", "-m", "vnetbench.backends.vm.client", "--port", str(self.port),
                "--token-file", str(self.token_file), "--netns", self.netns]
        for key, value in (env or {}).items():
            host += ["--env", f"{key}={value}"]
        if cwd is not None:
            host += ["--cwd", cwd]
        return [*host, "--", *argv]

    def run(self, argv: Sequence[str], timeout: float = 60.0, check: bool = True,
            input_text: str | None = None, env: Mapping[str, str] | None = None,
            cwd: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` in the guest to its end (like ``subprocess.run``, output captured)."""
        stdin = None if input_text is not None else subprocess.DEVNULL
        try:
            proc = subprocess.run(self.exec_argv(argv, env, cwd), input=input_text, stdin=stdin,
                                  capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise LabError(f"`{' '.join(argv)}` in vm guest {self.spec.name} did not end within "
                           f"{timeout:g} s (killed)") from exc
        if check and proc.returncode != 0:
            raise CommandError(argv, proc.returncode, proc.stderr, where=f"vm guest {self.spec.name}")
        return proc

    def shutdown(self, proc: subprocess.Popen[bytes], grace: float) -> None:
        """Power off through the agent, wait ``grace`` s, then SIGKILL QEMU (idempotent)."""
        if proc.poll() is None and self.netns is not None:
            with contextlib.suppress(OSError, EOFError):
                agent_op(self.netns, self.port, self._token, "poweroff", min(grace, PING_TIMEOUT_S))
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        self._kill_pidfile_qemu(proc.pid)

    def _kill_pidfile_qemu(self, known: int) -> None:
        """SIGKILL the pid file's QEMU when it is another process than ``known`` (a wrapper
        started QEMU) and is still this guest's."""
        try:
            pid = int(self.pidfile.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            return
        if pid != known and self.spec.name.encode() in cmdline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
