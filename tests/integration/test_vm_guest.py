"""The ``vm`` backend's guest side on real QEMU: two TCG guests (1 vCPU, 512 MiB) on TAPs of a
bridge in a scratch namespace boot from the host's root file system, get their addresses
from boot commands, ping each other and run the probe's rr between them through the exec
agent; a SIGTERM (and a SIGKILL) to a host-side client stops the remote process; a failing
boot says why with the console's tail; the accelerator choice is cached; and after shutdown
no QEMU, TAP or namespace of the test is left. The protocol's client semantics are also
checked against an agent on the host's loopback (no VM, no root).

Figures (boot seconds per guest, rr p50, the accelerator choice) are printed (``pytest -s``)
and kept in ``artifacts/vm_guest.json``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from vnetbench.backends.vm import agent
from vnetbench.backends.vm.accel import choose_accel
from vnetbench.backends.vm.find import QEMU
from vnetbench.backends.vm.guest_kernel import find_kernel
from vnetbench.backends.vm.qemu import Guest, GuestSpec, Nic
from vnetbench.errors import LabError, MissingToolError
from vnetbench.host.binaries import find_binary
from vnetbench.host.netns import submit_in_netns
from vnetbench.workloads.probe.parse import parse_output, to_samples

NS = "vnbt9vm-h0"
BRIDGE = "vnbt9vm-br"
TAPS = ("vnbt9vm-t0", "vnbt9vm-t1")
ADDRS = ("10.250.0.1", "10.250.0.2")
MACS = ("02:00:0a:fa:00:01", "02:00:0a:fa:00:02")
BOOT_TIMEOUT_S = 150.0
KVM_TEST_TIMEOUT_S = 8.0
PROBE_PORT = 7000
FIGURES = Path(__file__).resolve().parents[2] / "artifacts" / "vm_guest.json"


def record(key: str, value: object) -> None:
    """Keep one measured figure in ``FIGURES`` (merged with the others of the run)."""
    FIGURES.parent.mkdir(exist_ok=True)
    try:
        figures = json.loads(FIGURES.read_text())
    except (OSError, ValueError):
        figures = {}
    figures[key] = value
    FIGURES.write_text(json.dumps(figures, indent=2) + "\n")


def _missing() -> str | None:
    """Why the VM tests cannot run here (None: they can)."""
    if not shutil.which(QEMU):
        return f"{QEMU} is not installed (scripts/setup.d/50-vm.sh installs it)"
    try:
        find_kernel()
    except MissingToolError as exc:
        return str(exc)
    return None


def vm_test(fn: Callable[..., None]) -> Callable[..., None]:
    """Root, heavy, and skipped (saying why) where QEMU or the guest kernel is missing."""
    missing = _missing()
    marked = pytest.mark.skipif(missing is not None, reason=str(missing))(fn)
    return pytest.mark.root(pytest.mark.heavy(marked))  # type: ignore[no-any-return]


def _ip(*args: str) -> None:
    subprocess.run(["ip", "-n", NS, *args], check=True, capture_output=True)


def _make_network() -> None:
    subprocess.run(["ip", "netns", "add", NS], check=True, capture_output=True)
    _ip("link", "set", "lo", "up")
    _ip("link", "add", BRIDGE, "type", "bridge")
    _ip("link", "set", BRIDGE, "up")
    for tap in TAPS:
        _ip("tuntap", "add", tap, "mode", "tap")
        _ip("link", "set", tap, "master", BRIDGE, "up")


def _qemu_pids(prefix: str = "vnbt9vm-") -> list[int]:
    """PIDs of QEMU processes whose ``-name`` starts with ``prefix``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if "-name" in [a.decode(errors="replace") for a in args]:
            name = args[args.index(b"-name") + 1].decode(errors="replace")
            if name.startswith(prefix) and "qemu" in args[0].decode(errors="replace"):
                found.append(int(entry.name))
    return found


