"""The exec agent inside a ``vm`` guest, and the guest's init (stage 2), stdlib only.

The guest's /init (busybox, in the initramfs) switches root to the host's file system and
execs ``python3 -I -S agent.py --init /run/vnetbench/config.json`` as PID 1. That process
forks the agent and then only reaps orphans; when the agent ends it powers the guest off, so
a failed boot ends QEMU instead of hanging. The agent first finishes the boot (hostname,
/etc/hosts, IPv6 off, loopback up, NICs renamed by MAC and brought up, the management NIC
addressed, then the configured boot commands) and then serves exec sessions on TCP on the
management address only, one thread per session.

Protocol (this module defines it; ``client.py`` is the other end). The client sends one JSON
line ``{"token", "op": "exec"|"ping"|"poweroff", "argv", "env", "cwd"}``; the token is
compared in constant time and a wrong one closes the connection. Then both sides exchange
frames ``type (1 byte) | length (4 bytes, big endian) | payload``:

    client -> agent   STDIN data, STDIN_EOF, SIGNAL (signal number, 4 bytes)
    agent -> client   STARTED (pid), STDOUT data, STDERR data, EXIT (status, 4 bytes signed,
                      negative = killed by that signal, as subprocess reports it), ERROR (text)

Each command runs in a new session (its own process group); signals are sent to that group,
and the whole group is killed with SIGKILL when the client disconnects, whether or not the
command has finished.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

TYPE_CHECKING = False  # the agent starts under TCG, where every import costs: no typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, BinaryIO

STDIN, STDIN_EOF, SIGNAL = 1, 2, 3
STARTED, STDOUT, STDERR, EXIT, ERROR = 10, 11, 12, 13, 14
FRAME = struct.Struct(">BI")
STATUS = struct.Struct(">i")
MAX_HELLO = 1 << 20
MAX_FRAME = 1 << 24
CHUNK = 65536
HELLO_TIMEOUT_S = 10.0
DRAIN_AFTER_EXIT_S = 1.0
"""How long output of an exited command is still relayed before EXIT (background children
holding the pipes open must not keep the session alive)."""
RB_POWER_OFF = 0x4321FEDC
READY = "ready on"
"""Logged (``vnetbench-agent: ready on ADDR:PORT``) when the agent listens."""
AGENT_PORT = 61999
"""The agent's TCP port in the guest (above the default ephemeral range, so no client gets it)."""


LOG_PREFIX = "vnetbench-agent: "


def log(message: str) -> None:
    """One line on the guest console (the VM's console log on the host)."""
    with contextlib.suppress(OSError):
        os.write(2, f"{LOG_PREFIX}{message}\n".encode())


# ---- framing ---------------------------------------------------------------------------


