"""Lifecycle of a Hadoop cluster inside a lab: configure, start, wait until ready, stop.

``lab.nodes[0]`` is the master (NameNode, ResourceManager, optionally JobHistoryServer);
every other node is a worker (DataNode + NodeManager). Each daemon runs as
``unshare --uts --mount`` + ``enter`` (own hostname, the cluster's hosts file over
``/etc/hosts``) + ``java -cp conf:cache:jars/* MainClass``, bound to its node's address.
State lives on disk under ``<data_root>/<run id>/hadoop/<node>`` (not the lab's tmpfs),
recorded in the run's state file before it is made (so ``vnetbench clean`` removes it after
a killed run, wherever ``data_root`` is); the NameNode's directory starts as a copy of a
formatted one kept in the jar cache.

Ready means: every DataNode registered and the NameNode out of safe mode (NameNode JMX),
every NodeManager RUNNING (ResourceManager REST), both read over HTTP from a thread inside
the master's namespace; a daemon that exits meanwhile raises WorkloadError with its log
tail. ``stop`` sends SIGKILL to every daemon (the state is thrown away), then kills task
JVMs left in the nodes (processes inside the lab's namespaces whose command line names this
cluster's directory) and removes the directories.

Nodes in VM guests (the ``vm`` and ``vmhost`` backends) run the same daemons from the same
Java and jars, which they see through the host's root over 9p. What a guest's processes
write lives in the guest: each node's directory (configuration, HDFS, NodeManager and task
files) is made and written there through the guest's agent, at the same path as on the host;
the host keeps the configuration and the daemons' logs, which their agent clients relay. The
memory plan is checked against each guest's own memory (read in the guest, as its boot id
that tells which nodes share one), readiness and HDFS reads go over HTTP from a Python in the
master's guest, and peak RSS and leftover task JVMs are found by a look at the guest's
``/proc``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vnetbench.errors import CommandError, WorkloadError
from vnetbench.host.node import pids_in
from vnetbench.host.state import process_alive
from vnetbench.userpaths import trusted_dir
from vnetbench.workloads.hadoop.config import (
    ClusterSpec,
    Machine,
    NodeSpec,
    choose_block_size,
    java_argv,
    plan_memory,
    site_files,
)
from vnetbench.workloads.hadoop.install import HadoopHome
from vnetbench.workloads.hadoop.options import HadoopOptions, MiB

if TYPE_CHECKING:
    from vnetbench.host.node import Node
    from vnetbench.workloads.labview import LabView

MAINS = {
    "namenode": "org.apache.hadoop.hdfs.server.namenode.NameNode",
    "datanode": "org.apache.hadoop.hdfs.server.datanode.DataNode",
    "resourcemanager": "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager",
    "nodemanager": "org.apache.hadoop.yarn.server.nodemanager.NodeManager",
    "jobhistory": "org.apache.hadoop.mapreduce.v2.hs.JobHistoryServer",
}
POLL_S = 0.2
GUEST_POLL_S = 2.0
"""Seconds between readiness looks when each is a Python started in a VM guest."""
GUEST_LOOK_S = 120.0
"""Seconds a command in a VM guest may take (under TCG a Python starts in seconds)."""
GUEST_JVM_S = 5 * GUEST_LOOK_S
"""Seconds a one-off Hadoop JVM in a VM guest may take (a format, a file-system command)."""
SUBDIRS = ("conf", "logs", "tmp", "dfs", "nm-local", "nm-logs")
GUEST_FETCH = ("import sys, urllib.request as u\n"
               "o = u.build_opener(u.ProxyHandler({}))\n"
               "sys.stdout.write(o.open(sys.argv[1], timeout=float(sys.argv[2])).read()"
               ".decode('utf-8', 'replace'))\n")
"""``http_get`` inside a guest: ``python3 -c GUEST_FETCH URL TIMEOUT`` prints the body."""
GUEST_PROCS = r"""marker=$1
for d in /proc/[0-9]*; do
  pid=${d#/proc/}
  [ "$pid" = "$$" ] && continue
  cmd=$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null) || continue
  case "$cmd" in
    *"$marker"*) echo "$pid $(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' "$d/status" 2>/dev/null) $cmd";;
  esac
