"""Emulated real machines for the SSH backend's tests: network namespaces on this box, each
running a real OpenSSH server (Debian's ``/usr/sbin/sshd``), reached from this process over
a switch, as a lab controller reaches real hosts.

Each machine is a network namespace ``vnbt<hex>-m<i>`` whose underlay is called ``eth1`` (as
on a real machine), with ``lo`` up and an address on one of the TEST-NET /24s (192.0.2.0/24,
else 198.51.100.0/24, else 203.0.113.0/24: the first that none of this box's routes touch)
at ``.10 + i``. A bridge in namespace ``vnbt<hex>-sw`` joins them and this box's own
``vnbt<hex>c`` (at ``.254``). A machine also has a mount namespace of its own (held by a
``sleep`` process, its "init") with private ``/run/netns``, ``/run/vnetbench`` and ``/tmp``:
namespaces a lab makes there are that machine's alone, as on real machines; the rest of the
file system is this box's. Its sshd is joined to both namespaces.

With ``docker=True`` each machine also runs its own Docker engine (Debian's dockerd, as a
machine with Docker installed does): in the machine's network namespace and a private mount
namespace (as the docker backend starts its engines), data and API socket under
``/var/lib/vnbt<hex>-docker/m<i>/``, containers' cgroups under ``/vnbt<hex>-m<i>``; a root
login there reaches it (``SetEnv DOCKER_HOST`` in the machine's sshd_config, set with or
without an engine, so a machine without one answers "cannot connect" whatever this box
runs).

The fixture makes the keys (host keys, one client key), an ssh client config and known_hosts,
and exports the config as ``VNETBENCH_SSH_CONFIG`` while active. Every exit path removes
everything: the processes inside the machines (by PID), the namespaces, the veth, the
throw-away user, the files.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from vnetbench.backends.machines.ssh import SSH_CONFIG_ENV
from vnetbench.host.netns import pids_in_netns
from vnetbench.host.state import all_states
from vnetbench.lab.spec import MachineSpec

SSHD = "/usr/sbin/sshd"
TEST_NETS = ("192.0.2", "198.51.100", "203.0.113")
TEST_USER = "vnbtuser"
TEST_USER_COMMENT = "vnetbench test user (tests/integration/machines.py)"
PRIVATE_DIRS = ("/run/netns", "/run/vnetbench", "/tmp", "/var/tmp")
"""Directories each machine has to itself (tmpfs in its mount namespace)."""
ENGINE_ROOT = "/var/lib"
"""Where the machines' engines keep their data and sockets (``<root>/vnbt<hex>-docker``)."""
ENGINE_STOP_S = 20.0
SYSCTLS = ("net.ipv4.ip_forward", "net.ipv4.conf.all.rp_filter", "net.bridge.bridge-nf-call-iptables")


