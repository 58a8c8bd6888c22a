"""Pure configuration of a Hadoop cluster: ports, memory plan, block size, site XML files.

Nothing here touches the machine: ``ClusterSpec`` describes master and workers (hostnames,
addresses, ports, directories) and ``site_files`` renders the ``core-site.xml``,
``hdfs-site.xml``, ``yarn-site.xml``, ``mapred-site.xml`` and ``log4j.properties`` of one
node. Ports are ``base_port + 100 * service + shift`` where ``shift`` is what
``lab.listen_port`` adds for nodes sharing a namespace (``host`` layer), so services of
up to 100 nodes per host never collide.

Memory: daemon heaps are fixed small (``HEAPS_MIB``); each worker's NodeManager offers
``containers_per_worker`` containers; ``plan_memory`` lowers that until the estimated peak
(heap + ``JVM_OVERHEAD_MIB`` per daemon, full container size per container) fits the host.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from vnetbench.workloads.hadoop.options import HadoopOptions, MiB

SERVICES: tuple[str, ...] = (
    "nn_rpc", "nn_http", "dn_xfer", "dn_http", "dn_ipc", "rm_client", "rm_scheduler",
    "rm_tracker", "rm_admin", "rm_web", "nm_address", "nm_localizer", "nm_web", "shuffle",
    "jhs", "jhs_web", "jhs_admin",
)
PORT_STRIDE = 100

HEAPS_MIB: dict[str, int] = {
    "namenode": 256, "resourcemanager": 256, "jobhistory": 192, "datanode": 128,
    "nodemanager": 128,
}
"""-Xmx of each daemon (MiB). Measured peak RSS of such daemons: 200-300 MiB."""
JVM_OVERHEAD_MIB = 128
"""Non-heap memory counted per JVM (metaspace, code cache, threads) in the estimate."""
CLIENT_HEAP_MIB = 256
HOST_SHARE = 0.9
"""Fraction of the host's memory the cluster's estimated peak may take."""
GUEST_SHARE = 0.75
"""Fraction of a VM guest's memory its node's peak may take: the rest is its kernel, its
agent and its tmpfs root, which holds the node's HDFS blocks and task files."""
TASK_HEAP_SHARE = 0.75
GUEST_VOLUME_MARGIN = "dfs.datanode.round-robin-volume-choosing-policy.additional-available-space"
"""Free space a DataNode's volume must keep beyond a block (hdfs-default.xml: 1 GiB)."""

DAEMON_JVM_OPTS: tuple[str, ...] = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                    "-Djava.net.preferIPv4Stack=true")
TASK_JVM_OPTS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.net.preferIPv4Stack=true"
TASK_ADMIN_OPTS = "-Djava.net.preferIPv4Stack=true -Dhadoop.metrics.log.level=WARN"
"""mapred-default.xml's admin options of task JVMs (ours replace the property, so kept)."""
TASK_ADMIN_KEYS: tuple[str, ...] = ("yarn.app.mapreduce.am.admin-command-opts",
                                    "mapreduce.admin.map.child.java.opts",
                                    "mapreduce.admin.reduce.child.java.opts")
"""Where the admin options of the MR ApplicationMaster, map and reduce JVMs go."""
HEARTBEAT_MS = 100
"""NodeManager -> ResourceManager and MR ApplicationMaster -> ResourceManager heartbeats, and
the job client's progress/completion polls (Hadoop: 1000, 1000, 1000 and 5000 ms). The FIFO
scheduler hands out containers on NodeManager heartbeats and the AM picks them up (and
waits for its unregistration) on its own: at the defaults every job waited ~1-2 s per
allocation round. Measured here (bridge, 2 workers, one trial of hadoop-quick): 125-127 s
before, 94-100 s with 100 ms."""
JAVA17_OPENS: tuple[str, ...] = ("--add-opens=java.base/java.lang=ALL-UNNAMED",)
"""On Java 17 the ResourceManager, NodeManager and JobHistoryServer need this to start, and
the NameNode and DataNode to serve WebHDFS (Jersey defines classes by reflection)."""
OPENS_ROLES = frozenset({"resourcemanager", "nodemanager", "jobhistory", "namenode",
                         "datanode"})


def port_of(base: int, service: str, shift: int = 0) -> int:
    return base + PORT_STRIDE * SERVICES.index(service) + shift


@dataclass(frozen=True)
class NodeSpec:
    """One machine of the cluster as Hadoop sees it."""

    hostname: str
    ip: str
    shift: int
    root: Path
    """This node's directory (conf, dfs, nm-local, logs, tmp under it)."""

    def port(self, base: int, service: str) -> int:
        return port_of(base, service, self.shift)

    @property
    def conf_dir(self) -> Path:
        return self.root / "conf"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"


