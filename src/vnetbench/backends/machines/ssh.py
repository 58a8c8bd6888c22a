"""The transport to a real machine: one multiplexed OpenSSH master connection per machine.

``SshConnection.open`` starts a master (``ControlMaster``) whose socket lives in a control
directory; every later command runs as a client of that master, so it costs one channel,
not one TCP connection and key exchange. The user's own ssh setup is honoured (their
``~/.ssh/config``, agent and known_hosts) unless ``VNETBENCH_SSH_CONFIG`` names a config file
to use instead (``ssh -F``). ``BatchMode`` is always on: ssh never prompts, it fails, and the
failure becomes one line saying what to fix (``describe_ssh_failure``).

OpenSSH exits 255 on its own errors (cannot connect, key refused, master gone): a remote
command that exits 255 is therefore reported as a transport failure naming the host.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from types import TracebackType

from vnetbench.errors import CommandError, LabError, MissingToolError, UnsupportedError
from vnetbench.lab.spec import MachineSpec

SSH_CONFIG_ENV = "VNETBENCH_SSH_CONFIG"
"""When set: the ssh client config file to use (``ssh -F``) instead of the user's own."""

SSH_ERROR_EXIT = 255
"""What ssh exits with when ssh itself (not the remote command) failed."""

CONTROL_PERSIST_S = 600
"""The master exits after this long without any client (so a crashed run leaves no ssh
process behind for long); a later command then connects afresh on its own."""

MAX_CONTROL_PATH = 90
"""Longest control socket path: sun_path holds 107 bytes and ssh appends 17 while binding."""

DOCKER_MODES = ("private", "existing")

_SHELL_CHARS = set("'`\"$\\;&<>|(){}")
"""Characters OpenSSH refuses in a host or user name (ssh.c ``valid_hostname``,
``valid_ruser``), besides white space and control characters."""


def destination_problem(target: str) -> str | None:
    """What makes ``target`` something OpenSSH would refuse as a destination (``user@host``
    or a Host of the user's config), said before anything connects; None when it is fine."""
    if not target.strip():
        return "an empty ssh destination; give user@host or a Host of your ssh config"
    if target.startswith("-"):
        return (f"ssh destination {target[:40]!r} starts with '-' (it would read as an option); "
                "give user@host or a Host of your ssh config")
    bad = sorted({c for c in target if c in _SHELL_CHARS or c.isspace() or not c.isprintable()})
    if bad:
        return (f"ssh destination {target[:40]!r} holds characters ssh refuses in a host or "
                f"user name ({' '.join(repr(c) for c in bad)}); give user@host or a Host of "
                "your ssh config")
    return None


# (pattern in ssh's stderr, what it means and what to fix); the first match wins. "{0}" is
# the group named "why" if the pattern has one, else the matched text (the system's own
# words, e.g. "Connection refused").
_FAILURES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p, re.IGNORECASE), m) for p, m in (
    (r"Could not resolve hostname [^:]*: (?P<why>[^\r\n]*)",
     "unknown host name ({0}): check the name, or add a Host entry for it to your ssh config"),
    (r"Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|"
     r"No \S+ host key is known for \S+",
     "host key verification failed ({0}): the machine's host key is not in your known_hosts "
     "or has changed; check it and add it (connect once with `ssh`, or ssh-keyscan)"),
    (r"Permission denied \([^)]*\)|Too many authentication failures",
     "the key was refused ({0}): give the right `identity` or load it in your agent"),
    (r"Connection refused|Connection timed out|Operation timed out|No route to host|"
     r"Network is unreachable|Host is down|Connection reset by [^\r\n]*|"
     r"Connection closed by [^\r\n]*|kex_exchange_identification: [^\r\n]*|"
     r"banner exchange: [^\r\n]*",
     "cannot connect ({0}): check the address and that sshd runs"),
    (r"Bad configuration option: [^\r\n]*|Bad owner or permissions on [^\r\n]*|"
     r"[^\r\n]*line \d+: [^\r\n]*",
     "ssh refused its configuration ({0}): fix your ssh config"),
))


