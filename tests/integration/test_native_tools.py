"""Integration tests for the native helpers in native/ (vnetbench-linkem, vnetbench-tunnel).

Needs root, network namespaces, NFQUEUE, br_netfilter, tun, `ip` and `iptables`.
Binaries are found like the lab finds them (vnetbench.host.binaries.find_binary; scripts/setup.sh
builds them); a missing binary fails the tests.

All traffic stays inside namespaces created here (named vnbx<pid>...), which a
fixture finalizer deletes even when a test fails. Probes are a small Python UDP
echo (no ping/sockperf needed).
"""

from __future__ import annotations

import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time

import pytest

from vnetbench.host.binaries import find_binary

pytestmark = pytest.mark.root

LINKEM = find_binary("vnetbench-linkem")  # MissingToolError (a failure, not a skip) if unbuilt
TUNNEL = find_binary("vnetbench-tunnel")
PID = os.getpid()

# UDP echo server: echoes every datagram back to its sender.
ECHO_SERVER = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
while True:
    d, a = s.recvfrom(2048)
    s.sendto(d, a)
"""

# UDP probe client: sends N probes at a fixed interval, records each reply's
# RTT (monotonic clock, timestamped on receive), waits `tail` s after the last
# send, prints {"sent": N, "rtts_ms": {seq: rtt}} as JSON.
PROBE_CLIENT = r"""
import json, select, socket, struct, sys, time
host, port, n, interval, tail = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.connect((host, port))
sent, rtts = {}, {}
t0 = time.monotonic()
i = 0
end = None
while True:
    now = time.monotonic()
    if i < n and now >= t0 + i * interval:
        sent[i] = time.monotonic()
        s.send(struct.pack("!I", i) + b"x" * 60)
        i += 1
        if i == n:
            end = time.monotonic() + tail
        continue
    nxt = t0 + i * interval if i < n else end
    if i == n and now >= end:
        break
    r, _, _ = select.select([s], [], [], max(0.0, nxt - now))
    if r:
        try:
            d = s.recv(2048)
        except ConnectionRefusedError:
            continue
        t = time.monotonic()
        (seq,) = struct.unpack("!I", d[:4])
        if seq in sent and seq not in rtts:
            rtts[seq] = (t - sent[seq]) * 1000.0
print(json.dumps({"sent": n, "rtts_ms": rtts}))
"""


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


def nsx(ns: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return sh("ip", "netns", "exec", ns, *args, check=check)


def read_json_line(proc: subprocess.Popen, timeout: float = 10.0) -> dict:
    """Read one JSON line from proc.stdout within timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
        if not r:
            break
        line = proc.stdout.readline()
        if not line:
            break
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"no JSON line from {proc.args} (rc={proc.poll()})")


