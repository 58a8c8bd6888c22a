"""Database OLTP workload (study 003): MariaDB in one node, sysbench point selects from others.

``prepare`` initialises a fresh data directory under ``lab.work_dir`` (``mariadb-install-db``,
small InnoDB buffers, no binary log), starts ``mariadbd`` inside ``lab.nodes[0]`` bound to
all of the node's addresses on ``lab.listen_port(server, port)``, with an init file creating
database ``sbtest`` and a network user ``sbtest@'%'`` (normal password authentication, no DNS
lookups of clients), then loads the tables with ``sysbench oltp_point_select prepare`` from
the first client node. ``run`` starts ``sysbench oltp_point_select run`` on each client node
(``lab.nodes[1 .. clients]``) at once, each connecting to ``lab.endpoint(client, server,
port)`` -- for ``nat`` that is the host address and published port, as a ``docker run -p``
client would connect. ``cleanup`` stops the server and removes its files.

Metrics per client (label ``client``; with several clients also sums labelled ``client=all``):
``tps``, ``qps``, ``errors`` (sysbench's ignored errors), ``reconnects``,
``latency_mean_ms`` (sum of latencies / events: more digits than sysbench's rounded avg),
``latency_p95_ms`` (sysbench's own ``--percentile=95``), and ``latency_p50_ms`` /
``latency_p99_ms`` computed from sysbench's ``--histogram`` buckets (the bucket value at which
the cumulative count reaches 50 % / 99 %; buckets are about 1.5 % wide). sysbench 1.0 has no
warm-up option: ``warmup`` is a separate discarded run before the measured one.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import ConfigDict, Field

from vnetbench.errors import CommandError, LabError, MissingToolError, WorkloadError
from vnetbench.results.model import Sample
from vnetbench.units import Duration, Size
from vnetbench.workloads.base import Entry, WorkloadBase, WorkloadOptions, registry_entry

if TYPE_CHECKING:

    from vnetbench.host.node import Node
    from vnetbench.workloads.labview import LabView

MARIADB_PORT = 3306
DB_USER = "sbtest"
DB_PASSWORD = "vnb-sbtest"
DB_NAME = "sbtest"
START_TIMEOUT_S = 60.0
STOP_GRACE_S = 30.0
RUN_SLACK_S = 60.0
TOOLS = {"mariadbd": "mariadb-server", "mariadb-install-db": "mariadb-server",
         "sysbench": "sysbench"}


class OltpOptions(WorkloadOptions):
    """sysbench ``oltp_point_select`` against MariaDB across the lab."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    many_threaded: ClassVar[bool] = True

    tables: int = Field(default=1, ge=1, le=64)
    table_size: int = Field(default=10000, ge=1, le=2**31 - 1)
    """Rows per table: at most 2**31 - 1, the largest id of sysbench's tables (a signed 32-bit
    ``INTEGER`` column in its oltp_common.lua)."""
    threads: int = Field(default=8, ge=1, le=1024)
    duration: Duration = Field(default=10.0, gt=0)
    warmup: Duration = 0.0
    clients: int = Field(default=1, ge=1, le=64)
    port: int = Field(default=MARIADB_PORT, ge=1, le=65535)
    buffer_pool: Size = Field(default=64 * 1024**2, ge=8 * 1024**2)
    client: Literal["node", "host"] = "node"
    """Where sysbench runs: in the client nodes (the layer under test), or on their emulated
    hosts' own network stack (native), as Percona's "Direct-Bridge" row (a client on the
    direct host, MariaDB in a container)."""

    def labels(self) -> dict[str, str]:
        """Labels on every sample of the run: the placement, ``in-layer`` (the default) or
        ``client-host`` (the client native)."""
        return {"placement": "client-host" if self.client == "host" else "in-layer"}

    def service_ports(self) -> tuple[int, ...]:
        return (self.port,)


# ---- parsing (pure) --------------------------------------------------------------------------


_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_FIELDS: dict[str, str] = {
    "transactions": r"^\s*transactions:\s+" + _NUM + r"\s+\(" + _NUM + r" per sec\.\)",
    "queries": r"^\s*queries:\s+" + _NUM + r"\s+\(" + _NUM + r" per sec\.\)",
    "errors": r"^\s*ignored errors:\s+" + _NUM,
    "reconnects": r"^\s*reconnects:\s+" + _NUM,
    "total_time_s": r"^\s*total time:\s+" + _NUM + r"s",
    "events": r"^\s*total number of events:\s+" + _NUM,
    "latency_min_ms": r"^\s*min:\s+" + _NUM,
    "latency_avg_ms": r"^\s*avg:\s+" + _NUM,
    "latency_max_ms": r"^\s*max:\s+" + _NUM,
    "latency_sum_ms": r"^\s*sum:\s+" + _NUM,
}
_PERCENTILE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)th percentile:\s+" + _NUM, re.M)
_HIST_LINE = re.compile(r"^\s*" + _NUM + r"\s+\|[* ]*\s+([0-9]+)\s*$")


