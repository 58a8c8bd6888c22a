"""One Docker engine per emulated host: its configuration, start-up command and client.

An engine runs inside its host's network namespace and in a private mount namespace of its
own (``unshare --mount``), where a fresh tmpfs covers /run and sysfs is remounted for the
host's namespace (cgroupfs kept). So its exec root, containerd, shim sockets and the overlay
mounts of its containers are private to it and vanish with it, it never finds (or uses) a
containerd of the machine's, and /sys/class/net shows the host's own devices. Its data root,
configuration and API socket live on disk under ``/var/tmp/vnetbench/<run id>/docker/h<i>/``
(the socket is reached from the root namespace). ``--config-file`` points at the generated
``daemon.json``, so /etc/docker/daemon.json of the machine never applies.

Containers get the cgroup parent ``/vnb<id>/h<i>``, inside the run's own cgroup tree, which
teardown and ``vnetbench clean`` remove.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vnetbench.errors import CommandError, LabError, MissingToolError
from vnetbench.host.state import DISK_WORK_ROOT
from vnetbench.lab.plan import Daemon, WriteFile
from vnetbench.lab.topology import Topology

ENGINE_WRAPPER = """\
set -e
mount -t tmpfs -o mode=0755,size=64m vnetbench-run /run
mkdir /run/vnetbench-cgroup
mount --rbind /sys/fs/cgroup /run/vnetbench-cgroup
mount -t sysfs sysfs /sys
mount --move /run/vnetbench-cgroup /sys/fs/cgroup
exec "$@"
"""
"""Run by ``sh`` inside the engine's new mount namespace, then becomes dockerd."""

ENGINE_READY_TIMEOUT = 60.0
CLIENT_TIMEOUT = 120.0
DOCKERD_INSTALL_HINT = "apt-get install docker.io (or run scripts/setup.sh --with docker)"


def engine_root(topo: Topology, host: int) -> Path:
    """On-disk directory of host ``host``'s engine (data root, socket, daemon.json)."""
    return DISK_WORK_ROOT / topo.names.short_id / "docker" / f"h{host}"


def docker_root(topo: Topology) -> Path:
    """The run's directory holding every engine's (removed at teardown)."""
    return DISK_WORK_ROOT / topo.names.short_id / "docker"


def socket_path(topo: Topology, host: int) -> Path:
    return engine_root(topo, host) / "docker.sock"


def pool_base(topo: Topology) -> str:
    """Addresses Docker may hand out on its own (docker_gwbridge, ingress): unused by the
    lab's address plan (host subnets stop at .123, the overlay starts at .128)."""
    return f"{topo.addresses.net}.124.0/23"


def swarm_pool(topo: Topology) -> str:
    return f"{topo.addresses.net}.126.0/23"


@dataclass(frozen=True)
class EngineSettings:
    """What a network mode wants of every engine."""

    default_bridge: bool
    """Keep docker0 (addressed as the lab's host subnet); else ``bridge: none``."""
    iptables: bool = True
    userland_proxy: bool = False
    ip_masq: bool = True
    """Masquerade what containers send off their bridge (off where subnets are routed)."""


def daemon_config(topo: Topology, host: int, settings: EngineSettings) -> dict[str, Any]:
    """The engine's ``daemon.json`` (pure)."""
    root = engine_root(topo, host)
    config: dict[str, Any] = {
        "data-root": str(root / "data"),
        "exec-root": "/run/docker",
        "pidfile": "/run/docker.pid",
        "hosts": [f"unix://{socket_path(topo, host)}"],
        "storage-driver": "overlay2",
        "exec-opts": ["native.cgroupdriver=cgroupfs"],
        "cgroup-parent": f"/{topo.names.prefix}/h{host}",
        "log-driver": "none",
        "log-level": "warn",
        "iptables": settings.iptables,
        "ip6tables": False,
        "userland-proxy": settings.userland_proxy,
        "ip-masq": settings.ip_masq,
        "default-address-pools": [{"base": pool_base(topo), "size": 24}],
        "live-restore": False,
    }
    if settings.default_bridge:
        config["bip"] = f"{topo.addresses.host_gateway(host)}/{topo.addresses.host_prefix}"
    else:
        config["bridge"] = "none"
    return config


