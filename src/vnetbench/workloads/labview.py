"""What a workload sees of a built lab (``LabView``): the one module both the workload
contract (``workloads.base``) and a paired client's view of a lab (``workloads.paired``)
build on."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from vnetbench.host.node import Node
    from vnetbench.layers.base import AnyLayer


class LabView(Protocol):
    """What a workload sees of a built lab (``backends.lab.Lab`` is one): its nodes, where a
    client reaches a server, the hosts' own stacks, its layer, and how to stop a process or
    claim a directory. Workloads never reach the backend, the kernel plan or namespaces."""

    nodes: list[Node]
    work_dir: Path

    @property
    def layer(self) -> AnyLayer: ...

    @property
    def run_id(self) -> str: ...

    def listen_port(self, node: Node, base_port: int) -> int:
        """The port a server inside ``node`` listens on for service ``base_port``."""
        ...

    def endpoint(self, client: Node, server: Node, port: int,
                 proto: str = "tcp") -> tuple[str, int]:
        """Address and port at which ``client`` reaches ``server``'s service ``port``."""
        ...

    def host_node(self, host: int) -> Node:
        """Emulated host ``host``'s own network stack as a node."""
        ...

    def stop(self, proc: subprocess.Popen[bytes], grace: float = ...) -> int | None:
        """Stop a process a node spawned (SIGTERM, then SIGKILL after ``grace``)."""
        ...

    def claim_data_dir(self, path: Path) -> None:
        """Record a directory about to be made outside the work directory, for ``clean``."""
        ...