def recv_exact(sock: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes, or EOFError when the peer closed first."""
    parts: list[bytes] = []
    while size:
        chunk = sock.recv(min(size, CHUNK))
        if not chunk:
            raise EOFError("connection closed")
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def recv_frame(sock: socket.socket) -> tuple[int, bytes]:
    kind, length = FRAME.unpack(recv_exact(sock, FRAME.size))
    if length > MAX_FRAME:
        raise EOFError(f"frame of {length} bytes is too long")
    return kind, recv_exact(sock, length)


def recv_line(sock: socket.socket, limit: int = MAX_HELLO) -> bytes:
    """Bytes up to (not including) the first newline, read one at a time (no over-read)."""
    data = bytearray()
    while len(data) < limit:
        byte = sock.recv(1)
        if not byte:
            raise EOFError("connection closed before the request line")
        if byte == b"\n":
            return bytes(data)
        data += byte
    raise EOFError("request line too long")


class Sender:
    """Frames written to one socket from several threads."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()

    def send(self, kind: int, payload: bytes = b"") -> bool:
        """Send one frame; False when the peer is gone."""
        try:
            with self.lock:
                self.sock.sendall(FRAME.pack(kind, len(payload)) + payload)
        except OSError:
            return False
        return True


# ---- sessions ----------------------------------------------------------------------------


def _pump(stream: BinaryIO, kind: int, sender: Sender) -> None:
    """Relay one output pipe of the command until EOF."""
    fd = stream.fileno()
    while True:
        try:
            data = os.read(fd, CHUNK)
        except OSError:
            return
        if not data or not sender.send(kind, data):
            return


def _feed(proc: subprocess.Popen[bytes], inbox: queue.Queue[bytes | None]) -> None:
    """Write what the client sends to the command's stdin; close it at STDIN_EOF."""
    assert proc.stdin is not None
    while True:
        data = inbox.get()
        try:
            if data is None:
                proc.stdin.close()
                return
            proc.stdin.write(data)
            proc.stdin.flush()
        except (OSError, ValueError):
            return


def _kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class Session:
    """One exec request: the command, its relays, and the client connection."""

    def __init__(self, sock: socket.socket, request: Mapping[str, Any], base_env: Mapping[str, str]) -> None:
        self.sock = sock
        self.sender = Sender(sock)
        self.request = request
        self.base_env = base_env
        self.inbox: queue.Queue[bytes | None] = queue.Queue()

    def _spawn(self) -> subprocess.Popen[bytes] | None:
        env = dict(self.base_env)
        env.update({str(k): str(v) for k, v in (self.request.get("env") or {}).items()})
        argv = [str(a) for a in self.request.get("argv") or []]
        try:
            if not argv:
                raise ValueError("empty argv")
            return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env, start_new_session=True,
                                    cwd=str(self.request.get("cwd") or "/"))
        except (OSError, ValueError) as exc:
            self.sender.send(ERROR, f"cannot run {argv[:1]}: {exc}".encode())
            return None

    def run(self) -> None:
        proc = self._spawn()
        if proc is None:
            return
        assert proc.stdout is not None and proc.stderr is not None
        self.sender.send(STARTED, str(proc.pid).encode())
        pumps = [threading.Thread(target=_pump, args=(s, k, self.sender), daemon=True)
                 for s, k in ((proc.stdout, STDOUT), (proc.stderr, STDERR))]
        for t in pumps:
            t.start()
        threading.Thread(target=_feed, args=(proc, self.inbox), daemon=True).start()
        threading.Thread(target=self._finish, args=(proc, pumps), daemon=True).start()
        try:
            self._read_client(proc.pid)
        finally:
            _kill_group(proc.pid)  # the client is gone: nothing of the command may stay
            self.inbox.put(None)
            proc.wait()
            for t, stream in zip(pumps, (proc.stdout, proc.stderr), strict=True):
                t.join(DRAIN_AFTER_EXIT_S)
                if not t.is_alive():  # else a grandchild outside the group holds the pipe
                    stream.close()

    def _finish(self, proc: subprocess.Popen[bytes], pumps: Sequence[threading.Thread]) -> None:
        status = proc.wait()
        deadline = time.monotonic() + DRAIN_AFTER_EXIT_S
        for t in pumps:
            t.join(max(0.0, deadline - time.monotonic()))
        self.sender.send(EXIT, STATUS.pack(status))
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)

    def _read_client(self, pgid: int) -> None:
        while True:
            try:
                kind, payload = recv_frame(self.sock)
            except (EOFError, OSError):
                return
            if kind == STDIN:
                self.inbox.put(payload)
            elif kind == STDIN_EOF:
                self.inbox.put(None)
            elif kind == SIGNAL and len(payload) == STATUS.size:
                _kill_group(pgid, STATUS.unpack(payload)[0])


# ---- server ------------------------------------------------------------------------------


def power_off() -> None:
    """Sync and power the guest off now (QEMU exits)."""
    import ctypes

    os.sync()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.reboot(RB_POWER_OFF)
    log(f"reboot(POWER_OFF) failed: errno {ctypes.get_errno()}")


def read_request(sock: socket.socket, token: str) -> dict[str, Any] | None:
    """The client's request when its token is right, else None."""
    sock.settimeout(HELLO_TIMEOUT_S)
    try:
        request = json.loads(recv_line(sock))
    except (EOFError, OSError, ValueError):
        return None
    sock.settimeout(None)
    if not isinstance(request, dict):
        return None
    if not same_secret(str(request.get("token", "")), token):
        return None
    return request


def same_secret(given: str, expected: str) -> bool:
    """Constant-time comparison (``hmac.compare_digest`` without importing hashlib/OpenSSL)."""
    a, b = given.encode(), expected.encode()
    diff = len(a) ^ len(b)
    for x, y in zip(a, b.ljust(len(a), b"\0")[: len(a)], strict=True):
        diff |= x ^ y
    return diff == 0


def handle(sock: socket.socket, token: str, base_env: Mapping[str, str]) -> None:
    """Serve one connection to its end."""
    with sock:
        request = read_request(sock, token)
        if request is None:
            return
        op = request.get("op")
        if op == "ping":
            Sender(sock).send(EXIT, STATUS.pack(0))
        elif op == "poweroff":
            Sender(sock).send(EXIT, STATUS.pack(0))
            power_off()
        elif op == "exec":
            Session(sock, request, base_env).run()
        else:
            Sender(sock).send(ERROR, f"unknown op {op!r}".encode())


