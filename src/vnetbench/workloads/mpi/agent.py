"""mpirun's remote-shell agent inside a lab: "ssh" into a lab node by entering its namespace.

``mpirun --mca plm_rsh_agent "<python> -m vnetbench.workloads.mpi.agent --map FILE"`` runs

    <python> -m vnetbench.workloads.mpi.agent --map FILE <hostname> <orted command words...>

for each host of the hostfile. ``FILE`` is a JSON map written by the MPI workload::

    {"10.7.65.2": {"netns": "vnb1a2b-n1", "cgroup_procs": ["/sys/fs/cgroup/.../cgroup.procs"],
                   "tmpdir": "/run/vnetbench/work/1a2b/mpi-x/tmp/n1"}}

The agent joins the node's cgroups, sets ``TMPDIR`` to the node's own directory, moves
itself into the node's network namespace (``setns``; the process is single-threaded here)
and ``exec``s ``/bin/sh -c "<words>"``, as sshd would run the joined command words with the
user's shell. The orted daemon therefore
runs inside the node, a child of mpirun, with mpirun's environment (no ssh, no keys).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from vnetbench.host.enter import join_node

USAGE = "usage: python3 -m vnetbench.workloads.mpi.agent --map FILE HOST COMMAND..."


def load_map(path: Path) -> dict[str, dict[str, object]]:
    """The hostname -> {netns, cgroup_procs} map written by the MPI workload."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return {str(k): dict(v) for k, v in data.items()}


def parse_args(argv: Sequence[str]) -> tuple[Path, str, list[str]]:
    """(map file, host, command words) from the agent's arguments; ValueError if malformed."""
    args = list(argv)
    map_file: Path | None = None
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt == "--map" and args:
            map_file = Path(args.pop(0))
        elif opt.startswith("--map="):
            map_file = Path(opt.split("=", 1)[1])
        else:
            # ssh-style options mpirun might add (e.g. -x): ignored, as they carry no meaning here
            continue
    if map_file is None or len(args) < 2:
        raise ValueError(USAGE)
    return map_file, args[0], args[1:]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        map_file, host, words = parse_args(sys.argv[1:] if argv is None else argv)
        hosts = load_map(map_file)
    except (ValueError, OSError) as exc:
        print(f"vnb-mpi-agent: {exc}", file=sys.stderr)
        return 255
    entry = hosts.get(host)
    if entry is None:
        print(f"vnb-mpi-agent: unknown host {host!r} (known: {', '.join(sorted(hosts))})",
              file=sys.stderr)
        return 255
    if entry.get("tmpdir"):
        # ORTE's session dir, PMIx's store and hwloc's shared topology are keyed by hostname,
        # which every node shares: a TMPDIR per node keeps concurrent daemons apart
        os.environ["TMPDIR"] = str(entry["tmpdir"])
    procs = entry.get("cgroup_procs", [])
    try:
        join_node(str(entry["netns"]), [str(p) for p in procs] if isinstance(procs, list) else [])
    except KeyError:
        print(f"vnb-mpi-agent: the map names no namespace for {host}", file=sys.stderr)
        return 255
    except OSError as exc:
        print(f"vnb-mpi-agent: {host}: {exc.strerror or exc}", file=sys.stderr)
        return 255
    sys.stdout.flush()
    os.execv("/bin/sh", ["/bin/sh", "-c", " ".join(words)])
    return 255  # pragma: no cover - execv does not return


if __name__ == "__main__":
    sys.exit(main())
