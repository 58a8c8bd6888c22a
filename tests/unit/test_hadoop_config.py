"""The hadoop workload's pure parts: options, ports, block size, memory plan, site XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from vnetbench.scenario.sweep import load_scenario
from vnetbench.workloads.hadoop import EXTRA_NODES
from vnetbench.workloads.hadoop.config import (
    GUEST_SHARE,
    HOST_SHARE,
    SERVICES,
    ClusterSpec,
    Machine,
    NodeSpec,
    choose_block_size,
    java_argv,
    plan_memory,
    port_of,
    site_files,
)
from vnetbench.workloads.hadoop.options import HadoopOptions, MiB
from vnetbench.workloads.registry import workload_models

GiB = 1024 * MiB
ROOT = Path(__file__).resolve().parents[2]


def props(xml_text: str) -> dict[str, str]:
    tree = ET.fromstring(xml_text)
    return {p.findtext("name") or "": p.findtext("value") or "" for p in tree.iter("property")}


def spec_for(options: HadoopOptions, workers: int = 2, shift: bool = False) -> ClusterSpec:
    nodes = [NodeSpec("master0" if i == 0 else f"worker{i}", f"10.1.0.{i + 2}",
                      i if shift else 0, Path(f"/var/tmp/vnetbench/abcd/hadoop/n{i}"))
             for i in range(workers + 1)]
    memory = plan_memory(options, workers, 24 * GiB)
    return ClusterSpec(options, nodes[0], tuple(nodes[1:]), Path("/cache/jars"), memory,
                       choose_block_size(options, workers), dict(options.properties))


def test_registered_with_an_extra_master_node() -> None:
    assert workload_models()["hadoop"] is HadoopOptions
    assert EXTRA_NODES == 1


def test_options_defaults_and_validation() -> None:
    o = HadoopOptions.model_validate({"benchmarks": ["teragen", "terasort", "teravalidate",
                                                     "dfsio", "wordcount", "nnbench",
                                                     "mrbench", "pi"], "data": "100MB"})
    assert o.data == 100_000_000 and o.replication == 2 and o.io_buffer == 131072
    with pytest.raises(ValidationError, match="terasort needs teragen"):
        HadoopOptions.model_validate({"benchmarks": ["terasort"]})
    with pytest.raises(ValidationError, match="teravalidate needs terasort"):
        HadoopOptions.model_validate({"benchmarks": ["teragen", "teravalidate", "terasort"]})
    with pytest.raises(ValidationError):
        HadoopOptions.model_validate({"benchmarks": ["sort"]})
    with pytest.raises(ValidationError):
        HadoopOptions.model_validate({"replicas": 3})
    with pytest.raises(ValidationError, match="multiple of 512"):
        HadoopOptions.model_validate({"block_size": 1_000_001})
    with pytest.raises(ValidationError, match="at most once"):
        HadoopOptions.model_validate({"benchmarks": ["pi", "pi"]})
    with pytest.raises(ValidationError):
        HadoopOptions.model_validate({"dfsio": {"files": 0}})


def test_block_size_auto_and_explicit() -> None:
    assert choose_block_size(HadoopOptions.model_validate({"data": "100MB"}), 2) == 16 * MiB
    assert choose_block_size(HadoopOptions.model_validate({"data": "10GB"}), 2) == 128 * MiB
    assert choose_block_size(HadoopOptions.model_validate({"data": "2MB"}), 16) == MiB
    assert choose_block_size(HadoopOptions.model_validate({"block_size": "128m"}), 2) == 128 * MiB


def test_ports_distinct_for_nodes_sharing_a_namespace() -> None:
    ports = {port_of(20000, s, shift) for s in SERVICES for shift in range(100)}
    assert len(ports) == len(SERVICES) * 100
    assert max(ports) < 32768  # below the ephemeral range


def test_site_files_carry_the_options() -> None:
    options = HadoopOptions.model_validate({"data": "100MB", "replication": 2,
                                            "map_memory": "512M",
                                            "properties": {"dfs.heartbeat.interval": "3"}})
    spec = spec_for(options)
    worker = spec.workers[0]
    files = site_files(spec, worker)
    assert set(files) == {"core-site.xml", "hdfs-site.xml", "yarn-site.xml", "mapred-site.xml",
                          "log4j.properties"}
    core, hdfs = props(files["core-site.xml"]), props(files["hdfs-site.xml"])
    yarn, mapred = props(files["yarn-site.xml"]), props(files["mapred-site.xml"])
    assert core["fs.defaultFS"] == "hdfs://master0:20000"
    assert core["io.file.buffer.size"] == "131072"
    assert hdfs["dfs.replication"] == "2"
    assert hdfs["dfs.blocksize"] == str(16 * MiB)
    assert hdfs["dfs.datanode.address"] == "10.1.0.3:20200"
    assert hdfs["dfs.datanode.hostname"] == "worker1"
    assert hdfs["dfs.datanode.data.dir"] == "/var/tmp/vnetbench/abcd/hadoop/n1/dfs/data"
    assert yarn["yarn.resourcemanager.address"] == "master0:20500"
    assert yarn["yarn.nodemanager.address"] == "worker1:21000"
    assert yarn["yarn.nodemanager.vmem-check-enabled"] == "false"
    assert yarn["yarn.nodemanager.pmem-check-enabled"] == "false"
    assert yarn["yarn.application.classpath"] == "$HADOOP_CONF_DIR,/cache/jars/*"
    assert yarn["yarn.nodemanager.resource.memory-mb"] == str(2 * 512)
    assert mapred["mapreduce.application.classpath"] == "/cache/jars/*"
    assert mapred["mapreduce.framework.name"] == "yarn"
    assert mapred["mapreduce.map.memory.mb"] == "512"
    assert mapred["mapreduce.map.java.opts"].startswith("-Xmx384m ")
    assert mapred["mapreduce.reduce.memory.mb"] == "384"
    # user properties override ours in every site file (a mapreduce.* key only in
    # core-site.xml would lose to mapred-default.xml, which JobConf loads after it)
    for site in (core, hdfs, yarn, mapred):
        assert site["dfs.heartbeat.interval"] == "3"
    assert "master0" in spec.hosts_file() and "10.1.0.4\tworker2" in spec.hosts_file()


def test_shifted_ports_on_shared_namespace() -> None:
    spec = spec_for(HadoopOptions(), shift=True)
    hdfs = props(site_files(spec, spec.workers[1])["hdfs-site.xml"])
    assert hdfs["dfs.datanode.address"] == "10.1.0.4:20202"


def test_sixteen_workers_fit_in_24_gib() -> None:
    options = HadoopOptions.model_validate({"data": "100MB"})
    plan = plan_memory(options, 16, 24 * GiB)
    assert plan.containers_per_worker == 2
    assert plan.estimated_peak_mib() * MiB <= 24 * GiB * HOST_SHARE
    assert plan.as_dict()["estimated_peak_mib"] == plan.estimated_peak_mib()


def test_memory_plan_lowers_slots_then_refuses() -> None:
    options = HadoopOptions.model_validate({"containers_per_worker": 8})
    plan = plan_memory(options, 16, 24 * GiB)
    assert 1 <= plan.containers_per_worker < 8
    assert plan.estimated_peak_mib() * MiB <= 24 * GiB * HOST_SHARE
    with pytest.raises(ValueError, match="use fewer workers"):
        plan_memory(options, 16, 4 * GiB)


def test_memory_plan_for_vm_guests_checks_each_guest_against_its_own_memory() -> None:
    options = HadoopOptions()  # two 384 MiB containers per worker
    # vm: a master guest and a worker guest of 2 GiB each: both fit, on their own
    vm = plan_memory(options, 1, 24 * GiB, [Machine(2048, True, 0), Machine(2048, False, 1)])
    assert vm.containers_per_worker == 2
    assert all(vm.guest_peak_mib(g) <= g.memory_mib * GUEST_SHARE for g in vm.guests)
    assert vm.as_dict()["guests"] == [
        {"memory_mib": 2048, "master": True, "workers": 0, "peak_mib": vm.master_peak_mib()},
        {"memory_mib": 2048, "master": False, "workers": 1, "peak_mib": vm.worker_peak_mib()}]
    # the guests' default 512 MiB holds no master: one clear error says what to raise
    with pytest.raises(ValueError, match=r"VM guest of 512 MiB holds the master.*resources\.memory"):
        plan_memory(options, 1, 24 * GiB, [Machine(512, True, 0), Machine(2048, False, 1)])
    # vmhost: master and worker share one guest, so their peaks add up there
    with pytest.raises(ValueError, match="1 worker\\(s\\) and the master"):
        plan_memory(options, 1, 24 * GiB, [Machine(2048, True, 1)])
    shared = plan_memory(options, 1, 24 * GiB, [Machine(4096, True, 1)])
    assert shared.guest_peak_mib(shared.guests[0]) == shared.estimated_peak_mib()
    # a big host does not rescue a small guest, a small host does not sink big guests
    assert plan_memory(options, 1, 1 * GiB, [Machine(2048, True, 0), Machine(2048, False, 1)])


def test_datanodes_in_guests_keep_no_free_space_margin() -> None:
    spec = spec_for(HadoopOptions())
    margin = "dfs.datanode.round-robin-volume-choosing-policy.additional-available-space"
    assert margin not in props(site_files(spec, spec.workers[0])["hdfs-site.xml"])
    guests = replace(spec, in_guests=True)
    assert props(site_files(guests, guests.workers[0])["hdfs-site.xml"])[margin] == "0"


def test_java_argv_adds_opens_for_daemons_only() -> None:
    spec = spec_for(HadoopOptions())
    rm = java_argv("java", spec, spec.master, "resourcemanager", "RM")
    nn = java_argv("java", spec, spec.master, "namenode", "NN", webapps=Path("/cache"))
    client = java_argv("java", spec, spec.master, "client", "C")
    assert "--add-opens=java.base/java.lang=ALL-UNNAMED" in rm
    assert "--add-opens=java.base/java.lang=ALL-UNNAMED" in nn  # WebHDFS (Jersey)
    assert not any(a.startswith("--add-opens") for a in client)
    assert nn[nn.index("-cp") + 1].split(":") == ["/cache/jars/*", str(spec.master.conf_dir),
                                                  "/cache"]
    archived = replace(spec, jars=("/a.jar", "/b.jar"), cds=Path("/cache/hadoop.jsa"))
    listed = java_argv("java", archived, archived.master, "client", "C")
    assert listed[listed.index("-cp") + 1].startswith("/a.jar:/b.jar:")
    assert "-XX:SharedArchiveFile=/cache/hadoop.jsa" in listed
    assert "-Xmx256m" in nn and nn[-1] == "NN"


def test_daemons_keep_their_scratch_files_under_the_nodes_root() -> None:
    """Jetty's ``jetty-*`` directories go to java.io.tmpdir: the node's own tmp (removed with
    the cluster), never the host's /tmp, where every run used to leave a dozen."""
    spec = spec_for(HadoopOptions())
    for node in (spec.master, spec.workers[0]):
        argv = java_argv("java", spec, node, "datanode", "DN")
        assert f"-Djava.io.tmpdir={node.root / 'tmp'}" in argv
        assert argv.index(f"-Djava.io.tmpdir={node.root / 'tmp'}") < argv.index("-cp")


