"""Integration test of the MPI gap test and of mixed placement (rank 0 on its host's stack).

A ``bridge`` lab of 2 nodes on 2 emulated hosts. With ``rank0: host`` mpirun and rank 0 run
in host 0's own namespace (study 001's native sender) and rank 1 in node 1: ping-pong must
measure round trips that crossed node 1's lab interface and host 0's underlay, not node 0's.
The constant-rate gap test runs with rank 0 in node 0 and on its host; at 1000 messages/s
the median send gap must be the period (1000 us) within 10 %, every timed message must
arrive, and the receive gaps must average the period. About 10 s.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vnetbench.backends.lab import Lab, open_lab
from vnetbench.host.netns import read_in_netns
from vnetbench.lab.spec import LabSpec
from vnetbench.results.model import Sample
from vnetbench.workloads.mpi.workload import GAP_PREFIXES, STATS, MpiOptions, MpiWorkload

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(not (shutil.which("mpirun") and shutil.which("mpicc")),
                       reason="openmpi-bin / libopenmpi-dev not installed (scripts/setup.d/20-apps.sh)"),
]

RATE = 1000.0


def dev_bytes(netns: str, ifname: str) -> int:
    """rx + tx bytes of ``ifname`` in namespace ``netns``."""
    for line in read_in_netns(netns, "net/dev").splitlines()[2:]:
        name, _, rest = line.partition(":")
        if name.strip() == ifname:
            fields = rest.split()
            return int(fields[0]) + int(fields[8])
    raise AssertionError(f"{ifname} not in /proc/net/dev of {netns}")


def run(lab: Lab, options: MpiOptions, raw: Path) -> dict[str, float]:
    workload = MpiWorkload(options)
    workload.prepare(lab)
    try:
        samples: list[Sample] = workload.run(lab, raw)
    finally:
        workload.cleanup(lab)
    assert not list(lab.work_dir.glob("mpi-*")), "MPI files left after cleanup"
    for s in samples:
        assert s.labels["test"] == options.test and s.labels["ranks"] == "2", s
    return {s.metric: s.value for s in samples}


def check_gaps(m: dict[str, float]) -> None:
    period = 1e6 / RATE
    assert {f"{p}_{s}_us" for p in GAP_PREFIXES for s in STATS} <= set(m)
    assert m["gaps_sent"] == m["gaps_received"] == RATE * 2
    assert m["send_gap_p50_us"] == pytest.approx(period, rel=0.10), m
    assert m["recv_gap_p50_us"] == pytest.approx(period, rel=0.10), m
    assert m["recv_gap_dev_p50_us"] == pytest.approx(m["recv_gap_p50_us"] - period, abs=0.01)
    assert m["send_gap_mean_us"] == pytest.approx(period, rel=0.05), m
    assert m["send_gap_min_us"] <= m["send_gap_p50_us"] <= m["send_gap_max_us"]
    assert m["gaps_late"] < 0.25 * m["gaps_sent"], m  # a loaded machine wakes late at times


def test_rank0_on_host_and_gaps(tmp_path: Path) -> None:
    with open_lab(LabSpec(layer="bridge", hosts=2, nodes=2)) as lab:
        n0, n1 = lab.nodes
        h0 = lab.host_node(n0.host)
        assert n0.host != n1.host and h0.netns is not None and n0.netns is not None
        assert n1.netns is not None

        def moved() -> dict[str, int]:
            return {"n0": dev_bytes(n0.netns or "", n0.ifname),
                    "n1": dev_bytes(n1.netns or "", n1.ifname),
                    "h0": dev_bytes(h0.netns or "", h0.ifname)}

        before = moved()
        pp = run(lab, MpiOptions(test="pingpong", iterations=2000, rank0="host"), tmp_path)
        after = moved()
        assert 0 < pp["rtt_min_us"] <= pp["rtt_p50_us"] <= pp["rtt_max_us"], pp
        assert pp["rtt_iterations"] == 2000
        # rank 0 talked from host 0's underlay to node 1; node 0 took no part
        assert after["n1"] - before["n1"] > 2000 * 60, (before, after)
        assert after["h0"] - before["h0"] > 2000 * 60, (before, after)
        assert after["n0"] - before["n0"] < 10_000, (before, after)
        assert (tmp_path / "mpi-pingpong-n2-s8-rank0host.json").is_file()

        for rank0 in ("node", "host"):
            options = MpiOptions.model_validate({"test": "gaps", "rate": RATE, "size": 64,
                                                 "duration": "2s", "rank0": rank0})
            check_gaps(run(lab, options, tmp_path))
        assert (tmp_path / "mpi-gaps-n2-s64-r1000.json").is_file()
        assert (tmp_path / "mpi-gaps-n2-s64-r1000-rank0host.json").is_file()
