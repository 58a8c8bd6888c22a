"""Give a process its own hostname and ``/etc/hosts``, then exec it (Hadoop node helper).

Run inside fresh UTS and mount namespaces (the lab's ``node.run``/``node.spawn`` enter only
the network namespace), e.g.::

    unshare --uts --mount --propagation private -- \\
        python3 -m vnetbench.workloads.hadoop.enter HOSTNAME HOSTS_FILE WORKDIR -- java ...

It sets the hostname, bind-mounts ``HOSTS_FILE`` over ``/etc/hosts`` (private to this mount
namespace), changes to ``WORKDIR`` (tools such as NNBench write files there) and replaces
itself with the command, so the command's PID is the spawned PID.
"""

from __future__ import annotations

import ctypes
import os
import socket
import sys

MS_BIND = 4096


def enter(hostname: str, hosts_file: str) -> None:
    socket.sethostname(hostname)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(hosts_file.encode(), b"/etc/hosts", None, MS_BIND, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"bind-mounting {hosts_file} on /etc/hosts: {os.strerror(err)}")


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--":
        print("usage: enter HOSTNAME HOSTS_FILE WORKDIR -- COMMAND...", file=sys.stderr)
        return 2
    enter(argv[0], argv[1])
    os.chdir(argv[2])
    os.execvp(argv[4], argv[4:])
    return 127  # pragma: no cover - exec does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