@dataclass(frozen=True)
class Machine:
    """A VM guest some of the cluster's nodes run in: its memory and what it holds (one
    node of the ``vm`` backend, or several namespace nodes of a ``vmhost`` guest)."""

    memory_mib: int
    master: bool
    workers: int


@dataclass(frozen=True)
class MemoryPlan:
    """Heaps and container sizes chosen for a cluster (all MiB)."""

    workers: int
    heaps: dict[str, int]
    map_mib: int
    reduce_mib: int
    am_mib: int
    containers_per_worker: int
    nm_capacity_mib: int
    jobhistory: bool
    host_mib: int
    """Memory of the host the estimate is checked against (when the nodes are on it)."""
    guests: tuple[Machine, ...] = ()
    """The VM guests the nodes run in, when they do: each one's peak must fit its memory."""

    def task_heap(self, container_mib: int) -> int:
        return int(container_mib * TASK_HEAP_SHARE)

    def master_peak_mib(self) -> int:
        """The master's daemons and one job client at full heap plus overhead."""
        master = self.heaps["namenode"] + self.heaps["resourcemanager"] + 2 * JVM_OVERHEAD_MIB
        if self.jobhistory:
            master += self.heaps["jobhistory"] + JVM_OVERHEAD_MIB
        return master + CLIENT_HEAP_MIB + JVM_OVERHEAD_MIB

    def worker_peak_mib(self) -> int:
        """One worker's daemons plus overhead, every container slot in use."""
        return (self.heaps["datanode"] + self.heaps["nodemanager"] + 2 * JVM_OVERHEAD_MIB
                + self.nm_capacity_mib)

    def estimated_peak_mib(self) -> int:
        """Every daemon at its full heap plus overhead, every container slot in use."""
        return self.master_peak_mib() + self.workers * self.worker_peak_mib()

    def guest_peak_mib(self, guest: Machine) -> int:
        """The peak of the nodes in ``guest``."""
        return ((self.master_peak_mib() if guest.master else 0)
                + guest.workers * self.worker_peak_mib())

    def fits(self) -> bool:
        """Whether the estimate fits the share of the host, or of each guest, it may take."""
        if self.guests:
            return all(self.guest_peak_mib(g) <= g.memory_mib * GUEST_SHARE for g in self.guests)
        return self.estimated_peak_mib() <= self.host_mib * HOST_SHARE

    def as_dict(self) -> dict[str, object]:
        return {"workers": self.workers, "heaps_mib": dict(self.heaps), "map_mib": self.map_mib,
                "reduce_mib": self.reduce_mib, "am_mib": self.am_mib,
                "containers_per_worker": self.containers_per_worker,
                "nm_capacity_mib": self.nm_capacity_mib, "jobhistory": self.jobhistory,
                "host_mib": self.host_mib,
                "guests": [{"memory_mib": g.memory_mib, "master": g.master, "workers": g.workers,
                            "peak_mib": self.guest_peak_mib(g)} for g in self.guests],
                "estimated_peak_mib": self.estimated_peak_mib()}