@dataclass
class Pair:
    """Two booted guests and their QEMU processes; ``close`` tears everything down."""

    guests: list[Guest] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    boot_seconds: list[float] = field(default_factory=list)
    closed: bool = False

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for guest, proc in zip(self.guests, self.procs, strict=False):
            guest.shutdown(proc, 10.0)
            if proc.stderr is not None:
                proc.stderr.close()
        subprocess.run(["ip", "netns", "del", NS], check=False, capture_output=True)


def _start(guest: Guest) -> subprocess.Popen[bytes]:
    argv = guest.qemu_argv()
    return submit_in_netns(NS, lambda: subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)).result()


def _boot_pair(pair: Pair, work: Path) -> None:
    for i, (tap, mac, addr) in enumerate(zip(TAPS, MACS, ADDRS, strict=True)):
        spec = GuestSpec(name=f"vnbt9vm-v{i}", hostname=f"vmguest{i}", nics=(Nic(tap, mac, "eth0"),),
                         vcpus=1, memory_mib=512, accel="tcg", work_dir=work / f"v{i}",
                         boot_commands=(("ip", "addr", "add", f"{addr}/24", "dev", "eth0"),))
        pair.guests.append(Guest(spec))
    started = time.monotonic()
    pair.procs += [_start(g) for g in pair.guests]

    def ready(i: int) -> float:
        pair.guests[i].wait_ready(pair.procs[i], BOOT_TIMEOUT_S)
        return time.monotonic() - started

    with ThreadPoolExecutor(max_workers=2) as pool:
        pair.boot_seconds = list(pool.map(ready, range(2)))


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    subprocess.run(["ip", "netns", "del", NS], check=False, capture_output=True)  # an old run's
    _make_network()
    booted = Pair()
    try:
        _boot_pair(booted, tmp_path_factory.mktemp("vm"))
        print(f"\nvm guests booted (TCG) in {[round(s, 1) for s in booted.boot_seconds]} s")
        yield booted
    finally:
        booted.close()


@vm_test
def test_guests_boot_configured(pair: Pair) -> None:
    record("boot_seconds_tcg", [round(s, 2) for s in pair.boot_seconds])
    assert all(0 < s < BOOT_TIMEOUT_S for s in pair.boot_seconds)
    g0 = pair.guests[0]
    script = ("hostname; ip -br -4 addr show dev eth0; cat /proc/sys/net/ipv6/conf/all/disable_ipv6; "
              "nproc; awk '/MemTotal/ {print $2}' /proc/meminfo; "
              "stat -f -c %T /tmp /run /sys/fs/cgroup; "
              "echo 10.250.0.9 extra >> /etc/hosts && tail -n 1 /etc/hosts; "
              "test -f /work/main/pyproject.toml && echo work-visible")
    out = g0.run(["sh", "-c", script]).stdout.split("\n")
    assert out[0] == "vmguest0"
    assert "10.250.0.1/24" in out[1]
    assert out[2] == "1" and out[3] == "1"
    assert 400_000 < int(out[4]) <= 512 * 1024
    assert out[5:8] == ["tmpfs", "tmpfs", "cgroup2fs"]
    assert out[8] == "10.250.0.9 extra" and out[9] == "work-visible"
    assert not Path("/etc/hosts").read_text().endswith("10.250.0.9 extra\n"), "the host's file changed"


@vm_test
def test_ping_between_guests(pair: Pair) -> None:
    out = pair.guests[1].run(["ping", "-c", "3", "-W", "5", ADDRS[0]], timeout=60).stdout
    assert "3 received" in out, out


