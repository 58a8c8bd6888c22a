"""Host side of an exec session with a ``vm`` guest's agent (protocol: ``agent.py``).

    python3 -m vnetbench.backends.vm.client --port P --token-file F [--netns PATH]
        [--env K=V ...] [--cwd D] -- argv...

runs ``argv`` in the guest and behaves like that process would locally: stdin, stdout and
stderr are relayed, the exit status is the remote one (a remote death by signal N ends this
process by signal N too, so ``subprocess`` reports ``-N``), SIGTERM, SIGINT, SIGHUP, SIGQUIT,
SIGUSR1 and SIGUSR2 are forwarded to the remote process group, and when this process dies
(SIGKILL included) the agent kills the remote group. So a ``subprocess.Popen`` of this module
can be ``communicate()``-d, ``wait()``-ed, ``terminate()``-d and ``kill()``-ed like a local
one. ``--netns`` (e.g. ``/proc/<qemu pid>/ns/net``) is the network namespace where QEMU
listens on 127.0.0.1 for the forwarded management port; the client joins it to connect.
Failures of the client itself (agent unreachable, connection lost, command not found) exit
255 (127 for a command that cannot be started) with one line on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType

from vnetbench.backends.vm.agent import (
    ERROR,
    EXIT,
    SIGNAL,
    STARTED,
    STATUS,
    STDERR,
    STDIN,
    STDIN_EOF,
    STDOUT,
    Sender,
    recv_frame,
)

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
CLIENT_FAILED = 255
NOT_STARTED = 127
CHUNK = 65536


class ClientError(Exception):
    """The session could not be run (one line for stderr)."""


def join_netns(path: str) -> None:
    """Move this process's (only) thread into the network namespace at ``path``."""
    from vnetbench.host.netns import setns

    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        setns(fd)
    finally:
        os.close(fd)


def connect(host: str, port: int, timeout: float) -> socket.socket:
    """A TCP connection to the agent (no retry: the guest is expected to be up)."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        raise ClientError(f"cannot reach the guest agent at {host}:{port}: {exc}") from exc
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def request_line(token: str, op: str, argv: Sequence[str], env: Mapping[str, str], cwd: str | None) -> bytes:
    request = {"token": token, "op": op, "argv": list(argv), "env": dict(env), "cwd": cwd}
    return json.dumps(request).encode() + b"\n"


def _write_all(fd: int, data: bytes) -> None:
    with contextlib.suppress(OSError):  # the reader went away: drop, like a closed pipe
        while data:
            data = data[os.write(fd, data):]


def _relay_stdin(sender: Sender) -> None:
    """Our stdin to the remote command, then STDIN_EOF."""
    while True:
        try:
            data = os.read(0, CHUNK)
        except OSError:
            data = b""
        if not data:
            sender.send(STDIN_EOF)
            return
        if not sender.send(STDIN, data):
            return


def _forward_signals(sender: Sender) -> None:
    def forward(signum: int, _frame: FrameType | None) -> None:
        sender.send(SIGNAL, STATUS.pack(signum))

    for sig in FORWARDED:
        signal.signal(sig, forward)
    # a parent may have started us with these blocked (and the mask is inherited)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)


def exit_like(status: int) -> None:
    """End this process the way the remote command ended."""
    sys.stdout.flush()
    sys.stderr.flush()
    if status < 0:
        with contextlib.suppress(OSError, ValueError):  # SIGKILL/SIGSTOP have no handler
            signal.signal(-status, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [-status])
        os.kill(os.getpid(), -status)
        time.sleep(1)
        os._exit(128 - status)
    os._exit(status)


def wait_started(sock: socket.socket) -> tuple[int, bytes]:
    """The first frame: STARTED, or EXIT/ERROR of an op that ends at once."""
    try:
        return recv_frame(sock)
    except (EOFError, OSError) as exc:
        raise ClientError("the guest agent closed the connection (wrong token?)") from exc


def relay(sock: socket.socket) -> int:
    """Relay output frames until EXIT; the remote status."""
    while True:
        try:
            kind, payload = recv_frame(sock)
        except (EOFError, OSError) as exc:
            raise ClientError(f"connection to the guest agent lost: {exc}") from exc
        if kind == STDOUT:
            _write_all(1, payload)
        elif kind == STDERR:
            _write_all(2, payload)
        elif kind == EXIT:
            return int(STATUS.unpack(payload)[0])
        elif kind == ERROR:
            raise ClientError(payload.decode(errors="replace"))


def session(sock: socket.socket, line: bytes) -> int:
    """Send the request and run the session to its end; the remote status."""
    sender = Sender(sock)
    sock.sendall(line)
    kind, payload = wait_started(sock)
    if kind == EXIT:
        return int(STATUS.unpack(payload)[0])
    if kind == ERROR:
        print(f"vm client: {payload.decode(errors='replace')}", file=sys.stderr)
        return NOT_STARTED
    if kind != STARTED:
        raise ClientError(f"unexpected first frame {kind} from the guest agent")
    _forward_signals(sender)
    threading.Thread(target=_relay_stdin, args=(sender,), daemon=True).start()
    return relay(sock)


def parse_env(pairs: Sequence[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ClientError(f"--env {pair!r} is not KEY=VALUE")
        env[key] = value
    return env


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m vnetbench.backends.vm.client",
                                description="Run a command in a vm guest through its agent.")
    p.add_argument("--port", type=int, required=True, help="forwarded management port on --host")
    p.add_argument("--token-file", type=Path, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--netns", help="network namespace file to connect from (/proc/PID/ns/net)")
    p.add_argument("--env", action="append", default=[], metavar="K=V")
    p.add_argument("--cwd")
    p.add_argument("--op", choices=["exec", "ping", "poweroff"], default="exec")
    p.add_argument("--connect-timeout", type=float, default=10.0)
    p.add_argument("argv", nargs="*")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.op == "exec" and not args.argv:
            raise ClientError("no command given (put it after --)")
        token = args.token_file.read_text().strip()
        if args.netns:
            join_netns(args.netns)
        sock = connect(args.host, args.port, args.connect_timeout)
        line = request_line(token, args.op, args.argv, parse_env(args.env), args.cwd)
        status = session(sock, line)
    except (ClientError, OSError) as exc:
        print(f"vm client: {exc}", file=sys.stderr)
        return CLIENT_FAILED
    exit_like(status)
    return status


if __name__ == "__main__":
    sys.exit(main())