def plan_memory(options: HadoopOptions, workers: int, host_bytes: int,
                guests: Sequence[Machine] = ()) -> MemoryPlan:
    """Container slots per worker lowered until the estimate fits ``HOST_SHARE`` of the host,
    or, when the nodes run in VM guests, until each guest's peak fits ``GUEST_SHARE`` of its
    memory.

    ValueError when even one slot per worker does not fit.
    """
    map_mib, reduce_mib, am_mib = (max(1, v // MiB) for v in
                                   (options.map_memory, options.reduce_memory, options.am_memory))
    slot = max(map_mib, reduce_mib, am_mib)
    host_mib = host_bytes // MiB
    for slots in range(options.containers_per_worker, 0, -1):
        plan = MemoryPlan(workers, dict(HEAPS_MIB), map_mib, reduce_mib, am_mib, slots,
                          slots * slot, options.jobhistory, host_mib, tuple(guests))
        if plan.fits():
            return plan
    if guests:
        short = [g for g in guests if plan.guest_peak_mib(g) > g.memory_mib * GUEST_SHARE]
        g = short[0]
        what = "the master" if g.master and not g.workers else (
            f"{g.workers} worker(s)" + (" and the master" if g.master else ""))
        raise ValueError(f"a VM guest of {g.memory_mib} MiB holds {what} of the hadoop "
                         f"cluster, about {plan.guest_peak_mib(g)} MiB even with one {slot} "
                         f"MiB container per worker (a guest's nodes may take "
                         f"{GUEST_SHARE:.0%} of it): give the nodes more memory (the "
                         "scenario's resources.memory, e.g. 2G) or smaller "
                         "map_memory/reduce_memory/am_memory")
    raise ValueError(f"a hadoop cluster of {workers} workers needs about "
                     f"{plan.estimated_peak_mib()} MiB even with one {slot} MiB container per "
                     f"worker; the host has {host_mib} MiB: use fewer workers or smaller "
                     "map_memory/reduce_memory/am_memory")


def choose_block_size(options: HadoopOptions, workers: int) -> int:
    """``block_size``, or (auto) the power of two <= data/(2 * workers) in [1 MiB, 128 MiB]."""
    if isinstance(options.block_size, int):
        return options.block_size
    target = options.data // (2 * max(1, workers))
    size = MiB
    while size * 2 <= min(target, 128 * MiB):
        size *= 2
    return size


@dataclass(frozen=True)
class ClusterSpec:
    """Everything the site files depend on."""

    options: HadoopOptions
    master: NodeSpec
    workers: tuple[NodeSpec, ...]
    jar_dir: Path
    memory: MemoryPlan
    block_size: int
    extra: dict[str, str] = field(default_factory=dict)
    cds: Path | None = None
    """Class-data-sharing archive dumped for ``jars`` (daemons, clients, AM and tasks)."""
    jars: tuple[str, ...] = ()
    """The jar classpath, in the order the archive was dumped for."""
    in_guests: bool = False
    """The nodes are VM guests, whose disk is small (their memory, or the scenario's disk)."""

    @property
    def nodes(self) -> tuple[NodeSpec, ...]:
        return (self.master, *self.workers)

    def master_port(self, service: str) -> int:
        return self.master.port(self.options.base_port, service)

    @property
    def default_fs(self) -> str:
        return f"hdfs://{self.master.hostname}:{self.master_port('nn_rpc')}"

    def hosts_file(self) -> str:
        lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
        lines += [f"{n.ip}\t{n.hostname}" for n in self.nodes]
        return "\n".join(lines) + "\n"


def task_admin_opts(jars: tuple[str, ...], cds: Path | None, extra: str = "") -> str:
    """Admin java options of the MR ApplicationMaster and task JVMs (plus ``extra``).

    With an archive they map it, and put ``jars`` in front of the classpath the
    NodeManager gives the container: that one starts with the container's own working
    directory, and Java 17 maps an archive only when its dump-time classpath is a prefix of
    the runtime one. ``-cp`` wins over the ``CLASSPATH`` variable, which the container's
    launch script expands after it (so the job jar and configuration stay reachable).
    Without an archive the classpath is left to the NodeManager.
    """
    opts = TASK_ADMIN_OPTS
    if cds is not None and jars:
        opts += f" -XX:SharedArchiveFile={cds} -Xshare:auto {jars_first_classpath(jars)}"
    return f"{opts} {extra}".strip()


def jars_first_classpath(jars: tuple[str, ...]) -> str:
    """A container JVM's ``-cp``: ``jars`` (the archive's dump-time classpath), then the
    ``CLASSPATH`` the NodeManager exported (expanded by the container's launch script)."""
    return f"-cp {':'.join(jars)}:$CLASSPATH"


def render_xml(props: dict[str, str]) -> str:
    body = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                   for k, v in props.items())
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<!-- generated by vnetbench -->\n'
            f"<configuration>\n{body}</configuration>\n")


LOG4J = """\
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.org.apache.hadoop.metrics2=WARN
"""


def site_properties(spec: ClusterSpec, node: NodeSpec) -> dict[str, dict[str, str]]:
    """Property maps of the four site files for ``node`` (the master's also serve clients)."""
    hdfs = _hdfs_site(spec, node)
    if spec.in_guests:
        # Hadoop writes a block only to a volume with 1 GiB free beyond it, a margin for a
        # host's disk: a guest's 1-2 GB refused every block ("Out of space ... less than the
        # block size")
        hdfs[GUEST_VOLUME_MARGIN] = "0"
    merged: dict[str, dict[str, str]] = {"core-site.xml": _core_site(spec, node),
                                         "hdfs-site.xml": hdfs,
                                         "yarn-site.xml": _yarn_site(spec, node),
                                         "mapred-site.xml": _mapred_site(spec, node)}
    # A user property goes into every site file: Hadoop loads each ``X-default.xml`` right
    # before its ``X-site.xml`` but the groups in whatever order classes ask for them
    # (JobConf loads mapred-default.xml after core-site.xml), so only a value present in
    # every site file wins over whichever default file defines the key.
    for key, value in spec.extra.items():
        for props in merged.values():
            props[key] = value
    return merged


