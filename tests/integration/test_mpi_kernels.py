"""Integration test of the MPI application kernels (the NAS Parallel Benchmarks' patterns).

Every kernel runs class S across a ``bridge`` lab of 4 nodes on 2 emulated hosts, one rank
per node. Each must pass its own verification (else the workload raises), take time, send
messages that crossed the nodes' lab interfaces, and show the pattern it was designed with:
LU many small messages, FT few very large ones, BT larger messages than SP, and so on.
About 10 s.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vnetbench.backends.lab import open_lab
from vnetbench.lab.spec import LabSpec
from vnetbench.workloads.mpi.workload import KERNELS, MpiOptions, MpiWorkload

from .labtools import dev_bytes

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(not (shutil.which("mpirun") and shutil.which("mpicc")),
                       reason="openmpi-bin / libopenmpi-dev not installed (scripts/setup.d/20-apps.sh)"),
]


def test_every_kernel_class_s_on_bridge(tmp_path: Path) -> None:
    results: dict[str, dict[str, float]] = {}
    moved: dict[str, int] = {}
    with open_lab(LabSpec(layer="bridge", hosts=2, nodes=4)) as lab:
        assert lab.nodes[0].host != lab.nodes[1].host
        for kernel in KERNELS:
            workload = MpiWorkload(MpiOptions.model_validate({"test": kernel, "class": "S",
                                                              "timeout": 60}))
            before = sum(dev_bytes(n) for n in lab.nodes)
            workload.prepare(lab)
            try:
                samples = workload.run(lab, tmp_path)
            finally:
                workload.cleanup(lab)
            moved[kernel] = sum(dev_bytes(n) for n in lab.nodes) - before
            for s in samples:
                assert s.labels["kernel"] == kernel and s.labels["class"] == "S", s
                assert s.labels["ranks"] == "4", s
            results[kernel] = {s.metric: s.value for s in samples}
            assert (tmp_path / f"mpi-{kernel}-S-n4.json").is_file()

    for kernel, m in results.items():
        assert m["mpi_runtime_s"] > 0 and m["mpi_messages_count"] > 0, (kernel, m)
        assert 0 < m["mpi_comm_s"] <= m["mpi_runtime_s"] + 1e-3, (kernel, m)
        assert m["mpi_mean_message_bytes"] == pytest.approx(
            m["mpi_bytes"] / m["mpi_messages_count"]), (kernel, m)
        # every rank is on its own node: each byte sent leaves one lab interface and enters
        # another (collectives are counted as their textbook algorithm: allow for that)
        assert moved[kernel] >= m["mpi_bytes"], (kernel, moved[kernel], m["mpi_bytes"])

    def mean(kernel: str) -> float:
        return results[kernel]["mpi_mean_message_bytes"]

    def count(kernel: str) -> float:
        return results[kernel]["mpi_messages_count"]

    # LU's pipelined wavefronts: many small messages; FT's transposes: few, very large ones
    assert mean("lu") * 50 < mean("ft"), {k: mean(k) for k in KERNELS}
    assert count("lu") > 20 * count("ft")
    assert mean("ft") == max(mean(k) for k in KERNELS)
    # BT sends larger forward-elimination messages than SP (30 values a face point, not 22)
    assert mean("bt") > mean("sp")
    # CG (25 steps an iteration, each with row, column and allreduce traffic) and LU talk
    # most often; MG's and IS's exchanges are few
    assert min(count("cg"), count("lu")) > max(count("mg"), count("is"))
    # IS moves its keys in one alltoallv an iteration: larger messages than CG's vector segments
    assert mean("is") > mean("cg")
    # class S stays well under a second of measured time each
    assert all(m["mpi_runtime_s"] < 5.0 for m in results.values()), results