@pytest.mark.parametrize("name", ["hadoop-quick.yaml", "hadoop-scaling.yaml"])
def test_scenarios_load(name: str) -> None:
    scenario = load_scenario(ROOT / "scenarios" / name)
    assert scenario.points


def test_extra_nodes_on_the_options_model() -> None:
    assert HadoopOptions.extra_nodes == EXTRA_NODES == 1
    assert "extra_nodes" not in HadoopOptions.model_fields


def test_wordcount_corpus_has_the_requested_size(tmp_path: Path) -> None:
    from vnetbench.workloads.hadoop.corpus import write_corpus

    path = tmp_path / "input.txt"
    write_corpus(path, 3_000_000)
    data = path.read_bytes()
    assert len(data) == 3_000_000
    assert data.count(b"\n") > 10_000 and b"hadoop" in data


def test_wordcount_corpus_follows_zipfs_law(tmp_path: Path) -> None:
    """The word of rank r appears about 1/r as often as the most frequent one."""
    from collections import Counter

    from vnetbench.workloads.hadoop.corpus import write_corpus

    path = tmp_path / "input.txt"
    write_corpus(path, 2_000_000)
    counts = [n for _, n in Counter(path.read_text().split()).most_common()]
    for rank in (2, 5, 10):
        assert 0.6 < counts[rank - 1] * rank / counts[0] < 1.5, (rank, counts[:10])
    assert len(counts) > 5000  # a long tail, not a handful of words repeated