class Lab:
    """Namespaces and processes created by a test; cleaned up by the fixture."""

    def __init__(self) -> None:
        self.namespaces: list[str] = []
        self.procs: list[subprocess.Popen] = []

    def netns(self, suffix: str) -> str:
        name = f"vnbx{PID}{suffix}"
        sh("ip", "netns", "add", name)
        self.namespaces.append(name)
        nsx(name, "ip", "link", "set", "lo", "up")
        return name

    def spawn(self, ns: str, *args: str) -> subprocess.Popen:
        p = subprocess.Popen(
            ["ip", "netns", "exec", ns, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs.append(p)
        return p

    def echo_server(self, ns: str, ip: str, port: int = 9000) -> None:
        p = self.spawn(ns, sys.executable, "-c", ECHO_SERVER, ip, str(port))
        assert p.stdout.readline().strip() == "ready"

    def probe(self, ns: str, ip: str, n: int, interval: float, tail: float = 0.5, port: int = 9000) -> dict:
        out = nsx(ns, sys.executable, "-c", PROBE_CLIENT, ip, str(port), str(n), str(interval), str(tail))
        res = json.loads(out.stdout)
        res["rtts"] = list(res["rtts_ms"].values())
        return res

    def cleanup(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()  # only processes this test started, by handle
            p.wait(timeout=5)
            for f in (p.stdout, p.stderr):
                if f:
                    f.close()
        for ns in self.namespaces:
            sh("ip", "netns", "del", ns, check=False)


@pytest.fixture
def lab():
    if os.geteuid() != 0:
        pytest.skip("needs root")
    lab = Lab()
    try:
        yield lab
    finally:
        lab.cleanup()


# ---------------------------------------------------------------- linkem

@pytest.fixture
def bridge_lab(lab):
    """A -- switch(bridge sw, ports pa/pb, br_netfilter on) -- B on 10.251.0.0/24."""
    a, s, b = lab.netns("a"), lab.netns("s"), lab.netns("b")
    nsx(s, "ip", "link", "add", "sw", "type", "bridge")
    for host, port, dev, ip in ((a, "pa", "va", "10.251.0.1/24"), (b, "pb", "vb", "10.251.0.2/24")):
        nsx(s, "ip", "link", "add", port, "type", "veth", "peer", "name", dev, "netns", host)
        nsx(s, "ip", "link", "set", port, "master", "sw", "up")
        nsx(host, "ip", "addr", "add", ip, "dev", dev)
        nsx(host, "ip", "link", "set", dev, "up")
    nsx(s, "ip", "link", "set", "sw", "up")
    nsx(s, "sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1")
    lab.echo_server(b, "10.251.0.2")
    lab.a, lab.s, lab.b = a, s, b
    return lab


def queue_rule(lab: Lab, op: str, port: str, queue: int) -> None:
    """The rule that queues bridged IPv4 frames entering the switch from `port`."""
    nsx(lab.s, "iptables", "-t", "mangle", op, "PREROUTING", "-m", "physdev", "--physdev-in", port,
        "-j", "NFQUEUE", "--queue-num", str(queue))


def start_linkem(lab: Lab, queue: int, *extra: str) -> subprocess.Popen:
    p = lab.spawn(lab.s, str(LINKEM), "--queue", str(queue), *extra)
    ev = read_json_line(p)
    assert ev == {"event": "ready", "queue": queue}
    return p


def stop(p: subprocess.Popen) -> dict:
    p.send_signal(signal.SIGTERM)
    ev = read_json_line(p)
    assert p.wait(timeout=5) == 0
    assert ev["event"] == "end"
    return ev


def test_linkem_delay_both_directions(bridge_lab, tmp_path):
    lab = bridge_lab
    base = lab.probe(lab.a, "10.251.0.2", 20, 0.05, tail=0.3)
    assert len(base["rtts"]) == 20
    base_ms = statistics.mean(base["rtts"])
    stats_file = tmp_path / "linkem.json"
    p = start_linkem(lab, 7, "--delay-us", "20000", "--stats-file", str(stats_file))
    queue_rule(lab, "-A", "pa", 7)
    queue_rule(lab, "-A", "pb", 7)
    res = lab.probe(lab.a, "10.251.0.2", 20, 0.05)
    time.sleep(1.2)  # let the periodic stats file appear
    periodic = json.loads(stats_file.read_text())
    ev = stop(p)
    assert len(res["rtts"]) == 20
    rtt = statistics.mean(res["rtts"])
    expected = 40.0 + base_ms
    print(f"base {base_ms:.3f} ms, delayed RTT {rtt:.3f} ms (expected {expected:.3f}), linkem {ev}")
    assert abs(rtt - expected) <= 0.05 * expected
    assert periodic["event"] == "stats" and periodic["packets"] >= 40
    assert ev["packets"] >= 40 and ev["dropped"] == 0 and ev["held"] == 0
    assert 20000 <= ev["delayed_mean_us"] <= 21000
    assert json.loads(stats_file.read_text())["event"] == "end"


def test_linkem_loss_fraction(bridge_lab):
    lab = bridge_lab
    n = 1000
    p = start_linkem(lab, 8, "--delay-us", "0", "--loss", "0.1", "--seed", "42")
    queue_rule(lab, "-A", "pa", 8)  # one direction only: a reply is lost iff its request was
    res = lab.probe(lab.a, "10.251.0.2", n, 0.001, tail=0.5)
    ev = stop(p)
    lost = (n - len(res["rtts"])) / n
    print(f"lost {lost:.3f}, linkem {ev}")
    # Binomial sd = sqrt(0.1*0.9/1000) ~ 0.0095: allow 4 sd.
    assert abs(lost - 0.1) <= 0.038
    assert ev["packets"] == n
    assert ev["dropped"] == n - len(res["rtts"])


def test_linkem_jitter_raises_spread(bridge_lab):
    lab = bridge_lab
    p = start_linkem(lab, 9, "--delay-us", "10000")
    queue_rule(lab, "-A", "pa", 9)
    flat = lab.probe(lab.a, "10.251.0.2", 30, 0.04)
    stop(p)
    p = start_linkem(lab, 9, "--delay-us", "10000", "--jitter-us", "3000", "--seed", "1")
    jit = lab.probe(lab.a, "10.251.0.2", 30, 0.04)
    stop(p)
    sd_flat, sd_jit = statistics.pstdev(flat["rtts"]), statistics.pstdev(jit["rtts"])
    print(f"stdev flat {sd_flat:.3f} ms, jitter {sd_jit:.3f} ms")
    assert len(flat["rtts"]) == 30 and len(jit["rtts"]) == 30
    assert sd_flat < 1.0
    assert sd_jit > 1.5 and sd_jit > 3 * sd_flat


def test_linkem_sigterm_releases_held_packets(bridge_lab):
    lab = bridge_lab
    p = start_linkem(lab, 10, "--delay-us", "500000")  # 0.5 s: probes surely held at SIGTERM
    queue_rule(lab, "-A", "pa", 10)
    client = lab.spawn(lab.a, sys.executable, "-c", PROBE_CLIENT, "10.251.0.2", "9000", "5", "0.001", "1.0")
    time.sleep(0.2)
    ev = stop(p)
    res = json.loads(client.communicate(timeout=10)[0])
    print(f"linkem {ev}, replies {len(res['rtts_ms'])}")
    assert ev["packets"] == 5 and ev["accepted"] == 5 and ev["held"] == 0
    assert len(res["rtts_ms"]) == 5
    assert max(res["rtts_ms"].values()) < 450  # released at SIGTERM, not after 500 ms
    queue_rule(lab, "-D", "pa", 10)
    after = lab.probe(lab.a, "10.251.0.2", 3, 0.01, tail=0.3)
    assert len(after["rtts"]) == 3


# ---------------------------------------------------------------- tunnel

def udp_in_datagrams(ns: str) -> int:
    lines = [ln.split() for ln in nsx(ns, "cat", "/proc/net/snmp").stdout.splitlines() if ln.startswith("Udp:")]
    return int(lines[1][lines[0].index("InDatagrams")])


def test_tunnel_ping_across(lab, tmp_path):
    h1, h2 = lab.netns("h1"), lab.netns("h2")
    nsx(h1, "ip", "link", "add", "v1", "type", "veth", "peer", "name", "v2", "netns", h2)
    for ns, dev, ip in ((h1, "v1", "10.252.0.1/24"), (h2, "v2", "10.252.0.2/24")):
        nsx(ns, "ip", "addr", "add", ip, "dev", dev)
        nsx(ns, "ip", "link", "set", dev, "up")
    procs = {}
    for ns, me, peer, mine, other in (
        (h1, "10.252.0.1", "10.252.0.2", "10.253.1", "10.253.2"),
        (h2, "10.252.0.2", "10.252.0.1", "10.253.2", "10.253.1"),
    ):
        p = lab.spawn(ns, str(TUNNEL), "--tun", "vnbxt0", "--listen", f"{me}:7000",
                      "--route", f"{other}.0/24={peer}:7000", "--stats-file", str(tmp_path / f"{ns}.json"))
        assert read_json_line(p) == {"event": "ready"}
        procs[ns] = p
        nsx(ns, "ip", "addr", "add", f"{mine}.1/24", "dev", "vnbxt0")
        nsx(ns, "ip", "link", "set", "vnbxt0", "up")
        nsx(ns, "ip", "route", "add", f"{other}.0/24", "dev", "vnbxt0")
        assert "mtu 1472" in nsx(ns, "ip", "link", "show", "vnbxt0").stdout
    lab.echo_server(h2, "10.253.2.1")
    udp_before = udp_in_datagrams(h2)
    n = 50
    res = lab.probe(h1, "10.253.2.1", n, 0.01, tail=0.5)
    udp_after = udp_in_datagrams(h2)
    ends = {ns: stop(p) for ns, p in procs.items()}
    print(f"replies {len(res['rtts'])}/{n}, udp InDatagrams +{udp_after - udp_before}, {ends}")
    assert len(res["rtts"]) == n
    e1, e2 = ends[h1], ends[h2]
    assert e1["tun_to_udp_packets"] >= n and e2["udp_to_tun_packets"] >= n
    assert e2["tun_to_udp_packets"] >= n and e1["udp_to_tun_packets"] >= n
    # Each probe arrives in h2 as an outer UDP datagram (tunnel) plus the inner
    # one delivered to the echo server.
    assert udp_after - udp_before >= e2["udp_to_tun_packets"] + n
    assert json.loads((tmp_path / f"{h1}.json").read_text())["event"] == "end"
    # Non-persistent tun: gone with the process.
    assert nsx(h1, "ip", "link", "show", "vnbxt0", check=False).returncode != 0