def describe_ssh_failure(target: str, stderr: str) -> str:
    """One line saying why ssh could not reach or log in to ``target`` and what to fix."""
    for pattern, meaning in _FAILURES:
        found = pattern.search(stderr)
        if found:
            why = found.group("why") if "why" in pattern.groupindex else found.group(0)
            return f"host {target}: " + meaning.format(why.strip().rstrip("."))
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return f"host {target}: ssh failed ({lines[-1] if lines else 'no message'})"


MASTER_EXIT_S = 5.0
"""How long ``close`` waits for the master to exit after ``ssh -O exit`` before SIGTERM."""


def master_pids(control_path: Path) -> list[int]:
    """PIDs of the ssh masters serving ``control_path`` (from /proc; zombies excluded)."""
    marker = ("ControlPath=" + str(control_path).replace("%", "%%")).encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"ssh" and marker in argv and b"ControlMaster=yes" in argv:
            found.append(int(entry.name))
    return found


def _wait_gone(control_path: Path, limit: float = MASTER_EXIT_S) -> None:
    """Wait until no master serves ``control_path``; SIGTERM (by PID) any left after ``limit``."""
    deadline = time.monotonic() + limit
    pids = master_pids(control_path)
    while pids and time.monotonic() < deadline:
        time.sleep(0.01)
        pids = master_pids(control_path)
    for pid in pids:
        with suppress(OSError):
            os.kill(pid, signal.SIGTERM)


def _control_socket(control_dir: Path) -> tuple[Path, Path | None]:
    """A fresh control socket path in ``control_dir`` (created), or in a short private
    directory under the system's temp dir when that path would be too long (returned
    second, to be removed by the caller)."""
    name = f"ssh-{secrets.token_hex(6)}"
    control_dir.mkdir(parents=True, exist_ok=True)
    path = control_dir / name
    if len(str(path)) <= MAX_CONTROL_PATH:
        return path, None
    private = Path(tempfile.mkdtemp(prefix="vnb-ssh-"))
    return private / name, private