done
"""
"""Lines ``PID VMHWM_KB CMDLINE`` of a guest's processes whose command line names ``$1``."""


@dataclass
class Daemon:
    role: str
    node: Node
    proc: subprocess.Popen[bytes]
    log: Path


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(url: str, timeout: float = 5.0) -> bytes:
    """The body at ``url``, fetched directly (a proxy set in the environment never applies:
    the cluster's addresses exist only inside the lab)."""
    with _DIRECT.open(url, timeout=timeout) as resp:
        return bytes(resp.read())


def host_memory_bytes() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise WorkloadError("cannot read MemTotal from /proc/meminfo")


def log_tail(path: Path, lines: int = 4) -> str:
    """The first error of a daemon's log (with its cause) and the log's last lines."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except FileNotFoundError:
        return "(no log)"
    first = next((i for i, ln in enumerate(text) if " ERROR " in ln or " FATAL " in ln), None)
    head = text[first:first + 2] if first is not None else []
    causes = [ln.strip() for ln in text if ln.startswith("Caused by:")][-1:]
    tail = [ln for ln in text[-lines:] if ln not in head]
    return " | ".join([*head, *causes, *tail])


class HadoopCluster:
    """One cluster per trial: ``start`` in prepare, ``client`` to run jobs, ``stop``."""

    def __init__(self, lab: LabView, options: HadoopOptions, home: HadoopHome) -> None:
        if lab.layer.publishes_ports:
            raise WorkloadError(
                f"the hadoop workload does not support the {lab.layer.name!r} layer: Hadoop "
                "daemons hand out their own addresses, which are not reachable behind NAT "
                "port publishing; remove it from the scenario's layers for hadoop")
        if len(lab.nodes) < 2:
            raise WorkloadError(f"the hadoop workload needs a master and at least one worker: "
                                f"the lab has {len(lab.nodes)} node(s)")
        for node in lab.nodes:
            if not node.shares_host_files:
                raise WorkloadError(
                    f"the hadoop workload needs nodes that see this host's Java, Hadoop jars "
                    f"and vnetbench: node {node.name} does not (a machine over SSH or a pod); "
                    "use a namespace, Docker or VM layer for hadoop")
        in_guests = {node.netns is None for node in lab.nodes}
        if len(in_guests) > 1:
            raise WorkloadError("the hadoop workload cannot mix nodes on this host with nodes "
                                "in VM guests in one cluster")
        self.guests = in_guests == {True}
        """The nodes run in VM guests (their files are kept there, see the module's text)."""
        self.lab = lab
        self.options = options
        self.home = home
        self.master: Node = lab.nodes[0]
        self.workers: list[Node] = list(lab.nodes[1:])
        self.root = Path(options.data_root) / lab.run_id / "hadoop"
        self.made: list[Path] = []
        """What this cluster made under ``data_root`` (``claim_root``), innermost first: all
        ``stop`` removes."""
        self.hosts_path = self.root / "hosts"
        self.daemons: list[Daemon] = []
        self.startup_s = 0.0
        specs = [self._node_spec(n) for n in lab.nodes]
        try:
            memory = plan_memory(options, len(self.workers), host_memory_bytes(),
                                 self.guest_machines() if self.guests else ())
        except ValueError as exc:
            raise WorkloadError(str(exc)) from exc
        self.spec = ClusterSpec(options, specs[0], tuple(specs[1:]), home.jar_dir, memory,
                                choose_block_size(options, len(self.workers)),
                                dict(options.properties), cds=home.cds_archive,
                                jars=home.jars, in_guests=self.guests)
        self._node_specs = dict(zip((n.index for n in lab.nodes), specs, strict=True))

    def _node_spec(self, node: Node) -> NodeSpec:
        base = self.options.base_port
        shift = self.lab.listen_port(node, base) - base
        return NodeSpec(self.hostname(node), node.ip, shift, self.root / node.name)

    def guest_machines(self) -> list[Machine]:
        """The VM guests the nodes run in (nodes sharing a boot id share one), with the
        memory each guest's kernel reports."""
        found: dict[str, tuple[int, bool, int]] = {}
        for node in self.lab.nodes:
            got = node.run(["cat", "/proc/sys/kernel/random/boot_id", "/proc/meminfo"],
                           timeout=GUEST_LOOK_S)
            boot_id, _, meminfo = got.stdout.partition("\n")
            total = next((int(ln.split()[1]) * 1024 for ln in meminfo.splitlines()
                          if ln.startswith("MemTotal:")), None)
            if total is None:
                raise WorkloadError(f"cannot read MemTotal in node {node.name}'s guest")
            _, master, workers = found.get(boot_id, (total, False, 0))
            found[boot_id] = (total, master or node.index == 0,
                              workers + (node.index != 0))
        return [Machine(total // MiB, master, workers) for total, master, workers in found.values()]

    def hostname(self, node: Node) -> str:
        return f"{'master' if node.index == 0 else 'worker'}{node.index}"

    def node_spec(self, node: Node) -> NodeSpec:
        return self._node_specs[node.index]

    # ---- commands -------------------------------------------------------------------
    def wrap(self, node: Node, argv: Sequence[str], cwd: Path | None = None) -> list[str]:
        """``argv`` run with the node's hostname and the cluster's hosts file."""
        spec = self.node_spec(node)
        return ["unshare", "--uts", "--mount", "--propagation", "private", "--",
                sys.executable, "-P", "-m", "vnetbench.workloads.hadoop.enter", spec.hostname,
                str(self.hosts_path), str(cwd or spec.root), "--", *argv]

    def env(self, node: Node) -> dict[str, str]:
        return {"JAVA_HOME": self.home.java_home,
                "HADOOP_CONF_DIR": str(self.node_spec(node).conf_dir),
                "MALLOC_ARENA_MAX": "2"}

    def java(self, node: Node, role: str, main: str, args: Sequence[str] = (),
             heap_mib: int | None = None) -> list[str]:
        webapps = self.home.webapps_parent if role in ("namenode", "datanode") else None
        return java_argv(self.home.java, self.spec, self.node_spec(node), role, main,
                         tuple(args), heap_mib=heap_mib, webapps=webapps)

    def client(self, main: str, args: Sequence[str], timeout: float,
               cwd: Path | None = None, heap_mib: int | None = None,
               check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a Hadoop client class on the master; CommandError -> WorkloadError."""
        argv = self.wrap(self.master, self.java(self.master, "client", main, args, heap_mib),
                         cwd)
        try:
            return self.master.run(argv, timeout=timeout, check=check, env=self.env(self.master))
        except CommandError as exc:
            short = main.rsplit(".", 1)[-1]
            raise WorkloadError(f"hadoop {short} failed (exit {exc.returncode}): "
                                f"{_error_lines(exc.stderr)}") from exc

    # ---- start ----------------------------------------------------------------------
    def claim_root(self) -> None:
        """Record the run's directory under ``data_root`` in the run's state file before
        making it, so ``vnetbench clean`` removes it after a killed run: ``<data_root>/<run
        id>``, or only ``.../hadoop`` inside it when that directory existed already (what
        vnetbench did not make is never claimed)."""
        run_dir = self.root.parent
        trusted_dir(run_dir.parent, "hadoop's data_root", 0o755)
        mine = run_dir if not run_dir.exists() else self.root if not self.root.exists() else None
        self.made = [self.root, run_dir] if mine == run_dir else [self.root] if mine else []
        if mine is not None:
            self.lab.claim_data_dir(mine)

    def write_config(self) -> None:
        """Each node's directories and site files, and the cluster's hosts file, on this host
        (for the nodes here; kept with the run either way) and in each guest for nodes in
        VM guests."""
        self.claim_root()
        self.root.mkdir(parents=True, exist_ok=True)
        hosts = self.spec.hosts_file()
        self.hosts_path.write_text(hosts)
        for node in self.lab.nodes:
            spec = self.node_spec(node)
            for sub in SUBDIRS:
                (spec.root / sub).mkdir(parents=True, exist_ok=True)
            files = site_files(self.spec, spec)
            for name, text in files.items():
                (spec.conf_dir / name).write_text(text)
            if self.guests:
                node.run(["mkdir", "-p", *(str(spec.root / sub) for sub in SUBDIRS)],
                         timeout=GUEST_LOOK_S)
                node.write_file(self.hosts_path, hosts)
                for name, text in files.items():
                    node.write_file(spec.conf_dir / name, text)
        (self.root / "memory.json").write_text(json.dumps(self.spec.memory.as_dict(), indent=1))

    def start(self) -> None:
        """Give the NameNode a formatted directory, start every daemon at once (DataNodes
        and NodeManagers retry until the master's services are up) and wait until the
        cluster is ready."""
        t0 = time.monotonic()
        self.write_config()
        self.prepare_name_dir()
        master = self.master
        self._spawn(master, "namenode")
        self._spawn(master, "resourcemanager")
        if self.options.jobhistory:
            self._spawn(master, "jobhistory")
        for node in self.workers:
            self._spawn(node, "datanode")
            self._spawn(node, "nodemanager")
        self.wait_ready(t0 + self.options.start_timeout)
        self.startup_s = time.monotonic() - t0

    def prepare_name_dir(self) -> None:
        """Copy the cache's formatted NameNode directory, else format one and keep a copy.

        A formatted, empty namespace does not depend on the cluster (DataNodes start empty
        and join whichever namespace their NameNode has), and a format is one more JVM that
        the NameNode waited for: 2-7 s of every start-up on 2 cores.
        """
        name_dir = self.node_spec(self.master).root / "dfs" / "name"
        template = self.home.formatted_name_dir
        master = self.master
        if (template / "current" / "VERSION").is_file():
            if not self.guests:
                shutil.copytree(template, name_dir)
                return
            # the guest sees the cache through 9p; a copy it cannot make is formatted there
            if master.run(["cp", "-a", str(template), str(name_dir)], timeout=GUEST_LOOK_S,
                          check=False).returncode == 0:
                return
        fmt = self.wrap(master, self.java(master, "namenode", MAINS["namenode"],
                                          ("-format", "-force", "-nonInteractive")))
        try:
            master.run(fmt, timeout=GUEST_JVM_S if self.guests else 180.0,
                       env=self.env(master))
        except CommandError as exc:
            raise WorkloadError(f"formatting HDFS failed: {_error_lines(exc.stderr)}") from exc
        if self.guests:
            return  # the copy to keep is in the guest
        staging = template.with_name(f"{template.name}.{os.getpid()}")
        with suppress(OSError):  # a cache we cannot write only costs the next start a format
            shutil.rmtree(staging, ignore_errors=True)
            shutil.copytree(name_dir, staging)
            staging.rename(template)  # atomic; a concurrent run's copy may win
        shutil.rmtree(staging, ignore_errors=True)

    def _spawn(self, node: Node, role: str) -> None:
        log = self.node_spec(node).log_dir / f"{role}.out"
        argv = self.wrap(node, self.java(node, role, MAINS[role]))
        proc = node.spawn(argv, log=log, env=self.env(node))
        self.daemons.append(Daemon(role, node, proc, log))

    def check_alive(self) -> None:
        for d in self.daemons:
            if d.proc.poll() is not None:
                raise WorkloadError(f"hadoop {d.role} on {d.node.name} exited with "
                                    f"{d.proc.returncode}: {log_tail(d.log)}")

    def fetch(self, url: str, timeout: float = 5.0) -> str:
        """The body at ``url`` of the cluster, fetched from the master's namespace (or from a
        Python in the master's guest); OSError when it cannot be had."""
        if not self.guests:
            return self.master.call(lambda: http_get(url, timeout),
                                    "the hadoop workload").decode(errors="replace")
        got = self.master.run([sys.executable, "-I", "-S", "-c", GUEST_FETCH, url, str(timeout)],
                              timeout=timeout + GUEST_LOOK_S, check=False)
        if got.returncode != 0:
            raise OSError(f"GET {url} in node {self.master.name}: "
                          f"{(got.stderr.strip().splitlines() or ['exit ' + str(got.returncode)])[-1]}")
        return got.stdout

    def _get_json(self, port_service: str, path: str) -> Any:
        url = (f"http://{self.master.ip}:{self.spec.master_port(port_service)}{path}")
        return json.loads(self.fetch(url))

    def status(self) -> tuple[int, bool, int]:
        """(live DataNodes, NameNode out of safe mode, RUNNING NodeManagers); -1 unknown."""
        live, operational, running = -1, False, -1
        with suppress(OSError, ValueError, KeyError, IndexError, TypeError):
            beans = self._get_json("nn_http", "/jmx?qry=Hadoop:service=NameNode,"
                                   "name=FSNamesystemState")["beans"]
            live = int(beans[0]["NumLiveDataNodes"])
            operational = beans[0].get("FSState") == "Operational"
        with suppress(OSError, ValueError, KeyError, TypeError):
            nodes = self._get_json("rm_web", "/ws/v1/cluster/nodes")["nodes"] or {}
            running = sum(1 for n in nodes.get("node", []) if n.get("state") == "RUNNING")
        return live, operational, running

    def read_text(self, path: str) -> str:
        """An HDFS file's text, over WebHDFS from the master's namespace (no client JVM).

        The NameNode answers with the DataNode to read from, named by its hostname, which
        only the cluster's own hosts file resolves: it is replaced by the address.
        """
        addresses = {n.hostname: n.ip for n in self.spec.nodes}

        url = (f"http://{self.master.ip}:{self.spec.master_port('nn_http')}/webhdfs/v1"
               f"{urllib.parse.quote(path)}?op=OPEN&noredirect=true")
        try:
            location = urllib.parse.urlsplit(json.loads(self.fetch(url, 30.0))["Location"])
            host = location.hostname or ""
            netloc = f"{addresses.get(host, host)}:{location.port}"
            return self.fetch(location._replace(netloc=netloc).geturl(), 30.0)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise WorkloadError(f"reading {path} from HDFS (WebHDFS) failed: {exc}") from exc

    def wait_ready(self, deadline: float) -> None:
        want = len(self.workers)
        while True:
            self.check_alive()
            live, operational, running = self.status()
            if live >= want and operational and running >= want:
                return
            if time.monotonic() > deadline:
                raise WorkloadError(
                    f"hadoop cluster not ready after {self.options.start_timeout:.0f}s: "
                    f"{max(live, 0)}/{want} DataNodes live (safe mode "
                    f"{'off' if operational else 'on'}), {max(running, 0)}/{want} "
                    f"NodeManagers running; namenode log: "
                    f"{log_tail(self.daemons[0].log, 3)}"
                    + ("; under TCG (no KVM) Hadoop starts far slower in VM guests: "
                       "raise the workload's start_timeout" if self.guests else ""))
            time.sleep(GUEST_POLL_S if self.guests else POLL_S)

    # ---- observation ----------------------------------------------------------------
    def guest_processes(self, node: Node) -> list[tuple[int, int, str]]:
        """(PID, VmHWM in kB or 0, command line) of the processes of ``node``'s directory
        in its guest."""
        got = node.run(["sh", "-c", GUEST_PROCS, "sh", f"{self.node_spec(node).root}/"],
                       timeout=GUEST_LOOK_S, check=False)
        found = []
        for line in got.stdout.splitlines():
            pid, _, rest = line.partition(" ")
            hwm, _, cmd = rest.partition(" ")
            if pid.isdigit():
                found.append((int(pid), int(hwm) if hwm.isdigit() else 0, cmd))
        return found

    def peak_rss(self) -> list[tuple[str, str, int]]:
        """(role, node, VmHWM bytes) of each running daemon."""
        out = []
        if self.guests:
            for node in self.lab.nodes:
                for _, hwm, cmd in self.guest_processes(node):
                    role = next((r for r, main in MAINS.items() if f" {main} " in f" {cmd} "), None)
                    if role is not None and hwm:
                        out.append((role, node.name, hwm * 1024))
            return out
        for d in self.daemons:
            with suppress(OSError, ValueError):
                for line in Path(f"/proc/{d.proc.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        out.append((d.role, d.node.name, int(line.split()[1]) * 1024))
        return out

    def keep_logs(self, raw_dir: Path) -> None:
        """Copy daemon logs and the configuration into ``raw_dir/hadoop``."""
        dest = raw_dir / "hadoop"
        for node in self.lab.nodes:
            spec = self.node_spec(node)
            for sub in ("logs", "conf"):
                src = spec.root / sub
                if src.is_dir():
                    shutil.copytree(src, dest / node.name / sub, dirs_exist_ok=True)
        for name in ("memory.json", "hosts"):
            with suppress(FileNotFoundError):
                shutil.copy(self.root / name, dest / name)

    # ---- stop -----------------------------------------------------------------------
    def _stop_in_guests(self) -> None:
        """Kill what is left of the cluster in each guest (task JVMs a NodeManager started in
        their own sessions) and remove the nodes' directories there."""
        for node in self.lab.nodes:
            with suppress(Exception):
                pids = [str(pid) for pid, _, _ in self.guest_processes(node)]
                if pids:
                    node.run(["kill", "-9", *pids], timeout=GUEST_LOOK_S, check=False)
                node.remove_dir(self.node_spec(node).root)

    def leftover_pids(self) -> list[int]:
        """Processes inside the lab's nodes whose command line names this cluster."""
        marker = str(self.root).encode()
        found = []
        for pid in pids_in(self.lab.nodes):
            with suppress(OSError):
                if marker in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(pid)
        return found

    def stop(self) -> None:
        """Kill every JVM of the cluster and remove its directories (never raises).

        SIGKILL at once: the cluster's state is thrown away, and a graceful stop cost
        10 s per trial (the NodeManager ignores SIGTERM for a while).
        """
        for d in self.daemons:
            if d.proc.poll() is None:
                _signal_group(d.proc.pid, signal.SIGKILL)
        for d in self.daemons:
            with suppress(Exception):
                self.lab.stop(d.proc, grace=2.0)
        self.daemons = []
        if self.guests:
            self._stop_in_guests()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = self.leftover_pids()
            for pid in pids:
                with suppress(ProcessLookupError):
                    os.kill(pid, sig)
            end = time.monotonic() + 3.0
            while pids and time.monotonic() < end:
                pids = [p for p in pids if process_alive(p)]
                time.sleep(0.05)
        for made in self.made[:1]:  # only what claim_root saw this cluster make
            shutil.rmtree(made, ignore_errors=True)
        for made in self.made[1:]:
            with suppress(OSError):
                made.rmdir()


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _error_lines(text: str, limit: int = 4) -> str:
    """The most telling lines of a Java tool's stderr (exceptions, errors), else its tail."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    telling = [ln for ln in lines if "Exception" in ln or " ERROR " in ln or "Error:" in ln]
    return " | ".join((telling or lines)[-limit:]) or "(no output)"