def serve(address: str, port: int, token: str, base_env: Mapping[str, str]) -> None:
    """Accept sessions forever, each on a thread of its own."""
    listener = socket.create_server((address, port), reuse_port=False, backlog=64)
    log(f"{READY} {address}:{port}")
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=handle, args=(conn, token, base_env), daemon=True).start()


# ---- boot (stage 2) ----------------------------------------------------------------------


def write_sysctl(key: str, value: str) -> None:
    with open("/proc/sys/" + key.replace(".", "/"), "w") as f:
        f.write(value)


def set_hostname(hostname: str) -> None:
    socket.sethostname(hostname)
    with open("/etc/hostname", "w") as f:
        f.write(hostname + "\n")
    with open("/etc/hosts") as f:
        lines = [line for line in f.read().splitlines() if not line.startswith("127.0.1.1")]
    lines.insert(1 if lines else 0, f"127.0.1.1\t{hostname}")
    with open("/etc/hosts", "w") as f:
        f.write("\n".join(lines) + "\n")


def interfaces_by_mac() -> dict[str, str]:
    """``mac -> current interface name`` of every interface with an address."""
    found = {}
    for name in os.listdir("/sys/class/net"):
        with open(f"/sys/class/net/{name}/address") as f:
            found[f.read().strip().lower()] = name
    return found


def link_batch(config: Mapping[str, Any]) -> str:
    """``ip -batch`` lines: lo up, NICs renamed (two passes: names may swap) and up,
    the management NIC addressed."""
    current = interfaces_by_mac()
    nics = [*config["nics"], config["mgmt"]]
    lines = ["link set dev lo up"]
    for i, nic in enumerate(nics):
        mac = nic["mac"].lower()
        if mac not in current:
            raise BootError(f"no interface with MAC {mac} (have {sorted(current)})")
        lines.append(f"link set dev {current[mac]} name vnbtmp{i}")
    for i, nic in enumerate(nics):
        lines.append(f"link set dev vnbtmp{i} name {nic['name']}")
        lines.append(f"link set dev {nic['name']} up")
    mgmt = config["mgmt"]
    lines.append(f"addr add {mgmt['address']}/{mgmt['prefix']} dev {mgmt['name']}")
    return "\n".join(lines) + "\n"


class BootError(Exception):
    """A boot step failed (one line for the console)."""


def run_checked(argv: Sequence[str], env: Mapping[str, str], stdin: str | None = None) -> None:
    try:
        proc = subprocess.run(list(argv), input=stdin, env=dict(env), capture_output=True, text=True,
                              check=False)
    except OSError as exc:
        raise BootError(f"boot command {list(argv)} cannot run: {exc}") from exc
    if proc.returncode != 0:
        said = " ".join((proc.stderr.strip() or proc.stdout.strip()).split())[-300:]
        raise BootError(f"boot command {list(argv)} exited {proc.returncode}: {said}")


def boot(config: Mapping[str, Any]) -> None:
    """Everything between switch_root and serving."""
    env = config["env"]
    set_hostname(config["hostname"])
    for key in ("net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6",
                "net.core.devconf_inherit_init_net"):  # namespaces made in the guest: IPv6 off too
        write_sysctl(key, "1")
    run_checked(["ip", "-batch", "-"], env, link_batch(config))
    for argv in config.get("boot_commands", []):
        run_checked(argv, env)


def agent_main(config_path: str) -> None:
    with open(config_path) as f:
        config = json.load(f)
    boot(config)
    log("booted")
    serve(config["mgmt"]["address"], int(config["port"]), config["token"], config["env"])


def _reap_until(pid: int) -> int:
    """Reap every child (PID 1 adopts orphans) until ``pid`` ends; its wait status."""
    while True:
        try:
            done, status = os.wait()
        except ChildProcessError:
            return 0
        if done == pid:
            return status


def init_main(config_path: str, agent: Callable[[str], None] = agent_main) -> None:
    """PID 1: fork the agent, reap orphans, power off when the agent ends."""
    os.environ.clear()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setsid()
            agent(config_path)
        except BootError as exc:
            log(f"FAILED: {exc}")
            code = 1
        except BaseException:
            import traceback

            log("FAILED: " + traceback.format_exc().strip().replace("\n", "\n  "))
            code = 1
        os._exit(code)
    status = _reap_until(pid)
    log(f"agent ended (wait status {status}): powering off")
    power_off()
    time.sleep(60)


def main(argv: Sequence[str]) -> int:
    if len(argv) == 2 and argv[0] == "--init":
        init_main(argv[1])
        return 1
    if len(argv) == 1:
        agent_main(argv[0])
        return 0
    print("usage: agent.py [--init] CONFIG.json", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