Address = Callable[[NodeSpec, str], str]


def _addresses(base: int) -> tuple[Address, Address]:
    """(hostname:port, ip:port) of a node's service, its ports counted from ``base``."""
    def hp(n: NodeSpec, service: str) -> str:
        return f"{n.hostname}:{n.port(base, service)}"

    def ip(n: NodeSpec, service: str) -> str:
        return f"{n.ip}:{n.port(base, service)}"

    return hp, ip


def _core_site(spec: ClusterSpec, node: NodeSpec) -> dict[str, str]:
    o = spec.options
    return {
        "fs.defaultFS": spec.default_fs,
        "io.file.buffer.size": str(o.io_buffer),
        "hadoop.tmp.dir": str(node.root / "tmp"),
        "ipc.client.connect.max.retries": "20",
        "ipc.client.connect.retry.interval": "500",
    }


def _hdfs_site(spec: ClusterSpec, node: NodeSpec) -> dict[str, str]:
    o, m = spec.options, spec.master
    hp, ip = _addresses(o.base_port)
    return {
        "dfs.replication": str(o.replication),
        "dfs.blocksize": str(spec.block_size),
        "dfs.namenode.name.dir": str(node.root / "dfs" / "name"),
        "dfs.datanode.data.dir": str(node.root / "dfs" / "data"),
        "dfs.namenode.rpc-address": hp(m, "nn_rpc"),
        "dfs.namenode.http-address": ip(m, "nn_http"),
        "dfs.namenode.secondary.http-address": f"{m.ip}:0",
        "dfs.datanode.address": ip(node, "dn_xfer"),
        "dfs.datanode.http.address": ip(node, "dn_http"),
        "dfs.datanode.ipc.address": ip(node, "dn_ipc"),
        "dfs.datanode.hostname": node.hostname,
        "dfs.namenode.datanode.registration.ip-hostname-check": "false",
        "dfs.namenode.safemode.extension": "0",
        "dfs.namenode.redundancy.considerLoad": "false",
        "dfs.permissions.enabled": "false",
        "dfs.heartbeat.interval": "1",
        "dfs.datanode.max.transfer.threads": "4096",
        "dfs.namenode.handler.count": "20",
    }


def _yarn_site(spec: ClusterSpec, node: NodeSpec) -> dict[str, str]:
    o, m, mem = spec.options, spec.master, spec.memory
    base = o.base_port
    hp, ip = _addresses(base)
    slot_cap = mem.nm_capacity_mib
    return {
        "yarn.resourcemanager.hostname": m.hostname,
        "yarn.resourcemanager.address": hp(m, "rm_client"),
        "yarn.resourcemanager.scheduler.address": hp(m, "rm_scheduler"),
        "yarn.resourcemanager.resource-tracker.address": hp(m, "rm_tracker"),
        "yarn.resourcemanager.admin.address": hp(m, "rm_admin"),
        "yarn.resourcemanager.webapp.address": ip(m, "rm_web"),
        "yarn.resourcemanager.scheduler.class":
            "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler",
        "yarn.nodemanager.hostname": node.hostname,
        "yarn.nodemanager.address": hp(node, "nm_address"),
        "yarn.nodemanager.localizer.address": hp(node, "nm_localizer"),
        "yarn.nodemanager.webapp.address": ip(node, "nm_web"),
        "yarn.nodemanager.aux-services": "mapreduce_shuffle",
        "yarn.nodemanager.aux-services.mapreduce_shuffle.class":
            "org.apache.hadoop.mapred.ShuffleHandler",
        "yarn.nodemanager.resource.memory-mb": str(slot_cap),
        "yarn.nodemanager.resource.cpu-vcores": str(max(1, mem.containers_per_worker)),
        "yarn.scheduler.minimum-allocation-mb": "128",
        "yarn.scheduler.maximum-allocation-mb": str(slot_cap),
        "yarn.nodemanager.vmem-check-enabled": "false",
        "yarn.nodemanager.pmem-check-enabled": "false",
        "yarn.nodemanager.local-dirs": str(node.root / "nm-local"),
        "yarn.nodemanager.log-dirs": str(node.root / "nm-logs"),
        "yarn.nodemanager.delete.debug-delay-sec": "0",
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "99",
        "yarn.nodemanager.recovery.enabled": "false",
        "yarn.log-aggregation-enable": "false",
        "yarn.timeline-service.enabled": "false",
        "yarn.application.classpath": f"$HADOOP_CONF_DIR,{spec.jar_dir}/*",
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms": str(HEARTBEAT_MS),
    }


