"""Docker layers on real machines' own engines (``docker: existing``), end to end: emulated
machines (``machines.py``) each running sshd and a Docker engine of their own; ``vnetbench
run`` builds docker-host, docker-userbridge and docker-macvlan labs across them with those
engines, runs rr and stream, and leaves every machine (firewall, links, routes, sysctls,
namespaces) and every engine (containers, networks, images) exactly as before, also after a
SIGKILL and ``vnetbench clean --host``. Modes that would change an engine or a machine's
firewall, a machine that did not say ``docker: existing`` and one whose engine does not
answer are refused in one line each, with nothing built."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import signals_at_default
from .machines import Machines, emulated_machines
from .test_machines import local_leftovers, refused, scenario, vnetbench

pytestmark = pytest.mark.root

LAYERS = ["docker-host", "docker-userbridge", "docker-macvlan"]
WORKLOADS = [{"rr": {"duration": "1s"}}, {"stream": {"duration": "1s"}}]


@pytest.fixture(scope="module")
def machines() -> Iterator[Machines]:
    with emulated_machines(2, docker=True) as m:
        yield m


def engine_objects(m: Machines) -> list[dict[str, str]]:
    """Every machine's containers, networks and images (what a lab could leave there)."""
    out = []
    for machine in m.machines:
        def docker(*args: str, machine: Any = machine) -> str:
            return subprocess.run([*machine.enter(), "docker", "-H", f"unix://{machine.engine_socket}",
                                   *args], capture_output=True, text=True, check=True,
                                  timeout=60).stdout
        out.append({"containers": docker("ps", "--all", "--format", "{{.Names}}"),
                    "networks": docker("network", "ls", "--format", "{{.Name}}"),
                    "images": docker("image", "ls", "--format", "{{.Repository}}")})
    return out


def test_docker_modes_run_on_the_machines_engines(tmp_path: Path, machines: Machines) -> None:
    m = machines
    before, engines = m.state(), engine_objects(m)
    out = tmp_path / "out"
    got = vnetbench("run", str(scenario(tmp_path, m, LAYERS, WORKLOADS, docker="existing")),
                    "--out", str(out))
    assert got.returncode == 0, got.stderr[-2000:]
    assert m.state() == before
    assert engine_objects(m) == engines
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    for layer in LAYERS:
        own = {(s["labels"].get("workload"), s["metric"]) for s in samples
               if s["labels"].get("layer") == layer and "machine" not in s["labels"]}
        assert ("rr", "tps") in own, (layer, own)
        assert any(w == "stream" and "goodput" in metric for w, metric in own), (layer, own)
        rr = [s["value"] for s in samples if s["labels"].get("layer") == layer
              and s["metric"] == "tps" and s["labels"].get("workload") == "rr"]
        assert min(rr) > 0, (layer, rr)
    labs = [json.loads(p.read_text()) for p in sorted(out.glob("raw/trial-*/lab.json"))]
    docker = [lab["docker"] for lab in labs if "docker" in lab]
    assert {d["mode"] for d in docker} == set(LAYERS)
    for d in docker:
        assert d["engine"] == "existing" and len(d["engine_versions"]) == 2
        assert all(v for v in d["engine_versions"])
        if d["mode"] != "docker-host":
            assert len(d["containers"]) == 4
    assert local_leftovers() == []


def test_a_killed_run_is_cleaned_from_the_machines_and_engines(
        tmp_path: Path, machines: Machines) -> None:
    m = machines
    before, engines = m.state(), engine_objects(m)
    path = scenario(tmp_path, m, ["docker-userbridge"], [{"rr": {"duration": "60s"}}],
                    docker="existing")
    proc = subprocess.Popen([sys.executable, "-m", "vnetbench", "run", str(path), "--out",
                             str(tmp_path / "out")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=signals_at_default)
    try:
        deadline = time.monotonic() + 90
        while not all(len(mach["netns"]) >= 2 for mach in m.state()["machines"]):
            assert time.monotonic() < deadline, "the lab was not built in time"
            assert proc.poll() is None, proc.communicate()[1][-1500:]
            time.sleep(0.3)
        time.sleep(1.0)
        assert engine_objects(m) != engines
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for spec in m.specs:
        got = vnetbench("clean", "--host", spec.ssh)
        assert got.returncode == 0 and "removed what run vnb" in got.stdout, got.stdout + got.stderr
    vnetbench("clean")
    assert m.state() == before
    assert engine_objects(m) == engines
    assert local_leftovers() == []


def test_what_a_machine_engine_cannot_give_is_refused(tmp_path: Path,
                                                       machines: Machines) -> None:
    m = machines
    lines = refused(tmp_path, m, ["docker-userbridge"])  # docker: private (the default)
    assert len(lines) == 2 and all("docker: existing" in line for line in lines), lines
    for layer, word in (("docker-bridge", "docker0"), ("docker-overlay", "swarm"),
                        ("docker-nat", "firewall")):
        lines = refused(tmp_path, m, [layer], docker="existing")
        assert len(lines) == 1 and layer in lines[0] and word in lines[0], lines


def test_a_machine_without_an_engine_is_refused(tmp_path: Path) -> None:
    with emulated_machines(2) as m:  # sshd only: `docker` there reaches no engine
        lines = refused(tmp_path, m, ["docker-host"], docker="existing")
        assert len(lines) == 2 and all("does not answer" in line for line in lines), lines
