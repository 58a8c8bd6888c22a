#!/usr/bin/env bash
# The Docker engine for the docker backend (docker-* layers): Debian's docker.io (dockerd,
# containerd, runc, docker-proxy and the client). vnetbench never uses a system Docker
# service: each run starts its own engines inside the lab's namespaces, so the package's
# service is kept from starting at install time. The part `docker` (scripts/setup.sh --with
# docker). Idempotent; run as root.
set -euo pipefail
cd "$(dirname "$0")/../.."

. scripts/lib.sh
apt_install 40-docker --services-stay-down docker.io
echo "40-docker: $(/usr/sbin/dockerd --version)"