def _run(argv: Sequence[str], *, check: bool = True, input_text: str | None = None) -> str:
    proc = subprocess.run(list(argv), input=input_text, capture_output=True, text=True,
                          timeout=30, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def free_test_net() -> str:
    """The first TEST-NET /24 (as ``a.b.c``) that no route of this box touches."""
    routes = json.loads(_run(["ip", "-j", "-4", "route", "show", "table", "all"]) or "[]")
    taken = [ipaddress.ip_network(r["dst"], strict=False) for r in routes
             if r.get("dst") and r["dst"] != "default"]
    for net in TEST_NETS:
        mine = ipaddress.ip_network(f"{net}.0/24")
        if not any(mine.overlaps(t) for t in taken):
            return net
    raise RuntimeError(f"every TEST-NET /24 ({', '.join(TEST_NETS)}) is routed on this box")


@dataclass
class Machine:
    index: int
    netns: str
    address: str
    config: Path
    log: Path
    init: subprocess.Popen[bytes] | None = None
    sshd: subprocess.Popen[bytes] | None = None
    engine: subprocess.Popen[bytes] | None = None
    engine_dir: Path | None = None

    @property
    def engine_socket(self) -> Path:
        """The API socket of the machine's Docker engine (there or not)."""
        return Path(ENGINE_ROOT) / f"{self.netns.rsplit('-', 1)[0]}-docker" / f"m{self.index}" / "docker.sock"

    def enter(self) -> list[str]:
        """argv prefix running a command inside this machine (its network and mount ns)."""
        assert self.init is not None
        return ["nsenter", "-t", str(self.init.pid), "-m", "-n"]


@dataclass
class Machines:
    """What ``emulated_machines`` made."""

    prefix: str
    net: str
    user: str
    tmp: Path
    client_key: Path
    ssh_config: Path
    known_hosts: Path
    machines: list[Machine] = field(default_factory=list)

    @property
    def specs(self) -> list[MachineSpec]:
        return [MachineSpec(ssh=f"{self.user}@{m.address}", underlay="eth1") for m in self.machines]

    @property
    def namespaces(self) -> list[str]:
        return [m.netns for m in self.machines]

    @property
    def addresses(self) -> list[str]:
        return [m.address for m in self.machines]

    @property
    def controller_address(self) -> str:
        return f"{self.net}.254"

    def unused_address(self) -> str:
        """An address on the machines' subnet that nobody has."""
        return f"{self.net}.99"

    def stop_machine(self, index: int) -> None:
        """Stop machine ``index``'s sshd (it becomes unreachable: connection refused)."""
        _stop(self.machines[index].sshd)

    def start_machine(self, index: int) -> None:
        """Start machine ``index``'s sshd again."""
        machine = self.machines[index]
        if machine.sshd is None or machine.sshd.poll() is not None:
            _start_sshd(machine)

    def state(self) -> dict[str, Any]:
        """What a lab could leave behind, per machine and on this box (before/after compare)."""
        machines = []
        for m in self.machines:
            inside = m.enter()
            iptables = _run([*inside, "iptables-save"], check=False)
            machines.append({
                "netns": _netns_names(_run([*inside, "ip", "netns", "list"], check=False)),
                "links": _rstrip_lines(_run([*inside, "ip", "-o", "link"])),
                "routes": _run([*inside, "ip", "-4", "route", "show", "table", "all"]),
                "iptables": strip_iptables(iptables),
                "sysctls": _run([*inside, "sysctl", "-e", *SYSCTLS], check=False),
            })
        live = _live_run_prefixes()  # other runs on this box come and go meanwhile
        return {"netns": [n for n in _netns_names(_run(["ip", "netns", "list"]))
                          if not n.startswith(live)], "machines": machines}

    def processes(self, index: int) -> list[int]:
        """PIDs in machine ``index`` (its namespaces, and those it made), sshd and init too."""
        return _machine_pids(self.machines[index])


def strip_iptables(text: str) -> str:
    """``iptables-save`` without comments, timestamps and counters."""
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    return "\n".join(re.sub(r"\s*\[\d+:\d+\]", "", line) for line in lines)


def _rstrip_lines(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.splitlines())


def _live_run_prefixes() -> tuple[str, ...]:
    """``vnb<id>-`` of every run on this box whose owner lives: not a leftover of a test that
    compares before and after (its own run is over by then; another session's may not be)."""
    return tuple(f"vnb{s.short_id}-" for s in all_states() if s.owner_alive())


def _netns_names(text: str) -> list[str]:
    return sorted(line.split()[0] for line in text.splitlines() if line.strip())


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def _start_sshd(machine: Machine) -> None:
    with machine.log.open("ab") as log:
        machine.sshd = subprocess.Popen([*machine.enter(), SSHD, "-D", "-e", "-f", str(machine.config)],
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                        start_new_session=True)
    deadline = time.monotonic() + 10
    while True:
        if machine.sshd.poll() is not None:
            raise RuntimeError(f"sshd of {machine.netns} exited {machine.sshd.returncode}: "
                               f"{machine.log.read_text()[-500:]}")
        with socket.socket() as probe:
            probe.settimeout(0.2)
            if probe.connect_ex((machine.address, 22)) == 0:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"sshd of {machine.netns} does not listen: {machine.log.read_text()[-500:]}")
        time.sleep(0.05)


