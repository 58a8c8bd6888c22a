"""Build the class-data-sharing (AppCDS) archive of the Hadoop jars; run by 30-hadoop.sh.

    python3 -m vnetbench.workloads.hadoop.cds [HADOOP_HOME]

A training cluster on 127.0.0.1 (NameNode, DataNode, ResourceManager, NodeManager, temporary
directories, ports from 20000) runs with ``-XX:DumpLoadedClassList`` per JVM until HDFS has
its DataNode and YARN its NodeManager, then two HDFS clients and two small MapReduce jobs
(TeraGen, TeraSort: job client, MR ApplicationMaster, map and reduce tasks with their
shuffle); the merged class lists are dumped into a static archive (``-Xshare:dump``) for
the sorted jar classpath, written to ``HADOOP_HOME/hadoop.jsa``. Daemons, clients, AMs and
tasks then map those classes instead of loading and verifying them (``config.
task_admin_opts`` puts the jar list in front of the containers' classpath so the archive
applies to them). Failure leaves no archive (the workload runs without one) and exits
non-zero.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from vnetbench.workloads.hadoop.cluster import MAINS, http_get
from vnetbench.workloads.hadoop.config import (
    TASK_ADMIN_KEYS,
    ClusterSpec,
    NodeSpec,
    choose_block_size,
    jars_first_classpath,
    java_argv,
    plan_memory,
    site_files,
    task_admin_opts,
)
from vnetbench.workloads.hadoop.install import DEFAULT_HOME, HadoopHome, find_java
from vnetbench.workloads.hadoop.options import HadoopOptions

TRAIN_TIMEOUT_S = 180.0
EXAMPLES = "org.apache.hadoop.examples.terasort"
TRAINING_JOBS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (f"{EXAMPLES}.TeraGen", ("-Dmapreduce.job.maps=1", "20000", "/train/gen")),
    (f"{EXAMPLES}.TeraSort", ("-Dmapreduce.job.reduces=1", "/train/gen", "/train/sort")),
)
"""MapReduce jobs whose client, AM and task JVMs the archive learns from (2 MB of data)."""


def _get(url: str) -> Any:
    return json.loads(http_get(url))


def _ready(spec: ClusterSpec) -> bool:
    try:
        beans = _get(f"http://127.0.0.1:{spec.master_port('nn_http')}/jmx?qry=Hadoop:"
                     "service=NameNode,name=FSNamesystemState")["beans"]
        nodes = _get(f"http://127.0.0.1:{spec.master_port('rm_web')}/ws/v1/cluster/nodes")
        running = [n for n in (nodes["nodes"] or {}).get("node", [])
                   if n.get("state") == "RUNNING"]
        return bool(int(beans[0]["NumLiveDataNodes"]) >= 1 and running
                    and beans[0].get("FSState") == "Operational")
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return False


def _wait_apps_finished(spec: ClusterSpec, deadline: float) -> None:
    """Until every application's AM has exited (so its class list is complete): an AM
    unregisters, then sleeps 5 s before exiting, and its app is FINISHED only then."""
    url = f"http://127.0.0.1:{spec.master_port('rm_web')}/ws/v1/cluster/apps"
    while time.monotonic() < deadline:
        try:
            apps = (_get(url).get("apps") or {}).get("app", [])
            if all(a.get("state") in ("FINISHED", "FAILED", "KILLED") for a in apps):
                return
        except (OSError, ValueError, AttributeError):
            pass
        time.sleep(0.5)
    raise RuntimeError("the training jobs' ApplicationMasters did not exit")


def _dump_archive(home: HadoopHome, lists: list[Path], work: Path, out: Path) -> int:
    """Merge the JVMs' class lists (every class once, in first-loaded order) and dump the
    archive of them to ``out`` (by rename); the number of classes."""
    seen: dict[str, None] = {}
    for lst in lists:
        if lst.is_file():
            for line in lst.read_text(errors="replace").splitlines():
                if line and not line.startswith("#") and "@" not in line:
                    seen.setdefault(line.split()[0], None)
    merged = work / "all.lst"
    merged.write_text("\n".join(seen) + "\n")
    tmp_out = out.with_suffix(".tmp")
    subprocess.run([home.java, "-Xshare:dump", "-XX:+UseSerialGC",
                    f"-XX:SharedClassListFile={merged}", f"-XX:SharedArchiveFile={tmp_out}",
                    "-cp", ":".join(home.jars)], check=True, capture_output=True,
                   timeout=TRAIN_TIMEOUT_S)
    tmp_out.replace(out)
    return len(seen)


def build_archive(home: HadoopHome, out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="vnetbench-hadoop-cds-", dir="/var/tmp"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        options = HadoopOptions.model_validate({"data_root": str(work), "replication": 1})
        nodes = [NodeSpec("localhost", "127.0.0.1", i, work / f"n{i}") for i in range(2)]
        # AM and task JVMs: each dumps its class list ($$: the PID, expanded by the
        # container's launch script) and gets the jar-first classpath of the real runs
        task_opts = task_admin_opts(home.jars, None, f"-XX:DumpLoadedClassList={work}/task-$$.lst "
                                    + jars_first_classpath(home.jars))
        extra = dict.fromkeys(TASK_ADMIN_KEYS, task_opts)
        spec = ClusterSpec(options, nodes[0], (nodes[1],), home.jar_dir,
                           plan_memory(options, 1, 8 << 30), choose_block_size(options, 1),
                           extra, jars=home.jars)
        for node in nodes:
            node.conf_dir.mkdir(parents=True)
            node.log_dir.mkdir(parents=True)
            for name, text in site_files(spec, node).items():
                (node.conf_dir / name).write_text(text)
        lists: list[Path] = []
        env = {"JAVA_HOME": home.java_home, "PATH": "/usr/bin:/bin"}

        def argv(node: NodeSpec, role: str, main: str, *args: str) -> list[str]:
            lst = work / f"{role}-{len(lists)}.lst"
            lists.append(lst)
            webapps = home.webapps_parent if role in ("namenode", "datanode") else None
            cmd = java_argv(home.java, spec, node, role, main, args, webapps=webapps)
            return [cmd[0], f"-XX:DumpLoadedClassList={lst}", *cmd[1:]]

        subprocess.run(argv(nodes[0], "namenode", MAINS["namenode"], "-format", "-force",
                            "-nonInteractive"), check=True, capture_output=True, env=env,
                       timeout=TRAIN_TIMEOUT_S)
        for node, role in ((nodes[0], "namenode"), (nodes[0], "resourcemanager"),
                           (nodes[1], "datanode"), (nodes[1], "nodemanager")):
            log = open(node.log_dir / f"{role}.out", "wb")  # noqa: SIM115 - closed below
            procs.append(subprocess.Popen(argv(node, role, MAINS[role]), stdout=log,
                                          stderr=subprocess.STDOUT, env={**env,
                                          "HADOOP_CONF_DIR": str(node.conf_dir)}))
            log.close()
        deadline = time.monotonic() + TRAIN_TIMEOUT_S
        while not _ready(spec):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError("the training cluster did not come up")
            time.sleep(1.0)
        sample = work / "sample.txt"
        sample.write_text("vnetbench\n" * 1000)
        for shell_args in (("-put", str(sample), "/sample.txt"), ("-ls", "/")):
            subprocess.run(argv(nodes[0], "client", "org.apache.hadoop.fs.FsShell", *shell_args),
                           check=True, capture_output=True, env=env, timeout=TRAIN_TIMEOUT_S)
        for main, job_args in TRAINING_JOBS:
            subprocess.run(argv(nodes[0], "client", main, *job_args), check=True,
                           capture_output=True, env={**env, "HADOOP_CONF_DIR":
                                                     str(nodes[0].conf_dir)},
                           timeout=TRAIN_TIMEOUT_S, cwd=work)
        _wait_apps_finished(spec, time.monotonic() + 60.0)
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        classes = _dump_archive(home, [*lists, *sorted(work.glob("task-*.lst"))], work, out)
        print(f"cds: {classes} classes archived in {out}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else DEFAULT_HOME
    java, java_home = find_java()
    home = HadoopHome(root, java, java_home)
    try:
        build_archive(home, root / "hadoop.jsa")
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        print(f"cds: no archive built: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
