#!/usr/bin/env bash
# Real-application workloads (oltp, mpi): Debian's MariaDB server, sysbench and OpenMPI, and
# the MPI micro-benchmark compiled with mpicc into src/vnetbench/bin/vnb-mpi-bench. Idempotent;
# run as root by scripts/setup.sh after `pip install -e .`. The system MariaDB service is
# never used (vnetbench starts private servers inside lab nodes): it is stopped and disabled.
set -euo pipefail
cd "$(dirname "$0")/../.."

PACKAGES=(mariadb-server sysbench openmpi-bin libopenmpi-dev)
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "20-apps: apt-get install ${missing[*]}"
  apt-get update -qq
  # policy-rc.d exit 101 keeps the package scripts from starting the system mariadb service
  created_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    created_policy=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [ "$created_policy" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
fi

# The system service is not wanted: stop and disable it wherever an init system exists.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl disable --now mariadb.service >/dev/null 2>&1 || true
elif [ -x /etc/init.d/mariadb ]; then
  if /etc/init.d/mariadb status >/dev/null 2>&1; then /etc/init.d/mariadb stop >/dev/null 2>&1 || true; fi
  if command -v update-rc.d >/dev/null 2>&1; then update-rc.d mariadb disable >/dev/null 2>&1 || true; fi
fi

src=src/vnetbench/workloads/mpi/vnb_mpi_bench.c
out=src/vnetbench/bin/vnb-mpi-bench
mkdir -p src/vnetbench/bin
if [ ! -x "$out" ] || [ "$src" -nt "$out" ]; then
  echo "20-apps: mpicc $src -> $out"
  mpicc -O2 -Wall -o "$out.tmp" "$src" -lm
  mv "$out.tmp" "$out"
fi
echo "20-apps: mariadbd $(mariadbd --version | awk '{print $3}'), $(sysbench --version), $(mpirun --version | head -1)"