def _start_init(machine: Machine) -> None:
    """The machine's init: a process in its network namespace and a mount namespace of its
    own with private /run/netns, /run/vnetbench, /tmp and /var/tmp."""
    mounts = " && ".join(f"mount -t tmpfs -o mode={'1777' if d == '/tmp' else '0755'} vnbt {d}"
                         for d in PRIVATE_DIRS)
    machine.init = subprocess.Popen(
        ["ip", "netns", "exec", machine.netns, "sh", "-c", f"{mounts} && echo ready && exec sleep infinity"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    assert machine.init.stdout is not None
    line = machine.init.stdout.readline().decode()
    if line.strip() != "ready":
        machine.init.kill()
        _, err = machine.init.communicate()
        raise RuntimeError(f"machine {machine.netns} did not start: {err.decode().strip()}")


def _start_engine(machine: Machine) -> None:
    """The machine's own Docker engine (see the module docstring); waits until it answers."""
    from vnetbench.backends.docker.engine import ENGINE_WRAPPER, find_docker_client, find_dockerd
    dockerd = find_dockerd()
    socket_path = machine.engine_socket
    machine.engine_dir = socket_path.parent
    machine.engine_dir.mkdir(parents=True, mode=0o700)
    config = machine.engine_dir / "daemon.json"
    config.write_text(json.dumps({
        "data-root": str(machine.engine_dir / "data"), "exec-root": "/run/docker",
        "pidfile": "/run/docker.pid", "hosts": [f"unix://{socket_path}"],
        "storage-driver": "overlay2", "exec-opts": ["native.cgroupdriver=cgroupfs"],
        "cgroup-parent": f"/{machine.netns}", "log-level": "warn", "live-restore": False,
        "ip6tables": False}))
    with machine.log.with_name("dockerd.log").open("ab") as log:
        machine.engine = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{machine.netns}", "unshare", "--mount",
             "--propagation", "private", "sh", "-ec", ENGINE_WRAPPER, "vnbt-dockerd", dockerd,
             "--config-file", str(config)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    client = [*machine.enter(), find_docker_client(dockerd), "-H", f"unix://{socket_path}",
              "version", "--format", "{{.Server.Version}}"]
    deadline = time.monotonic() + 60
    while True:
        if machine.engine.poll() is not None:
            raise RuntimeError(f"dockerd of {machine.netns} exited {machine.engine.returncode}: "
                               f"{machine.log.with_name('dockerd.log').read_text()[-500:]}")
        if subprocess.run(client, capture_output=True, check=False, timeout=30).returncode == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"dockerd of {machine.netns} does not answer")
        time.sleep(0.2)


def _stop_engine(machine: Machine) -> list[str]:
    """Stop the machine's engine (it stops its containers and containerd) and remove the
    cgroups its containers had."""
    problems: list[str] = []
    engine = machine.engine
    if engine is not None and engine.poll() is None:
        engine.terminate()
        try:
            engine.wait(timeout=ENGINE_STOP_S)
        except subprocess.TimeoutExpired:
            problems.append(f"dockerd of {machine.netns} did not stop within {ENGINE_STOP_S:g}s")
            engine.kill()
            engine.wait(timeout=5)
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        top = hierarchy / machine.netns
        if top.is_dir():
            for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                with suppress(OSError):
                    d.rmdir()
            try:
                top.rmdir()
            except OSError as exc:
                problems.append(f"cgroup {top}: {exc}")
    if machine.engine_dir is not None:
        shutil.rmtree(machine.engine_dir, ignore_errors=True)
        with suppress(OSError):
            machine.engine_dir.parent.rmdir()
    return problems


def _ns_inode(path: Path) -> int | None:
    with suppress(OSError):
        return os.stat(path).st_ino
    return None


def _machine_pids(machine: Machine) -> list[int]:
    """Processes in the machine: its network namespace, the namespaces made inside it (its
    private /run/netns), and its mount namespace."""
    inodes: set[int] = set()
    own = _ns_inode(Path("/run/netns") / machine.netns)
    if own is not None:
        inodes.add(own)
    if machine.init is not None and machine.init.poll() is None:
        with suppress(OSError):
            for entry in Path(f"/proc/{machine.init.pid}/root/run/netns").iterdir():
                inode = _ns_inode(entry)
                if inode is not None:
                    inodes.add(inode)
    pids = set(pids_in_netns(inodes))
    if machine.init is not None and machine.init.poll() is None:
        mnt = _ns_inode(Path(f"/proc/{machine.init.pid}/ns/mnt"))
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                with suppress(OSError):
                    if os.stat(entry / "ns" / "mnt").st_ino == mnt:
                        pids.add(int(entry.name))
    return sorted(pids)


def _pids_using(path: Path) -> list[int]:
    """This box's processes whose command line names ``path`` (ssh clients and masters run
    with the fixture's config or control sockets)."""
    needle = str(path).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with suppress(OSError):
                if needle in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def _kill_all(pids_of: Callable[[], list[int]], what: str) -> None:
    """SIGKILL the PIDs ``pids_of()`` returns until it returns none (10 s at most)."""
    deadline = time.monotonic() + 10
    while True:
        pids = pids_of()
        if not pids:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes in {what} will not die: {pids}")
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _keygen(path: Path, comment: str) -> str:
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])
    return Path(f"{path}.pub").read_text().strip()