def parse_histogram(text: str) -> list[tuple[float, int]]:
    """(bucket value in ms, count) rows of sysbench's ``--histogram`` block, in order."""
    rows: list[tuple[float, int]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("Latency histogram"):
            inside = True
            continue
        if not inside:
            continue
        match = _HIST_LINE.match(line)
        if match:
            rows.append((float(match.group(1)), int(match.group(2))))
        elif rows and not line.strip():
            break
    return rows


def histogram_percentile(rows: list[tuple[float, int]], pct: float) -> float | None:
    """Smallest bucket value whose cumulative count reaches ``pct`` % of all events."""
    total = sum(count for _, count in rows)
    if total == 0:
        return None
    need = total * pct / 100.0
    seen = 0
    for value, count in rows:
        seen += count
        if seen >= need:
            return value
    return rows[-1][0]


def parse_sysbench(text: str) -> dict[str, float]:
    """Numbers of one ``sysbench ... run`` report (1.0.x text output).

    Keys: ``tps``, ``qps``, ``transactions``, ``queries``, ``errors``, ``reconnects``,
    ``total_time_s``, ``events``, ``latency_{min,avg,max,sum}_ms``, ``latency_mean_ms``,
    ``latency_p<N>_ms`` for sysbench's own percentile, and (with ``--histogram``)
    ``latency_p50_ms``/``latency_p99_ms`` from the buckets unless sysbench gave them. Raises
    ValueError when the report has no transaction count (sysbench failed early).
    """
    out: dict[str, float] = {}
    stats = text.split("SQL statistics:", 1)[1] if "SQL statistics:" in text else ""
    for key, pattern in _FIELDS.items():
        match = re.search(pattern, stats, re.M)
        if match is None:
            continue
        out[key] = float(match.group(1))
        if key == "transactions":
            out["tps"] = float(match.group(2))
        elif key == "queries":
            out["qps"] = float(match.group(2))
    if "transactions" not in out:
        tail = " | ".join(text.strip().splitlines()[-3:])
        raise ValueError(f"no sysbench statistics in the output: {tail}")
    for match in _PERCENTILE.finditer(stats):
        out[f"latency_p{_pct_name(float(match.group(1)))}_ms"] = float(match.group(2))
    if out.get("events", 0) > 0 and "latency_sum_ms" in out:
        out["latency_mean_ms"] = out["latency_sum_ms"] / out["events"]
    elif "latency_avg_ms" in out:
        out["latency_mean_ms"] = out["latency_avg_ms"]
    rows = parse_histogram(text)
    for pct in (50.0, 99.0):
        key = f"latency_p{_pct_name(pct)}_ms"
        value = histogram_percentile(rows, pct)
        if key not in out and value is not None:
            out[key] = value
    return out


def _pct_name(pct: float) -> str:
    return f"{pct:g}".replace(".", "")


SAMPLE_UNITS: dict[str, str] = {
    "tps": "1/s", "qps": "1/s", "errors": "count", "reconnects": "count",
    "latency_mean_ms": "ms", "latency_p50_ms": "ms", "latency_p95_ms": "ms",
    "latency_p99_ms": "ms",
}
SUMMED = ("tps", "qps", "errors", "reconnects")


def to_samples(parsed: dict[str, float], labels: dict[str, str]) -> list[Sample]:
    """Samples of one parsed sysbench report (the metrics of ``SAMPLE_UNITS`` it has)."""
    return [Sample(metric, parsed[metric], unit, dict(labels))
            for metric, unit in SAMPLE_UNITS.items() if metric in parsed]


# ---- the workload ----------------------------------------------------------------------------


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise MissingToolError(f"{name} not found: apt-get install {TOOLS[name]} "
                               "(or run scripts/setup.sh --with apps)")
    return path


def _read(node: Node | None, path: Path) -> str:
    """A file of the node's (``None``: of this host), empty when there is none."""
    try:
        return node.read_file(path) if node is not None else path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def _tail(node: Node | None, path: Path, lines: int = 8) -> str:
    return " | ".join(_read(node, path).strip().splitlines()[-lines:]) or "(no log)"


def server_args(datadir: Path, run_dir: Path, port: int, buffer_pool: int) -> list[str]:
    """mariadbd's command line: private files, small buffers, networking on every address."""
    return [
        "--no-defaults", "--user=root", f"--datadir={datadir}",
        f"--socket={run_dir / 'mariadbd.sock'}", f"--pid-file={run_dir / 'mariadbd.pid'}",
        f"--log-error={run_dir / 'error.log'}", f"--init-file={run_dir / 'init.sql'}",
        f"--port={port}", "--bind-address=0.0.0.0", "--skip-name-resolve",
        f"--innodb-buffer-pool-size={buffer_pool}", "--innodb-log-file-size=16M",
        "--innodb-flush-method=fsync", "--innodb-use-native-aio=0",
        "--innodb-flush-log-at-trx-commit=2", "--performance-schema=OFF", "--skip-log-bin",
        "--max-connections=2048", "--max-prepared-stmt-count=1048576",
        "--key-buffer-size=8M", "--tmp-table-size=16M", "--max-heap-table-size=16M",
    ]


INIT_SQL = f"""CREATE DATABASE IF NOT EXISTS {DB_NAME};
CREATE USER IF NOT EXISTS '{DB_USER}'@'%' IDENTIFIED BY '{DB_PASSWORD}';
GRANT ALL PRIVILEGES ON {DB_NAME}.* TO '{DB_USER}'@'%';
"""


class OltpWorkload(WorkloadBase):
    """MariaDB on node 0, sysbench ``oltp_point_select`` on nodes 1..clients."""

    name = "oltp"

    def __init__(self, options: OltpOptions) -> None:
        self.options = options
        self._server: subprocess.Popen[bytes] | None = None
        self._dir: Path | None = None
        self._port = 0

    def _nodes(self, lab: LabView) -> tuple[Node, list[Node]]:
        need = 1 + self.options.clients
        if len(lab.nodes) < need:
            raise WorkloadError(f"oltp with {self.options.clients} client(s) needs {need} nodes, "
                                f"the lab has {len(lab.nodes)}")
        clients = lab.nodes[1:need]
        if self.options.client == "host":
            clients = [lab.host_node(n.host) for n in clients]
        return lab.nodes[0], clients

    def _sysbench(self, lab: LabView, client: Node, server: Node) -> list[str]:
        o = self.options
        addr, port = lab.endpoint(client, server, self._port)
        return [_tool("sysbench"), "oltp_point_select", "--db-driver=mysql",
                f"--mysql-host={addr}", f"--mysql-port={port}", f"--mysql-user={DB_USER}",
                f"--mysql-password={DB_PASSWORD}", f"--mysql-db={DB_NAME}",
                f"--tables={o.tables}", f"--table-size={o.table_size}"]

    def prepare(self, lab: LabView) -> None:
        server, clients = self._nodes(lab)
        for node in (server, *clients):
            node.check_files(self.name)
        for tool in TOOLS:
            _tool(tool)
        o = self.options
        self._port = lab.listen_port(server, o.port)
        self._dir = server.work_dir(lab.work_dir) / f"mariadb-{server.name}-{self._port}"
        server.remove_dir(self._dir)
        datadir = self._dir / "data"
        server.write_file(self._dir / "init.sql", INIT_SQL)
        try:
            server.run([_tool("mariadb-install-db"), "--no-defaults", "--user=root",
                        f"--datadir={datadir}", "--auth-root-authentication-method=normal",
                        "--skip-test-db", "--skip-name-resolve", "--innodb-log-file-size=16M",
                        f"--innodb-buffer-pool-size={o.buffer_pool}",
                        "--innodb-flush-method=fsync", "--innodb-use-native-aio=0"],
                       timeout=120.0)
        except CommandError as exc:
            raise WorkloadError(f"mariadb-install-db failed: {exc}") from exc
        log = lab.work_dir / f"mariadbd-{server.name}-{self._port}.out"
        self._server = server.spawn(
            [_tool("mariadbd"), *server_args(datadir, self._dir, self._port, o.buffer_pool)],
            log=log)
        self._wait_ready(server, log)
        argv = [*self._sysbench(lab, clients[0], server),
                f"--threads={min(o.tables, o.threads)}", "prepare"]
        try:  # sysbench says what failed on stdout ("FATAL: ...")
            got = clients[0].run(argv, timeout=300.0 + o.tables * o.table_size / 1000.0,
                                 check=False)
        except CommandError as exc:  # timed out
            raise WorkloadError(f"sysbench prepare failed: {exc}; server log: "
                                f"{_tail(server, self._dir / 'error.log')}") from exc
        if got.returncode != 0:
            said = " | ".join((got.stdout + got.stderr).strip().splitlines()[-4:])
            raise WorkloadError(f"sysbench prepare on {clients[0].name} exited "
                                f"{got.returncode}: {said}; server log: "
                                f"{_tail(server, self._dir / 'error.log')}")

    def _wait_ready(self, server: Node, log: Path) -> None:
        assert self._server is not None and self._dir is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._server.poll() is not None:
                raise WorkloadError(
                    f"mariadbd exited with {self._server.returncode} at start: "
                    f"{_tail(server, self._dir / 'error.log')} {_tail(None, log, 3)}")
            try:
                server.wait_listening(self._port, timeout=0.5)
            except LabError:
                if time.monotonic() > deadline:
                    raise WorkloadError(
                        f"mariadbd not listening on port {self._port} after "
                        f"{START_TIMEOUT_S:.0f}s: {_tail(server, self._dir / 'error.log')}") from None
                continue
            # the init file (user, database) runs before "ready for connections"
            if "ready for connections" in _read(server, self._dir / "error.log"):
                return
            time.sleep(0.05)

    def run(self, lab: LabView, raw_dir: Path) -> list[Sample]:
        if self._server is None or self._dir is None:
            raise WorkloadError("oltp: run() before prepare()")
        server, clients = self._nodes(lab)
        o = self.options
        raw_dir.mkdir(parents=True, exist_ok=True)
        common = [f"--threads={o.threads}", "--percentile=95", "--histogram=on",
                  "--report-interval=0", "--db-ps-mode=auto"]

        def one(client: Node, seconds: float) -> subprocess.CompletedProcess[str]:
            argv = [*self._sysbench(lab, client, server), *common, f"--time={seconds:g}", "run"]
            return client.run(argv, timeout=seconds + RUN_SLACK_S, check=False)

        def all_clients(seconds: float) -> list[subprocess.CompletedProcess[str]]:
            if len(clients) == 1:
                return [one(clients[0], seconds)]
            with ThreadPoolExecutor(max_workers=len(clients)) as pool:
                futures = [pool.submit(one, c, seconds) for c in clients]
                return [f.result() for f in futures]

        if o.warmup > 0:
            for client, result in zip(clients, all_clients(max(1.0, round(o.warmup))),
                                      strict=True):
                (raw_dir / f"sysbench-warmup-{client.name}.txt").write_text(
                    result.stdout + result.stderr)
        samples: list[Sample] = []
        totals: dict[str, float] = dict.fromkeys(SUMMED, 0.0)
        seconds = max(1.0, round(o.duration))
        for client, result in zip(clients, all_clients(seconds), strict=True):
            path = raw_dir / f"sysbench-{client.name}.txt"
            path.write_text(result.stdout)
            if result.stderr.strip():
                path.with_suffix(".stderr").write_text(result.stderr)
            try:
                parsed = parse_sysbench(result.stdout)
            except ValueError as exc:
                raise WorkloadError(
                    f"sysbench on {client.name} exited {result.returncode}: "
                    f"{' | '.join((result.stderr or result.stdout).strip().splitlines()[-3:])}; "
                    f"server log: {_tail(server, self._dir / 'error.log', 3)}") from exc
            if result.returncode != 0:
                raise WorkloadError(f"sysbench on {client.name} exited {result.returncode}: "
                                    f"{result.stderr.strip()[-300:]}")
            labels = {"server": server.name, "client": client.name, "threads": str(o.threads)}
            samples += to_samples(parsed, labels)
            for key in SUMMED:
                totals[key] += parsed.get(key, 0.0)
        if len(clients) > 1:
            labels = {"server": server.name, "client": "all", "threads": str(o.threads)}
            samples += [Sample(k, v, SAMPLE_UNITS[k], dict(labels)) for k, v in totals.items()]
        return samples

    def cleanup(self, lab: LabView) -> None:
        if self._server is not None:
            lab.stop(self._server, grace=STOP_GRACE_S)
            self._server = None
        if self._dir is not None:
            self._nodes(lab)[0].remove_dir(self._dir)
            self._dir = None


OLTP_WORKLOADS: dict[str, Entry] = {
    "oltp": registry_entry(OltpOptions, OltpWorkload),
}
"""Scenario key -> (options model, factory) for the registry."""