class SshConnection:
    """One machine reached over one multiplexed OpenSSH connection."""

    def __init__(self, spec: MachineSpec, control_dir: Path, *, connect_timeout: float = 10.0) -> None:
        self.spec = spec
        self.connect_timeout = connect_timeout
        self.config = os.environ.get(SSH_CONFIG_ENV) or None
        self.identity = os.path.expanduser(spec.identity) if spec.identity else None
        self.control_path, self._private_dir = _control_socket(control_dir)
        self._opened = False

    @property
    def target(self) -> str:
        return self.spec.ssh

    @property
    def where(self) -> str:
        return f"host {self.target}"

    def __repr__(self) -> str:
        return f"SshConnection({self.target!r}, control={str(self.control_path)!r})"

    def _options(self) -> list[str]:
        """ssh's options shared by the master and every client."""
        opts: list[str] = []
        if self.config:
            opts += ["-F", self.config]
        opts += [
            "-o", "BatchMode=yes",
            "-o", f"ConnectTimeout={max(1, math.ceil(self.connect_timeout))}",
            "-o", "ControlPath=" + str(self.control_path).replace("%", "%%"),
            "-o", "ServerAliveInterval=15",
            "-o", "ServerAliveCountMax=3",
        ]
        if self.identity:
            opts += ["-i", self.identity, "-o", "IdentitiesOnly=yes"]
        if self.spec.port is not None:
            opts += ["-p", str(self.spec.port)]
        return opts

    def master_argv(self) -> list[str]:
        """The local argv starting the master (it backgrounds itself once logged in)."""
        return ["ssh", *self._options(), "-o", "ControlMaster=yes",
                "-o", f"ControlPersist={CONTROL_PERSIST_S}", "-f", "-N", "--", self.target]

    def argv(self, remote_argv: Sequence[str]) -> list[str]:
        """The local argv that runs ``remote_argv`` on the machine over the master; its stdin,
        stdout and stderr are the remote command's (for ``subprocess.Popen``)."""
        if not remote_argv:
            raise ValueError("remote_argv is empty")
        return ["ssh", *self._options(), "-o", "ControlMaster=no", "--", self.target,
                shlex.join(remote_argv)]

    def open(self) -> None:
        """Log in and start the master; UnsupportedError (one line: what to fix) if ssh cannot."""
        if self.identity and not os.path.isfile(self.identity):
            raise UnsupportedError(f"host {self.target}: identity {self.identity} does not exist: "
                                   f"give the path of a private key file")
        if self.config and not os.path.isfile(self.config):
            raise UnsupportedError(f"{SSH_CONFIG_ENV}={self.config} does not exist: unset it or "
                                   f"name an ssh config file")
        if shutil.which("ssh") is None:
            raise MissingToolError("ssh not found: apt-get install openssh-client")
        limit = self.connect_timeout + 30.0  # connecting, then key exchange and login
        # stderr to a file, not a pipe: the backgrounded master could hold a pipe open
        with tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.run(self.master_argv(), stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=err, timeout=limit,
                                      check=False)
            except subprocess.TimeoutExpired as exc:
                raise UnsupportedError(f"host {self.target}: cannot connect (no login within "
                                       f"{limit:.0f}s): check the address and that sshd runs") from exc
            err.seek(0)
            stderr = err.read().decode(errors="replace")
        if proc.returncode != 0:
            self._forget_socket()
            raise UnsupportedError(describe_ssh_failure(self.target, stderr))
        self._opened = True

    def is_open(self) -> bool:
        """Whether the master still answers (``ssh -O check``)."""
        with suppress(OSError, subprocess.SubprocessError):
            return subprocess.run(["ssh", *self._options(), "-O", "check", "--", self.target],
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=10,
                                  check=False).returncode == 0
        return False

    def _communicate(self, remote_argv: Sequence[str], stdin: bytes | None,
                     timeout: float) -> tuple[int, bytes, bytes]:
        argv = self.argv(remote_argv)
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except FileNotFoundError as exc:
            raise MissingToolError("ssh not found: apt-get install openssh-client") from exc
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            proc.kill()
            proc.communicate()
            raise LabError(f"host {self.target}: `{_short(remote_argv)}` did not finish within "
                           f"{timeout:g}s (local ssh killed)") from exc
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        if proc.returncode == SSH_ERROR_EXIT:
            text = err.decode(errors="replace")
            raise LabError(f"{describe_ssh_failure(self.target, text)} "
                           f"(running `{_short(remote_argv)}`)")
        return proc.returncode, out, err

    def run(self, remote_argv: Sequence[str], *, timeout: float = 60.0, check: bool = True,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``remote_argv`` on the machine; CommandError on a non-zero exit when ``check``,
        LabError when ssh itself failed (exit 255) or the command outlived ``timeout``."""
        data = input_text.encode() if input_text is not None else None
        rc, out, err = self._communicate(remote_argv, data, timeout)
        stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
        if check and rc != 0:
            raise CommandError(remote_argv, rc, stderr or stdout, where=self.where)
        return subprocess.CompletedProcess(list(remote_argv), rc, stdout, stderr)

    def run_script(self, script: str, *, timeout: float = 60.0,
                   check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a POSIX shell script on the machine (``sh -s``, the script on stdin)."""
        return self.run(["sh", "-s"], timeout=timeout, check=check, input_text=script)

    def read_text(self, path: str, *, timeout: float = 60.0) -> str:
        """The text of file ``path`` on the machine."""
        return self.run(["cat", "--", path], timeout=timeout).stdout

    def put(self, local: Path, remote_path: str, mode: int = 0o755, *, timeout: float = 300.0) -> str:
        """Copy ``local`` to ``remote_path`` (parent made; written under a temp name, then
        renamed) unless the remote file already has the same SHA-256; the copy's hash is
        checked on the machine (LabError on a mismatch). The hex digest."""
        data = local.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        path = shlex.quote(remote_path)
        same = (f'h=$(sha256sum < {path} 2>/dev/null) || exit 0\n'
                f'[ "${{h%% *}}" = {digest} ] && chmod {mode:o} {path} && echo same\n')
        if self.run(["sh", "-c", same], timeout=60.0).stdout.strip() == "same":
            return digest
        rc, out, err = self._communicate(["sh", "-c", _write_script(remote_path, mode, "sha256sum <")],
                                         data, timeout)
        if rc != 0:
            raise CommandError(["copy", str(local), "to", remote_path], rc,
                               err.decode(errors="replace"), where=self.where)
        got = out.decode(errors="replace").split()
        if not got or got[0] != digest:
            raise LabError(f"host {self.target}: the copy of {local} at {remote_path} is corrupt "
                           f"(sha256 {got[0] if got else 'unknown'} instead of {digest})")
        return digest

    def put_text(self, remote_path: str, text: str, mode: int = 0o600, *, timeout: float = 60.0) -> None:
        """Write ``text`` to ``remote_path`` (parent made; temp name, then renamed; never
        readable by others while written)."""
        rc, out, err = self._communicate(["sh", "-c", _write_script(remote_path, mode, None)],
                                         text.encode(), timeout)
        if rc != 0:
            raise CommandError(["write", remote_path], rc, err.decode(errors="replace") or
                               out.decode(errors="replace"), where=self.where)

    def close(self) -> None:
        """Stop the master (``ssh -O exit``) and wait until its process is gone (the master
        answers the request before it exits; one still there after ``MASTER_EXIT_S`` is sent
        SIGTERM, by PID); never raises."""
        with suppress(OSError, subprocess.SubprocessError):
            if self._opened or self.control_path.exists():
                subprocess.run(["ssh", *self._options(), "-O", "exit", "--", self.target],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=15, check=False)
        _wait_gone(self.control_path)
        self._opened = False
        self._forget_socket()

    def _forget_socket(self) -> None:
        with suppress(OSError):
            if self.control_path.is_socket():
                self.control_path.unlink()
        if self._private_dir is not None:
            shutil.rmtree(self._private_dir, ignore_errors=True)

    def __enter__(self) -> SshConnection:
        self.open()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


WORK_ROOT = "/var/tmp/vnetbench-remote"
"""Where runs keep their files on a machine (``scripts.remote_dir``): in world-writable
/var/tmp, so checked before every write (``trusted_root``)."""


def trusted_root(root: str = WORK_ROOT, make: bool = True) -> list[str]:
    """sh lines: refuse (exit 3, one line on stderr saying what to do) a work root another
    user could have planted: a link or a file in its place, a directory owned by anyone but
    root (or the user vnetbench logs in as), or one others may write in; ``make``: create it
    0700 when absent."""
    r = shlex.quote(root)
    return [
        f"if [ -L {r} ] || {{ [ -e {r} ] && [ ! -d {r} ]; }}; then echo \"{root} is not a "
        f"plain directory (a link or a file made by someone else): remove it\" >&2; exit 3; fi",
        f"[ -d {r} ] || mkdir -m 0700 {r}" if make else f"[ -d {r} ] || exit 0",
        f"o=$(stat -c %u {r}); m=$(stat -c %a {r})",
        f"if [ \"$o\" != 0 ] && [ \"$o\" != \"$(id -u)\" ]; then echo \"{root} belongs to uid "
        f"$o, not to root: another user made it first; remove it (rm -rf {root})\" >&2; "
        "exit 3; fi",
        f"if [ $(( 0$m & 022 )) -ne 0 ]; then echo \"{root} is writable by others (mode $m): "
        f"chmod 0700 {root}, or remove it\" >&2; exit 3; fi",
    ]


def _write_script(remote_path: str, mode: int, then: str | None) -> str:
    """sh: stdin -> ``remote_path`` (parent made, private temp name, chmod, rename), then
    ``then <file>`` (e.g. print its hash); under the work root, the root checked first."""
    path = shlex.quote(remote_path)
    parent = shlex.quote(os.path.dirname(remote_path) or ".")
    tmp = shlex.quote(f"{remote_path}.vnb-tmp")
    checked = trusted_root() if remote_path.startswith(WORK_ROOT + "/") else []
    lines = [
        "set -e",
        "umask 077",
        *checked,
        f"mkdir -p {parent}",
        f"tmp={tmp}.$$",
        "trap 'rm -f \"$tmp\"' EXIT",
        'cat > "$tmp"',
        f'chmod {mode:o} "$tmp"',
        f'mv -f "$tmp" {path}',
    ]
    if then:
        lines.append(f"{then} {path}")
    return "\n".join(lines) + "\n"


def _short(argv: Sequence[str], limit: int = 80) -> str:
    """``argv`` as one short line for a message."""
    text = " ".join(shlex.join(argv).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