def new_key(directory: Path, name: str) -> Path:
    """A fresh ed25519 key pair (no passphrase) in ``directory``; the private key's path."""
    path = directory / name
    _keygen(path, name)
    return path


def _sshd_config(m: Machine, host_key: Path, authorized: Path, pid_file: Path) -> str:
    return "\n".join([
        f"ListenAddress {m.address}",
        "Port 22",
        f"HostKey {host_key}",
        f"PidFile {pid_file}",
        f"AuthorizedKeysFile {authorized}",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "UseDNS no",
        "PrintMotd no",
        "PrintLastLog no",
        "X11Forwarding no",
        "LogLevel INFO",
        f"SetEnv DOCKER_HOST=unix://{m.engine_socket} DOCKER_CONFIG=/var/tmp/docker-client",
        "",
    ])


def _client_config(net: str, client_key: Path, known_hosts: Path) -> str:
    return "\n".join([
        f"Host {net}.*",
        f"  IdentityFile {client_key}",
        "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {known_hosts}",
        "  GlobalKnownHostsFile /dev/null",
        "  StrictHostKeyChecking yes",
        "  CheckHostIP no",
        "  LogLevel ERROR",
        "",
    ])


def _user_exists(name: str) -> bool:
    return subprocess.run(["id", "-u", name], capture_output=True, check=False).returncode == 0


def _add_user() -> None:
    if _user_exists(TEST_USER):  # a leftover of ours (killed test run) is replaced
        entry = _run(["getent", "passwd", TEST_USER])
        if TEST_USER_COMMENT not in entry:
            raise RuntimeError(f"user {TEST_USER} exists and is not the tests' own: {entry.strip()}")
        _run(["userdel", TEST_USER])
    # '*' (not the default '!'): sshd without PAM refuses locked accounts even with a key
    _run(["useradd", "-M", "-d", "/", "-s", "/bin/sh", "-p", "*", "-c", TEST_USER_COMMENT, TEST_USER])


def _setup_network(m: Machines) -> None:
    p = m.prefix
    sw = f"{p}-sw"
    cmds: list[list[str]] = [
        ["ip", "netns", "add", sw],
        ["ip", "-n", sw, "link", "add", f"{p}br", "type", "bridge"],
        ["ip", "-n", sw, "link", "set", f"{p}br", "up"],
    ]
    for machine in m.machines:
        i, ns = machine.index, machine.netns
        cmds += [
            ["ip", "netns", "add", ns],
            ["ip", "-n", sw, "link", "add", f"{p}m{i}", "type", "veth", "peer", "name", "eth1", "netns", ns],
            ["ip", "-n", sw, "link", "set", f"{p}m{i}", "master", f"{p}br", "up"],
            ["ip", "-n", ns, "link", "set", "lo", "up"],
            ["ip", "-n", ns, "addr", "add", f"{machine.address}/24", "dev", "eth1"],
            ["ip", "-n", ns, "link", "set", "eth1", "up"],
        ]
    cmds += [
        ["ip", "link", "add", f"{p}c", "type", "veth", "peer", "name", f"{p}cs", "netns", sw],
        ["ip", "-n", sw, "link", "set", f"{p}cs", "master", f"{p}br", "up"],
        ["ip", "addr", "add", f"{m.controller_address}/24", "dev", f"{p}c"],
        ["ip", "link", "set", f"{p}c", "up"],
    ]
    for argv in cmds:
        _run(argv)


