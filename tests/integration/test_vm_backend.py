"""The ``vm`` and ``vmhost`` backends on real QEMU guests (TCG on this machine): two VM
nodes on ``bridge`` and on ``vxlan`` across two emulated hosts run ``rr`` and ``stream``; a
VM host with two namespace nodes inside runs ``rr``; after a SIGKILL, ``vnetbench clean``
leaves no QEMU, TAP, namespace or file of the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vnetbench.backends.lab import open_lab
from vnetbench.backends.vm.find import find_qemu
from vnetbench.backends.vm.guest_kernel import find_kernel
from vnetbench.backends.vm.node import GUEST_WORK_DIR
from vnetbench.errors import MissingToolError, WorkloadSkipped
from vnetbench.lab.spec import LabSpec
from vnetbench.lab.topology import Resources
from vnetbench.results.model import Sample
from vnetbench.workloads.oltp import OltpOptions, OltpWorkload

from ..conftest import lab_leftovers, qemu_guest_names, signals_at_default
from .labtools import run_mode
from .test_apps import needs_mariadb

pytestmark = pytest.mark.root


@pytest.fixture(scope="module", autouse=True)
def _qemu_and_kernel() -> None:
    try:
        find_qemu()
        find_kernel()
    except MissingToolError as exc:
        pytest.skip(str(exc))


def value(samples: list[Sample], metric: str) -> float:
    found = [s.value for s in samples if s.metric == metric]
    assert len(found) == 1, f"{metric}: {len(found)} samples"
    return found[0]


def guests_of(run_id: str) -> list[str]:
    return [n for n in qemu_guest_names() if n.startswith(f"vnb{run_id}-")]


@pytest.mark.parametrize("layer", ["vm-bridge", "vm-vxlan"])
def test_two_vm_nodes_across_two_hosts_run_rr_and_stream(layer: str, tmp_path: Path) -> None:
    with open_lab(LabSpec(layer, hosts=2, nodes=2, services=(7000,))) as lab:
        run_id = lab.run_id
        assert len(guests_of(run_id)) == 2
        facts = lab.backend_facts()["vm"]
        assert facts["accel"] in ("kvm", "tcg") and facts["why"]
        assert facts["emulated_cpu"] == (facts["accel"] == "tcg")
        assert [n.netns for n in lab.nodes] == [None, None]
        assert [n.host for n in lab.nodes] == [0, 1]
        rr = run_mode(lab, "rr", {"duration": "2s"}, tmp_path)
        assert value(rr, "tps") > 0 and value(rr, "rtt_p50_us") > 0
        stream = run_mode(lab, "stream", {"duration": "2s"}, tmp_path)
        assert value(stream, "goodput_bps") > 1e6
        # the packets crossed the emulated hosts' underlay (the path under test)
        underlay = subprocess.run(["ip", "-n", lab.names.host_ns(0), "-s", "-j", "link",
                                   "show", lab.names.underlay(0)], capture_output=True,
                                  text=True, check=True).stdout
        assert json.loads(underlay)[0]["stats64"]["rx"]["bytes"] > 1e6  # to the server n0
    assert guests_of(run_id) == []
    assert [x for x in lab_leftovers() if f"vnb{run_id}" in x] == []


@pytest.mark.heavy
@needs_mariadb
def test_oltp_keeps_the_servers_files_in_its_guest(tmp_path: Path) -> None:
    options = OltpOptions(tables=1, table_size=1000, threads=2, duration=2.0)
    spec = LabSpec("vm-bridge", hosts=1, nodes=2, services=(options.port,),
                   resources=Resources(memory=1024 * 2**20))
    with open_lab(spec) as lab:
        server = lab.nodes[0]
        workload = OltpWorkload(options)
        workload.prepare(lab)
        try:
            datadir = workload._dir
            assert datadir is not None and datadir.is_relative_to(GUEST_WORK_DIR)
            assert server.run(["test", "-d", str(datadir / "data")]).returncode == 0
            assert not datadir.exists()  # in the guest, not on this host
            samples = workload.run(lab, tmp_path / "raw")
        finally:
            workload.cleanup(lab)
        assert server.run(["test", "-e", str(datadir)], check=False).returncode != 0
    tps = [s.value for s in samples if s.metric == "tps"]
    errors = [s.value for s in samples if s.metric == "errors"]
    assert len(tps) == 1 and tps[0] > 0 and errors == [0.0]


def test_a_vm_host_with_two_namespace_nodes_inside_runs_rr(tmp_path: Path) -> None:
    with open_lab(LabSpec("vmhost-bridge", hosts=1, nodes=2, services=(7000,))) as lab:
        run_id = lab.run_id
        assert guests_of(run_id) == [f"vnb{run_id}-g0"]  # one guest: the host
        for node in lab.nodes:  # each node is a namespace inside the guest
            assert node.netns is None
            assert node.run(["ip", "netns", "identify"]).stdout.strip() == f"vnb{run_id}-{node.name}"
            assert node.run(["hostname"]).stdout.strip() == "h0"
        rr = run_mode(lab, "rr", {"duration": "2s"}, tmp_path)
        assert value(rr, "tps") > 0
        # a native side is skipped there by design (the trial goes on), not a failure
        with pytest.raises(WorkloadSkipped, match="virtual machines"):
            lab.host_node(0)
    assert guests_of(run_id) == []
    assert [x for x in lab_leftovers() if f"vnb{run_id}" in x] == []


HOLDER = """
import time
from vnetbench.backends.lab import open_lab
from vnetbench.lab.spec import LabSpec
with open_lab(LabSpec("vm-bridge", hosts=1, nodes=2)) as lab:
    lab.nodes[0].spawn(["sleep", "300"])
    print(lab.run_id, flush=True)
    time.sleep(300)
"""


def test_sigkill_then_clean_leaves_no_guest_tap_namespace_or_file() -> None:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True,
                            preexec_fn=signals_at_default)
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    assert len(run_id) == 4, run_id
    work = Path(f"/run/vnetbench/work/{run_id}")
    assert len(guests_of(run_id)) == 2 and any(work.glob("*/console.log"))
    proc.kill()
    proc.wait(10)
    proc.stdout.close()
    assert guests_of(run_id), "SIGKILL cannot stop the guests; clean must"
    out = subprocess.run([sys.executable, "-m", "vnetbench", "clean"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert guests_of(run_id) == []
    assert [x for x in lab_leftovers() if f"vnb{run_id}" in x] == []
    assert not work.exists() and not Path(f"/run/vnetbench/{run_id}.json").exists()