def engine_actions(topo: Topology, host: int, settings: EngineSettings,
                   dockerd: str) -> tuple[WriteFile, Daemon]:
    """The configuration file and the daemon that starts host ``host``'s engine."""
    root = engine_root(topo, host)
    config_file = root / "daemon.json"
    text = json.dumps(daemon_config(topo, host, settings), indent=2) + "\n"
    argv = ("unshare", "--mount", "--propagation", "private", "sh", "-ec", ENGINE_WRAPPER,
            "vnetbench-dockerd", dockerd, "--config-file", str(config_file))
    return (WriteFile(str(config_file), text),
            Daemon(topo.names.host_ns(host), f"dockerd h{host}", argv,
                   f"path:{socket_path(topo, host)}"))


def find_dockerd() -> str:
    """The engine binary: $VNETBENCH_DOCKERD, then PATH (and /usr/sbin, which root's PATH
    may lack); MissingToolError naming the package otherwise."""
    override = os.environ.get("VNETBENCH_DOCKERD")
    if override:
        if os.access(override, os.X_OK):
            return override
        raise MissingToolError(f"VNETBENCH_DOCKERD={override} is not an executable file")
    found = shutil.which("dockerd") or shutil.which("dockerd", path="/usr/sbin:/usr/bin")
    if not found:
        raise MissingToolError(f"the Docker engine (dockerd) is not installed: "
                               f"{DOCKERD_INSTALL_HINT}")
    return found


def find_docker_client(dockerd: str) -> str:
    """The client shipped beside the engine (``/usr/sbin/dockerd`` -> ``/usr/bin/docker``),
    else ``docker`` on PATH: a newer client elsewhere on PATH would also work (it speaks
    the engine's older API), but the packaged pair is what the run records."""
    override = os.environ.get("VNETBENCH_DOCKER")
    if override:
        if os.access(override, os.X_OK) and not os.path.isdir(override):
            return override
        raise MissingToolError(f"VNETBENCH_DOCKER={override} is not an executable file")
    sibling = Path(dockerd).resolve().parent.parent / "bin" / "docker"
    if sibling.is_file() and os.access(sibling, os.X_OK):
        return str(sibling)
    found = shutil.which("docker")
    if not found:
        raise MissingToolError(f"the docker client is not installed: {DOCKERD_INSTALL_HINT}")
    return found


@dataclass(frozen=True)
class DockerClient:
    """``docker -H unix://<socket> ...`` for one engine; a failure is a CommandError."""

    binary: str
    socket: Path
    where: str

    def __call__(self, args: Sequence[str], *, timeout: float = CLIENT_TIMEOUT,
                 input_path: Path | None = None) -> str:
        argv = [self.binary, "-H", f"unix://{self.socket}", *args]
        # the caller's client configuration (contexts, credential helpers) never applies
        env = {**os.environ, "DOCKER_CLI_HINTS": "false",
               "DOCKER_CONFIG": str(self.socket.parent / "client")}
        env.pop("DOCKER_HOST", None)
        env.pop("DOCKER_CONTEXT", None)
        try:
            if input_path is not None:
                with open(input_path, "rb") as stdin:
                    proc = subprocess.run(argv, stdin=stdin, capture_output=True, timeout=timeout,
                                          env=env, check=False)
            else:
                proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                      timeout=timeout, env=env, check=False)
        except subprocess.TimeoutExpired as exc:
            raise CommandError(argv, -1, f"timed out after {timeout:.0f}s", self.where) from exc
        out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
        if proc.returncode != 0:
            raise CommandError(argv, proc.returncode, err or out, self.where)
        return out

    def wait_ready(self, timeout: float = ENGINE_READY_TIMEOUT) -> str:
        """Block until the engine answers; its version. LabError after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self(["version", "--format", "{{.Server.Version}}"], timeout=10.0).strip()
            except CommandError as exc:
                if time.monotonic() > deadline:
                    raise LabError(f"the Docker engine of {self.where} did not answer within "
                                   f"{timeout:.0f}s: {exc}") from None
            time.sleep(0.05)
