"""Helpers for integration tests: a probe mode through its workload wrapper, a TCP echo
inside nodes, packet capture on the wire."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from vnetbench.backends.lab import Lab
from vnetbench.host.netns import read_in_netns, submit_in_netns
from vnetbench.host.node import Node
from vnetbench.results.model import Sample
from vnetbench.workloads.probe.workload import PROBE_WORKLOADS


def dev_bytes(node: Node) -> int:
    """rx + tx bytes of the node's lab interface, read inside its namespace."""
    for line in read_in_netns(node.netns, "net/dev").splitlines()[2:]:
        name, _, rest = line.partition(":")
        if name.strip() == node.ifname:
            fields = rest.split()
            return int(fields[0]) + int(fields[8])
    raise AssertionError(f"{node.ifname} not in /proc/net/dev of {node.netns}")


def run_mode(lab: Lab, mode: str, options: dict[str, Any], raw_dir: Path) -> list[Sample]:
    """Samples of one probe mode between the lab's first nodes (prepare, run, clean up)."""
    model, factory = PROBE_WORKLOADS[mode]
    workload = factory(model.model_validate(options))
    workload.prepare(lab)
    try:
        return workload.run(lab, raw_dir)
    finally:
        workload.cleanup(lab)

ECHO_SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(16)
while True:
    c, _ = s.accept()
    data = c.recv(65536)
    c.sendall(data)
    c.close()
"""

ECHO_CLIENT = """
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
c.sendall(sys.argv[3].encode()); print(c.recv(65536).decode())
"""


def start_echo(lab: Lab, server: Node, base_port: int = 7100) -> int:
    port = lab.listen_port(server, base_port)
    server.spawn([sys.executable, "-c", ECHO_SERVER, str(port)])
    server.wait_listening(port)
    return port


def echo(lab: Lab, client: Node, server: Node, port: int, message: str) -> str:
    addr, cport = lab.endpoint(client, server, port)
    out = client.run([sys.executable, "-c", ECHO_CLIENT, addr, str(cport), message], timeout=15)
    return out.stdout.strip()


class Capture:
    """tcpdump on one device of a lab namespace, written to a pcap file."""

    def __init__(self, netns: str, device: str, pcap: Path, bpf: str = "") -> None:
        self.pcap = pcap
        argv = ["tcpdump", "-i", device, "--immediate-mode", "-U", "-n", "-s", "0", "-w", str(pcap), *bpf.split()]
        self.proc = submit_in_netns(netns, lambda: subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)).result()
        assert self.proc.stderr is not None
        first = self.proc.stderr.readline().decode()  # "listening on ..." once attached
        assert "listening" in first, first

    def stop(self) -> bytes:
        self.proc.terminate()
        self.proc.wait(5)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        return self.pcap.read_bytes()

    def summary(self) -> str:
        out = subprocess.run(["tcpdump", "-n", "-r", str(self.pcap)], capture_output=True,
                             text=True, check=False)
        return out.stdout


def echo_on_the_wire(lab: Lab, client: Node, server: Node, message: str,
                     pcap: Path) -> tuple[str, bytes]:
    """Echo ``message`` from ``client`` to ``server`` while capturing the client's host wire
    (its switch port); the capture's tcpdump summary and raw bytes."""
    port = start_echo(lab, server)
    cap = Capture(lab.names.switch_ns, lab.names.switch_port(client.host), pcap)
    assert echo(lab, client, server, port, message) == message
    raw = cap.stop()
    return cap.summary(), raw


def benchmark_value(samples: list[Sample], metric: str, benchmark: str) -> float:
    """The one sample of ``metric`` labelled with ``benchmark`` (a Hadoop trial's)."""
    found = [s.value for s in samples
             if s.metric == metric and s.labels.get("benchmark") == benchmark]
    assert len(found) == 1, (metric, benchmark, found)
    return found[0]
