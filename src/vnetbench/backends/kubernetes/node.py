"""A vnetbench node that is a pod: commands run in it with ``kubectl exec``.

``run`` waits for one command (``kubectl exec POD -- argv``). ``spawn`` starts a long-lived
one under a small shell supervisor in the pod, with kubectl's stdin a pipe this process
holds: when the run stops kubectl (by its PID), or this process dies, the pod side sees the
exec session's stdin close and the supervisor stops the program, so a server never
outlives its workload (the next one may bind the same port at once). vnetbench's probe is
called by its path in the image (``/usr/local/bin/vnetbench-probe``); any other absolute
path by its name (busybox's applets). The node's network stack is not on this kernel:
``netns`` is ``None`` and its ``/proc/net`` is read with ``cat`` in the pod.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from vnetbench.backends.kubernetes.kubectl import Kubectl
from vnetbench.backends.kubernetes.manifests import CONTAINER
from vnetbench.backends.machines.node import machine_argv
from vnetbench.backends.netns.node import communicate
from vnetbench.errors import LabError, WorkloadError
from vnetbench.host.node import Node
from vnetbench.host.processes import ProcessTracker

SUPERVISE = """\
exec 3<&0
"$@" </dev/null 3<&- &
p=$!
( while read -r _; do :; done <&3; kill -TERM "$p" 2>/dev/null ) &
w=$!
exec 3<&-
wait "$p"
rc=$?
kill "$w" 2>/dev/null
exit "$rc"
"""
"""The pod side of ``spawn``: the program runs in the background; a subshell waits for the
session's stdin to close and then stops it; the supervisor exits with the program."""
LOOK_TIMEOUT_S = 20.0
WORK_DIR = "/tmp/vnetbench"
MAX_ARG_BYTES = 100_000
"""The largest file ``write_file`` writes (it goes as one argument of the command)."""
LAUNCH_AGENT = "/usr/local/bin/vnb-kube-rsh"
"""The image's remote shell between pods (``image.KUBE_RSH``)."""


@dataclass(eq=False)
class PodNode(Node):
    """A node realised as a pod (see the module docstring)."""

    kubectl: Kubectl | None = field(default=None, repr=False)
    k8s_namespace: str = ""
    pod: str = ""
    k8s_node: str = ""
    """The Kubernetes node the pod runs on."""
    host_network: bool = False
    service_ip: str | None = None
    """The ClusterIP of the Service selecting this pod (``k8s-service``)."""
    tracker: ProcessTracker | None = field(default=None, repr=False)
    programs: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Local path of a program -> its path in the image (the probe)."""
    launcher: bool = False
    """The pod runs as the launcher's service account: it may exec into the lab's pods."""

    listen_poll_s: ClassVar[float] = 0.2
    """Each look at the pod's sockets is a ``kubectl exec``."""
    shares_host_files: ClassVar[bool] = False

    @property
    def name(self) -> str:
        """``n<j>``; a host's own stack (a hostNetwork pod for ``client: host``) is ``h<i>``."""
        return f"h{self.host}" if self.index < 0 else f"n{self.index}"

    def _kubectl(self) -> Kubectl:
        if self.kubectl is None:
            raise LabError(f"node {self.name} has no cluster to reach its pod")
        return self.kubectl

    def exec_argv(self, argv: Sequence[str], *, stdin: bool = False,
                  env: Mapping[str, str] | None = None) -> list[str]:
        """The local command running ``argv`` in the pod."""
        envs = ["env", *(f"{k}={v}" for k, v in env.items())] if env else []
        return self._kubectl().argv("exec", *(["-i"] if stdin else []), "-n", self.k8s_namespace,
                                    self.pod, "-c", CONTAINER, "--", *envs,
                                    *machine_argv(argv, self.programs))

    @property
    def where(self) -> str:
        return f"node {self.name} (pod {self.pod} on {self.k8s_node})"

    def run(self, argv: Sequence[str], timeout: float = 60.0, check: bool = True,
            env: Mapping[str, str] | None = None,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        local = self.exec_argv(argv, stdin=input_text is not None, env=env)
        proc = subprocess.Popen(
            local, stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        return communicate(proc, argv, timeout, check, input_text, self.where)

    def spawn(self, argv: Sequence[str], log: Path | None = None,
              env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        if self.tracker is None:
            raise LabError(f"node {self.name} belongs to no lab: nothing would stop the process")
        envs = ["env", *(f"{k}={v}" for k, v in env.items())] if env else []
        inner = ["sh", "-c", SUPERVISE, "vnetbench", *envs, *machine_argv(argv, self.programs)]
        local = self._kubectl().argv("exec", "-i", "-n", self.k8s_namespace, self.pod,
                                     "-c", CONTAINER, "--", *inner)
        return self.tracker.spawn(local, log=log, where=self.where, stdin_pipe=True)

    def program_path(self, local: str) -> str:
        return machine_argv([local], self.programs)[0]

    def launch_agent(self) -> str | None:
        return LAUNCH_AGENT if self.launcher else None

    def launch_name(self) -> str:
        return self.pod

    def proc_net(self, proto: str) -> dict[str, str]:
        script = f"cat /proc/net/{proto}; echo @@6; cat /proc/net/{proto}6 2>/dev/null; true"
        got = self.run(["sh", "-c", script], timeout=LOOK_TIMEOUT_S, check=False)
        if got.returncode != 0:
            return {}
        v4, _, v6 = got.stdout.partition("@@6\n")
        return {proto: v4, **({f"{proto}6": v6} if v6.strip() else {})}

    def namespace(self, needed_by: str) -> str:
        raise WorkloadError(f"{needed_by} needs nodes whose network stack is on this host; "
                            f"node {self.name} is a pod on Kubernetes node {self.k8s_node}")

    def work_dir(self, lab_dir: Path) -> Path:
        return Path(WORK_DIR)

    def check_files(self, needed_by: str) -> None:
        return None  # kept in the pod, through kubectl exec

    def write_file(self, path: Path, text: str) -> None:
        # the text as an argument, not on kubectl exec's stdin: the WebSocket session may
        # close stdin before the data is through, leaving the file empty (seen with mpi's
        # hostfile, about one run in three here)
        size = len(text.encode())
        if size > MAX_ARG_BYTES:
            raise WorkloadError(f"{path}: {size} bytes is more than a file "
                                f"written into a pod may have ({MAX_ARG_BYTES})")
        self.run(["sh", "-c", 'mkdir -p "$(dirname "$1")" && printf %s "$2" > "$1"', "sh",
                  str(path), text], timeout=LOOK_TIMEOUT_S)

    def read_file(self, path: Path) -> str:
        return self.cat_file(path, LOOK_TIMEOUT_S, f"in {self.where}")

    def remove_dir(self, path: Path) -> None:
        if str(path).startswith(WORK_DIR + "/") or str(path) == WORK_DIR:
            self.run(["rm", "-rf", str(path)], check=False, timeout=LOOK_TIMEOUT_S)

    def start_busy(self, duty: float = 1.0, bound_s: float = 3600.0) -> subprocess.Popen[bytes]:
        raise WorkloadError("busy neighbours need Python in the node; vnetbench's pod image "
                            "has none: leave busy out on Kubernetes layers")
