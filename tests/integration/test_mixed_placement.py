"""Mixed placement (one side on its emulated host's own stack, the other in the layer) and
stream directions (reverse, both at once), through the workload wrappers on real labs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from vnetbench.backends.lab import open_lab
from vnetbench.lab.spec import LabSpec
from vnetbench.results.model import Sample

from .labtools import run_mode

pytestmark = pytest.mark.root


def labelled(samples: list[Sample], metric: str) -> list[Sample]:
    return [s for s in samples if s.metric == metric]


def rx_bytes(netns: str, dev: str) -> int:
    out = subprocess.run(["ip", "-n", netns, "-s", "-j", "link", "show", dev],
                         capture_output=True, text=True, check=True).stdout
    return int(json.loads(out)[0]["stats64"]["rx"]["bytes"])


@pytest.mark.parametrize("layer", ["bridge", "nat"])
def test_a_native_client_reaches_a_server_in_the_layer_and_back(layer: str,
                                                               tmp_path: Path) -> None:
    with open_lab(LabSpec(layer, hosts=2, nodes=2)) as lab:
        native_client = run_mode(lab, "rr", {"duration": "1s", "client": "host"}, tmp_path)
        (tps,) = labelled(native_client, "tps")
        assert tps.value > 0 and tps.labels["client"] == "h1" and tps.labels["server"] == "n0"
        # another port: on nat, 7000 of host 0 is published to node 0 by now (as with
        # `docker run -p`, the host's own server cannot take a published port)
        native_server = run_mode(lab, "rr", {"duration": "1s", "server": "host", "port": 7001},
                                 tmp_path)
        (tps,) = labelled(native_server, "tps")
        assert tps.value > 0 and tps.labels["server"] == "h0" and tps.labels["client"] == "n1"


def test_reverse_and_bidirectional_streams(tmp_path: Path) -> None:
    with open_lab(LabSpec("bridge", hosts=2, nodes=2)) as lab:
        _, n1 = lab.nodes
        before = rx_bytes(n1.netns or "", n1.ifname)
        reverse = run_mode(lab, "stream", {"duration": "1s", "direction": "reverse"}, tmp_path)
        (goodput,) = labelled(reverse, "goodput_bps")
        assert goodput.labels == {**goodput.labels, "server": "n1",
                                  "client": "n0"}
        # node 0 sent: node 1 received about what the stream reports
        received = rx_bytes(n1.netns or "", n1.ifname) - before
        assert received >= 0.8 * goodput.value / 8
        both = run_mode(lab, "stream", {"duration": "1s", "direction": "both"}, tmp_path)
        by_direction = {s.labels["flow"]: s for s in labelled(both, "goodput_bps")}
        assert set(by_direction) == {"forward", "reverse"}
        assert all(s.value > 1e6 for s in by_direction.values())
        assert by_direction["forward"].labels["client"] == "n1"
        assert (tmp_path / "stream-tcp-x1-forward.jsonl").is_file()
        assert (tmp_path / "stream-tcp-x1-reverse.jsonl").is_file()


@pytest.mark.parametrize("layer", ["bridge", "docker-nat"])
def test_oltp_client_on_the_hosts_own_stack(layer: str, tmp_path: Path) -> None:
    import shutil

    from vnetbench.workloads.oltp import OltpOptions, OltpWorkload

    if not shutil.which("sysbench") or not shutil.which("mariadbd"):
        pytest.skip("sysbench and mariadb-server are installed by scripts/setup.sh")
    options = OltpOptions(tables=1, table_size=500, threads=2, duration=1.0, client="host")
    assert options.labels() == {"placement": "client-host"}
    with open_lab(LabSpec(layer, hosts=2, nodes=2, services=[options.port])) as lab:
        workload = OltpWorkload(options)
        workload.prepare(lab)
        try:
            samples = workload.run(lab, tmp_path)
        finally:
            workload.cleanup(lab)
    (tps,) = labelled(samples, "tps")
    assert tps.value > 50 and tps.labels["client"] == "h1"


def test_a_native_client_with_no_route_to_an_overlay_node_is_skipped(tmp_path: Path) -> None:
    from vnetbench.errors import WorkloadSkipped

    with open_lab(LabSpec("vxlan", hosts=2, nodes=2)) as lab:
        with pytest.raises(WorkloadSkipped, match="has no route to n0"):
            run_mode(lab, "rr", {"duration": "1s", "client": "host"}, tmp_path)
        assert labelled(run_mode(lab, "rr", {"duration": "1s"}, tmp_path), "tps")


def test_a_host_never_reaches_its_own_macvlan_children(tmp_path: Path) -> None:
    from vnetbench.errors import WorkloadSkipped

    with (open_lab(LabSpec("macvlan", hosts=1, nodes=2)) as lab,
          pytest.raises(WorkloadSkipped, match="child of its own interface")):
        run_mode(lab, "rr", {"duration": "1s", "client": "host"}, tmp_path)