def test_task_jvms_map_the_archive_with_the_jars_first() -> None:
    """With an archive, AM and task JVMs map it and put the dump-time jar list in front of
    the container's classpath; without one, the NodeManager's classpath is left alone."""
    keys = ("yarn.app.mapreduce.am.admin-command-opts", "mapreduce.admin.map.child.java.opts",
            "mapreduce.admin.reduce.child.java.opts")  # spelled out: Hadoop's own key names
    plain = spec_for(HadoopOptions())
    archived = replace(plain, cds=Path("/cache/hadoop.jsa"), jars=("/cache/jars/a.jar",
                                                                   "/cache/jars/b.jar"))
    for spec in (plain, archived):
        mapred = props(site_files(spec, spec.workers[0])["mapred-site.xml"])
        opts = {mapred[k] for k in keys}
        assert len(opts) == 1
        (value,) = opts
        assert "-Djava.net.preferIPv4Stack=true" in value  # mapred-default's admin option kept
        if spec.cds is None:
            assert "-cp" not in value and "SharedArchiveFile" not in value
        else:
            assert "-XX:SharedArchiveFile=/cache/hadoop.jsa" in value
            assert value.endswith("-cp /cache/jars/a.jar:/cache/jars/b.jar:$CLASSPATH")


def test_benchmarks_name_their_files_by_absolute_path(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A run given a relative --out: the clients run in the raw directory and are handed files
    in it (TestDFSIO's -resFile), so the path must not be relative (it was named twice over:
    every TestDFSIO failed with FileNotFoundException)."""
    from vnetbench.workloads.hadoop.benchmarks import Bench

    monkeypatch.chdir(tmp_path)
    bench = Bench(cluster=None, raw_dir=Path("out/raw/trial-0000"))  # type: ignore[arg-type]
    assert bench.raw_dir == tmp_path / "out" / "raw" / "trial-0000"
