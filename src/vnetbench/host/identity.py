"""This machine's identity, as vnetbench marks what it leaves elsewhere (a cluster's
namespaces, a run's directory on a real machine): its hostname, and a hash of its machine id
that tells two machines sharing a hostname apart."""

from __future__ import annotations

import hashlib
import re
import socket
from pathlib import Path

MACHINE_ID = Path("/etc/machine-id")


def machine_hash(path: Path = MACHINE_ID) -> str:
    """The first 16 hex digits of the SHA-256 of this machine's id (empty without one)."""
    try:
        ident = path.read_text().strip()
    except OSError:
        return ""
    return hashlib.sha256(ident.encode()).hexdigest()[:16] if ident else ""


def host_name() -> str:
    """This machine's name as a label value (at most 63 characters of [a-z0-9.-])."""
    name = re.sub(r"[^a-z0-9.-]", "-", socket.gethostname().lower()).strip("-.")
    return name[:63].rstrip("-.") or "unknown"


def controller_mark() -> str:
    """``<hostname> <machine hash>``: who started a run on a real machine."""
    return f"{host_name()} {machine_hash() or '-'}"
