#!/usr/bin/env bash
# Everything the tests and benchmarks use, on top of scripts/setup.sh (scripts/test.sh runs it
# first; idempotent and quick when everything is there). One line per tool:
#   every part of setup.sh (apps, hadoop, docker, vm, kubernetes: scripts/setup.d/*.sh), whose workloads
#   and backends the integration tests run
#   chromium, fonts-dejavu-core  the report's browser test (tests/integration/test_report_browser.py)
#   mininet                      the lab speed benchmark (benchmarks/lab_setup.py)
#   qperf                        the probe fidelity benchmark (benchmarks/probe_fidelity.py)
#   tcpdump                      integration tests (packet captures)
#   debootstrap                  the stock Debian 12 install check (benchmarks/stock_install.py,
#                                tests/integration/test_stock_install.py)
#   openssh-server               sshd for the emulated real machines (tests/integration/machines.py
#                                starts private ones; the package's own service stays down)
#   pytest, mypy, ruff, ...      the Python dev tools, pinned in requirements/dev.txt, into .venv
#                                (scripts/setup-python.sh --dev)
# sockperf, iperf3 (also peers of the benchmarks) and ping are installed by scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib.sh
run_parts setup-test "${PARTS[@]}"

TEST_PACKAGES=(chromium fonts-dejavu-core mininet qperf tcpdump debootstrap openssh-server)
apt_install setup-test --services-stay-down openssh-server  # no system sshd on the test box
apt_install setup-test "${TEST_PACKAGES[@]}"
require setup-test chromium "apt-get install chromium"
require setup-test mn "apt-get install mininet"
require setup-test qperf "apt-get install qperf"
require setup-test tcpdump "apt-get install tcpdump"
require setup-test debootstrap "apt-get install debootstrap"
require setup-test sshd "apt-get install openssh-server" -V

./scripts/setup-python.sh --dev
py=$(venv_python setup-test)
echo "setup-test: python dev tools: $("$py" - <<'PY'
from importlib.metadata import version
print(", ".join(f"{name} {version(name)}" for name in ("pytest", "mypy", "ruff", "pyarrow", "jsonschema")))
PY
)"