@vm_test
def test_probe_rr_between_guests(pair: Pair) -> None:
    probe = str(find_binary("vnetbench-probe"))
    server, client = pair.guests
    serve = subprocess.Popen(server.exec_argv([probe, "serve", "--port", str(PROBE_PORT)]),
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not server.run(["ss", "-Hltn", f"sport = :{PROBE_PORT}"]).stdout.strip():
            assert serve.poll() is None and time.monotonic() < deadline, "probe server did not listen"
            time.sleep(0.2)
        rr = client.run([probe, "rr", "--server", f"{ADDRS[0]}:{PROBE_PORT}", "--duration", "2"],
                        timeout=60)
    finally:
        serve.terminate()
        _, err = serve.communicate(timeout=30)
    assert serve.returncode == -signal.SIGTERM, err
    samples = {s.metric: s.value for s in to_samples(parse_output(rr.stdout, "rr", rr.stderr))}
    record("rr_p50_us_tcg", samples["rtt_p50_us"])
    record("rr_tps_tcg", samples["tps"])
    print(f"\nrr between TCG guests: p50 {samples['rtt_p50_us']:.0f} us, {samples['tps']:.0f} tps")
    assert samples["tps"] * 2 >= 10, samples  # some transactions in 2 s
    assert samples["rtt_p50_us"] > 0
    assert not server.run(["pgrep", "-f", "vnetbench-probe serve"], check=False).stdout.strip()


def _remote_sleepers(guest: Guest, tag: str) -> str:
    return guest.run(["pgrep", "-f", f"sleep {tag}"], check=False).stdout.strip()


@vm_test
@pytest.mark.parametrize("how", ["terminate", "kill"])
def test_client_signal_stops_remote_process(pair: Pair, how: str) -> None:
    guest = pair.guests[0]
    tag = "4242" if how == "terminate" else "4343"
    proc = subprocess.Popen(guest.exec_argv(["sh", "-c", f"echo started; sleep {tag}; echo not-reached"]),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"started\n"
    assert _remote_sleepers(guest, tag)
    getattr(proc, how)()
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == (-signal.SIGTERM if how == "terminate" else -signal.SIGKILL)
    assert b"not-reached" not in out
    deadline = time.monotonic() + 10
    while _remote_sleepers(guest, tag):  # after SIGKILL the agent notices the disconnect
        assert time.monotonic() < deadline, f"remote sleep survived the client's {how}"
        time.sleep(0.2)


@vm_test
def test_sessions_run_concurrently_with_stdin_and_status(pair: Pair) -> None:
    guest = pair.guests[1]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as pool:
        sleeps = list(pool.map(lambda _: guest.run(["sleep", "2"]), range(4)))
    assert all(r.returncode == 0 for r in sleeps)
    assert time.monotonic() - started < 8, "sessions were served one after another"
    assert guest.run(["tr", "a-z", "A-Z"], input_text="hello\n").stdout == "HELLO\n"
    failed = guest.run(["sh", "-c", "echo oops >&2; exit 3"], check=False)
    assert (failed.returncode, failed.stderr) == (3, "oops\n")
    assert guest.run(["sh", "-c", "echo $A-$PWD"], env={"A": "x"}, cwd="/etc").stdout == "x-/etc\n"


@vm_test
def test_namespaces_veth_bridge_inside_guest(pair: Pair) -> None:
    script = ("ip netns add inner && ip link add vin0 type veth peer name vin1 netns inner && "
              "ip link add brin type bridge && ip link set vin0 master brin && "
              "ip link set brin up && ip link set vin0 up && ip addr add 10.251.0.1/24 dev brin && "
              "ip -n inner link set lo up && ip -n inner link set vin1 up && "
              "ip -n inner addr add 10.251.0.2/24 dev vin1 && "
              "ip netns exec inner ping -c 1 -W 5 10.251.0.1 >/dev/null && echo inner-ok; "
              "ip netns exec inner cat /proc/sys/net/ipv6/conf/all/disable_ipv6; "
              "ip netns del inner; ip link del brin")
    assert pair.guests[0].run(["sh", "-c", script], timeout=60).stdout == "inner-ok\n1\n"


@vm_test
def test_nothing_left_after_shutdown(pair: Pair) -> None:
    assert len(_qemu_pids()) == 2
    started = time.monotonic()
    pair.close()
    assert time.monotonic() - started < 15
    assert all(p.returncode is not None for p in pair.procs)
    assert _qemu_pids() == []
    assert NS not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert not any(name in links for name in (*TAPS, BRIDGE))


@vm_test
def test_failed_boot_reports_console_tail(tmp_path: Path) -> None:
    spec = GuestSpec(name="vnbt9vm-bad", hostname="bad", nics=(), vcpus=1, memory_mib=512,
                     accel="tcg", work_dir=tmp_path, boot_commands=(("sh", "-c", "echo no-such-thing; exit 9"),))
    guest = Guest(spec)
    proc = subprocess.Popen(guest.qemu_argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        with pytest.raises(LabError) as caught:
            guest.wait_ready(proc, BOOT_TIMEOUT_S)
    finally:
        guest.shutdown(proc, 5.0)
        assert proc.stderr is not None
        proc.stderr.close()
    message = str(caught.value)
    assert "qemu exited" in message and "exited 9" in message and "\n" not in message, message
    assert _qemu_pids("vnbt9vm-bad") == []


@vm_test
def test_choose_accel_tests_once_then_caches(tmp_path: Path) -> None:
    cache = tmp_path / "accel.json"
    # a guest that boots with KVM answers in a few seconds; where KVM hangs (KVM-PVM) the
    # test would otherwise wait out the production 20 s before trying TCG
    first = choose_accel(cache, kvm_timeout=KVM_TEST_TIMEOUT_S, tcg_timeout=BOOT_TIMEOUT_S)
    record("accel", first.accel)
    record("accel_kvm", first.kvm)
    print(f"\naccel: {first.accel} ({first.reason}); KVM: {first.kvm}")
    assert first.accel in ("kvm", "tcg") and first.reason and not first.cached
    assert 0 < first.boot_seconds < BOOT_TIMEOUT_S
    started = time.monotonic()
    again = choose_accel(cache)
    assert again.cached and again.accel == first.accel and time.monotonic() - started < 2
    assert _qemu_pids("vnetbench-accel") == []


# ---- the protocol against an agent on the host's loopback (no VM needed) -----------------


@pytest.fixture(scope="module")
def loopback_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """``agent.serve`` on 127.0.0.1 in this process (a thread); (port, token file)."""
    token_file = tmp_path_factory.mktemp("agent") / "token"
    token_file.write_text("t0ken\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"PATH": os.environ["PATH"]}
    threading.Thread(target=agent.serve, args=("127.0.0.1", port, "t0ken", env), daemon=True).start()
    time.sleep(0.3)
    yield port, token_file


def _client(port: int, token: Path, *argv: str) -> list[str]:
    return [sys.executable, "-m", "vnetbench.backends.vm.client", "--port", str(port),
            "--token-file", str(token), "--", *argv]


def test_client_behaves_like_a_local_process(loopback_agent: tuple[int, Path]) -> None:
    port, token = loopback_agent
    done = subprocess.run(_client(port, token, "sh", "-c", "cat; echo err >&2; exit 5"),
                          input=b"in\n", capture_output=True, timeout=20)
    assert (done.returncode, done.stdout, done.stderr) == (5, b"in\n", b"err\n")
    missing = subprocess.run(_client(port, token, "no-such-program-x"), capture_output=True, timeout=20)
    assert missing.returncode == 127 and b"no-such-program-x" in missing.stderr
    killed = subprocess.run(_client(port, token, "sh", "-c", "kill -9 $$"), capture_output=True, timeout=20)
    assert (killed.returncode, killed.stderr) == (-signal.SIGKILL, b"")
    proc = subprocess.Popen(_client(port, token, "sh", "-c", "trap 'echo term; exit 7' TERM; "
                                    "echo up; while :; do sleep 0.1; done"),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
    proc.terminate()
    out, _ = proc.communicate(timeout=20)
    assert (proc.returncode, out) == (7, b"term\n")


def test_wrong_token_is_refused(loopback_agent: tuple[int, Path], tmp_path: Path) -> None:
    port, _ = loopback_agent
    wrong = tmp_path / "wrong"
    wrong.write_text("nope\n")
    done = subprocess.run(_client(port, wrong, "true"), capture_output=True, timeout=20)
    assert done.returncode == 255 and b"wrong token" in done.stderr
