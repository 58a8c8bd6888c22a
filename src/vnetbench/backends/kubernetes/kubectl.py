"""How vnetbench talks to a cluster: ``kubectl`` as a subprocess, argv lists only.

``Kubectl`` carries the kubeconfig and context every command names; ``run`` waits for one
command (bounded; killed with its process group at the timeout or on Ctrl-C) and turns a
failure into one LabError line with kubectl's own message; ``objects`` reads JSON. kubectl
is found as ``$VNETBENCH_KUBECTL``, then on ``PATH``, then where scripts/setup.d/60-kubernetes.sh
builds it (``/var/cache/vnetbench/kubernetes-v1.34.4/bin``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vnetbench.backends.netns.node import communicate
from vnetbench.errors import CommandError, LabError, MissingToolError

BUILT_KUBECTL = Path("/var/cache/vnetbench/kubernetes-v1.34.4/bin/kubectl")
REQUEST_TIMEOUT = "20s"
"""What each API request may take (``--request-timeout``)."""


def find_kubectl() -> str:
    """The kubectl to use; MissingToolError saying how to get one."""
    override = os.environ.get("VNETBENCH_KUBECTL")
    if override:
        if os.access(override, os.X_OK):
            return override
        raise MissingToolError(f"VNETBENCH_KUBECTL={override} is not an executable file")
    found = shutil.which("kubectl")
    if found:
        return found
    if os.access(BUILT_KUBECTL, os.X_OK):
        return str(BUILT_KUBECTL)
    raise MissingToolError("kubectl not found: install it (matching your cluster's version), "
                           "or run scripts/setup.d/60-kubernetes.sh, which builds one into "
                           f"{BUILT_KUBECTL.parent}")


def tail(text: str, lines: int = 2) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


@dataclass(frozen=True)
class Kubectl:
    """kubectl bound to one cluster (kubeconfig + context)."""

    path: str
    kubeconfig: str | None = None
    context: str | None = None

    def argv(self, *args: str) -> list[str]:
        out = [self.path]
        if self.kubeconfig:
            out += ["--kubeconfig", self.kubeconfig]
        if self.context:
            out += ["--context", self.context]
        return [*out, *args]

    @property
    def cluster(self) -> str:
        """How messages name the cluster."""
        return f"context {self.context}" if self.context else "the kubeconfig's current context"

    def run(self, args: Sequence[str], *, input_text: str | None = None, timeout: float = 60.0,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        """``kubectl ARGS`` (bounded by ``timeout``); LabError with kubectl's message on a
        non-zero exit when ``check``."""
        argv = self.argv(f"--request-timeout={REQUEST_TIMEOUT}", *args)
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                start_new_session=True)
        except OSError as exc:
            raise LabError(f"{self.path}: cannot run it: {exc}") from exc
        try:
            return communicate(proc, argv, timeout, check, input_text, self.cluster)
        except CommandError as exc:
            raise LabError(f"kubectl {' '.join(args[:3])} ({self.cluster}): "
                           f"{tail(exc.stderr) or f'exit {exc.returncode}'}") from exc

    def objects(self, args: Sequence[str], timeout: float = 60.0) -> Any:
        """The JSON kubectl prints for ``ARGS -o json``."""
        got = self.run([*args, "-o", "json"], timeout=timeout)
        try:
            return json.loads(got.stdout)
        except ValueError as exc:
            raise LabError(f"kubectl {' '.join(args[:3])}: not JSON: {got.stdout[:200]!r}") from exc

    def create(self, items: Sequence[Mapping[str, object]], timeout: float = 60.0) -> list[Any]:
        """Create ``items`` (one ``kubectl create``); the objects as the API returned them."""
        text = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})
        got = self.run(["create", "-f", "-", "-o", "json"], input_text=text, timeout=timeout)
        return json_stream(got.stdout)


def json_stream(text: str) -> list[Any]:
    """The JSON documents of ``text``, one after the other (``kubectl create -o json`` prints
    one per object created; a List's items when it prints a List)."""
    decoder, at = json.JSONDecoder(), 0
    out: list[Any] = []
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return out
        try:
            data, at = decoder.raw_decode(text, at)
        except ValueError as exc:
            raise LabError(f"kubectl printed something that is not JSON: {text[at:at + 200]!r}"
                           ) from exc
        if isinstance(data, dict) and data.get("kind") == "List":
            out += data.get("items", [])
        else:
            out.append(data)