def _teardown(m: Machines, user_made: bool) -> list[str]:
    """Remove everything the fixture made; what could not be removed."""
    problems: list[str] = []
    for machine in m.machines:
        problems += _stop_engine(machine)
        _stop(machine.sshd)
    for machine in m.machines:
        try:
            _kill_all(partial(_machine_pids, machine), machine.netns)
        except RuntimeError as exc:
            problems.append(str(exc))
        for proc in (machine.sshd, machine.init):
            if proc is not None:
                with suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5)
                for stream in (proc.stdout, proc.stderr):
                    if stream is not None:
                        stream.close()
    sw_inode = _ns_inode(Path("/run/netns") / f"{m.prefix}-sw")
    try:
        _kill_all(lambda: (pids_in_netns({sw_inode}) if sw_inode else []) + _pids_using(m.tmp), "the switch")
    except RuntimeError as exc:
        problems.append(str(exc))
    for ns in [*m.namespaces, f"{m.prefix}-sw"]:
        if (Path("/run/netns") / ns).exists():
            deleted = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True, check=False)
            if deleted.returncode != 0:
                problems.append(f"ip netns del {ns}: {deleted.stderr.strip()}")
    if Path(f"/sys/class/net/{m.prefix}c").exists():
        subprocess.run(["ip", "link", "del", f"{m.prefix}c"], capture_output=True, check=False)
    if user_made and _user_exists(TEST_USER):
        removed = subprocess.run(["userdel", TEST_USER], capture_output=True, text=True, check=False)
        if removed.returncode != 0:
            problems.append(f"userdel {TEST_USER}: {removed.stderr.strip()}")
    shutil.rmtree(m.tmp, ignore_errors=True)
    return problems


@contextmanager
def emulated_machines(count: int = 2, *, user: str = "root",
                      docker: bool = False) -> Iterator[Machines]:
    """``count`` machines running sshd (and, with ``docker``, a Docker engine each), logged
    in to as ``user`` (``root``, or any other name for the throw-away user ``vnbtuser``),
    with ``VNETBENCH_SSH_CONFIG`` set meanwhile."""
    if not 1 <= count <= 100:
        raise ValueError("count must be 1..100")
    login = "root" if user == "root" else TEST_USER
    prefix = f"vnbt{secrets.token_hex(2)}"
    net = free_test_net()
    # under /run, not /tmp: each machine has a /tmp of its own, and its sshd reads from here
    tmp = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir="/run"))
    tmp.chmod(0o755)  # the throw-away user's sshd reads authorized_keys from here
    m = Machines(prefix=prefix, net=net, user=login, tmp=tmp, client_key=tmp / "client_key",
                 ssh_config=tmp / "ssh_config", known_hosts=tmp / "known_hosts")
    old_config = os.environ.get(SSH_CONFIG_ENV)
    user_made = False
    try:
        m.machines = [Machine(index=i, netns=f"{prefix}-m{i}", address=f"{net}.{10 + i}",
                              config=tmp / f"m{i}" / "sshd_config", log=tmp / f"m{i}" / "sshd.log")
                      for i in range(count)]
        client_pub = _keygen(m.client_key, "vnbt-client")
        authorized = tmp / "authorized_keys"
        authorized.write_text(client_pub + "\n")
        authorized.chmod(0o644)
        known = []
        for machine in m.machines:
            machine.config.parent.mkdir()
            host_key = machine.config.parent / "host_key"
            known.append(f"{machine.address} {' '.join(_keygen(host_key, machine.netns).split()[:2])}")
            machine.config.write_text(_sshd_config(machine, host_key, authorized,
                                                   machine.config.parent / "sshd.pid"))
        m.known_hosts.write_text("\n".join(known) + "\n")
        m.ssh_config.write_text(_client_config(net, m.client_key, m.known_hosts))
        if login != "root":
            _add_user()
            user_made = True
        # sshd's privilege separation directory (Debian's service makes it at boot); left
        # in place: another sshd may be using it
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        _setup_network(m)
        for machine in m.machines:
            _start_init(machine)
            _start_sshd(machine)
            if docker:
                _start_engine(machine)
        os.environ[SSH_CONFIG_ENV] = str(m.ssh_config)
        yield m
    except BaseException:
        _restore_env(old_config)
        _teardown(m, user_made)  # the error in flight says more
        raise
    _restore_env(old_config)
    problems = _teardown(m, user_made)
    if problems:
        raise RuntimeError("emulated machines not fully removed: " + "; ".join(problems))


def _restore_env(old_config: str | None) -> None:
    if old_config is None:
        os.environ.pop(SSH_CONFIG_ENV, None)
    else:
        os.environ[SSH_CONFIG_ENV] = old_config