def _mapred_site(spec: ClusterSpec, node: NodeSpec) -> dict[str, str]:
    o, m, mem = spec.options, spec.master, spec.memory
    base = o.base_port
    hp, ip = _addresses(base)
    am_heap, map_heap, red_heap = (mem.task_heap(v) for v in (mem.am_mib, mem.map_mib,
                                                              mem.reduce_mib))
    admin_opts = task_admin_opts(spec.jars, spec.cds)
    return {
        "mapreduce.framework.name": "yarn",
        # here, not in yarn-site: mapred-default.xml (13562) is loaded after yarn-site.xml
        "mapreduce.shuffle.port": str(node.port(base, "shuffle")),
        "mapreduce.application.classpath": f"{spec.jar_dir}/*",
        "yarn.app.mapreduce.am.resource.mb": str(mem.am_mib),
        "yarn.app.mapreduce.am.command-opts": f"-Xmx{am_heap}m {TASK_JVM_OPTS}",
        **dict.fromkeys(TASK_ADMIN_KEYS, admin_opts),
        "yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms": str(HEARTBEAT_MS),
        "mapreduce.map.memory.mb": str(mem.map_mib),
        "mapreduce.map.java.opts": f"-Xmx{map_heap}m {TASK_JVM_OPTS}",
        "mapreduce.reduce.memory.mb": str(mem.reduce_mib),
        "mapreduce.reduce.java.opts": f"-Xmx{red_heap}m {TASK_JVM_OPTS}",
        "mapreduce.task.io.sort.mb": str(max(16, min(100, map_heap // 3))),
        "mapreduce.map.speculative": "false",
        "mapreduce.reduce.speculative": "false",
        "mapreduce.job.reduce.slowstart.completedmaps": "0.8",
        "mapreduce.client.completion.pollinterval": str(HEARTBEAT_MS),
        "mapreduce.client.progressmonitor.pollinterval": str(HEARTBEAT_MS),
        "mapreduce.job.ubertask.enable": "false",
        "mapreduce.jobhistory.address": hp(m, "jhs"),
        "mapreduce.jobhistory.webapp.address": ip(m, "jhs_web"),
        "mapreduce.jobhistory.admin.address": hp(m, "jhs_admin"),
    }


def site_files(spec: ClusterSpec, node: NodeSpec) -> dict[str, str]:
    """File name -> text of ``node``'s configuration directory."""
    files = {name: render_xml(props) for name, props in site_properties(spec, node).items()}
    files["log4j.properties"] = LOG4J
    return files


def java_argv(java: str, spec: ClusterSpec, node: NodeSpec, role: str, main: str,
              args: tuple[str, ...] = (), heap_mib: int | None = None,
              webapps: Path | None = None) -> list[str]:
    """``java`` command line of a daemon or client ``role`` on ``node``.

    The classpath is the jars (``spec.jars`` in sorted order, else ``jar_dir/*``), then the
    node's configuration directory, then ``webapps``: the jars come first so that a
    class-data-sharing archive dumped for that jar list applies (the JVM accepts entries
    appended after the dump-time classpath); log4j's file is named explicitly because a
    tests jar carries its own ``log4j.properties``.
    """
    heap = heap_mib if heap_mib is not None else HEAPS_MIB.get(role, CLIENT_HEAP_MIB)
    classpath = list(spec.jars) or [f"{spec.jar_dir}/*"]
    classpath.append(str(node.conf_dir))
    if webapps is not None:
        classpath.append(str(webapps))
    argv = [java, f"-Xmx{heap}m", *DAEMON_JVM_OPTS]
    if role in OPENS_ROLES:
        argv += JAVA17_OPENS
    if spec.cds is not None:
        argv += [f"-XX:SharedArchiveFile={spec.cds}", "-Xshare:auto"]
    argv += [f"-Dlog4j.configuration=file:{node.conf_dir}/log4j.properties",
             f"-Dhadoop.log.dir={node.log_dir}", f"-Dhadoop.log.file={role}.log",
             f"-Dproc_{role}", f"-Dvnetbench.hadoop.root={node.root}",
             f"-Djava.io.tmpdir={node.root / 'tmp'}",  # Jetty's scratch dirs: not the host's /tmp
             "-cp", ":".join(classpath), main, *args]
    return argv
