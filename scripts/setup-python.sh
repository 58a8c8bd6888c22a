#!/usr/bin/env bash
# The Python part of the set-up (scripts/setup.sh runs it first; it also runs alone, as
# benchmarks/stock_install.py does in a stock Debian 12 chroot). Idempotent, one line per step:
#   - the system's Python 3.11+ (/usr/bin/python3, or python3 on PATH; VNETBENCH_PYTHON
#     overrides), with python3 and python3-venv from apt-get when missing (PEP 668 distributions
#     refuse `pip install` into the system interpreter, so vnetbench gets its own environment);
#   - a virtual environment .venv/ in the checkout, holding the pinned dependencies of
#     requirements/run.txt (hash-checked wheels from PyPI; --dev: requirements/dev.txt, which adds
#     pytest, mypy, ruff...) and vnetbench itself, installed editable from src/;
#   - the `vnetbench` command: a symlink in /usr/local/bin (VNETBENCH_LINK_DIR overrides; an
#     empty value makes none) to .venv/bin/vnetbench.
# Run it again after a pull: a changed lock or pyproject.toml is installed, anything else only
# checked (a stamp in .venv/ records what was installed).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

LOCK=requirements/run.txt
if [ "${1:-}" = --dev ]; then LOCK=requirements/dev.txt; shift; fi
if [ $# -gt 0 ]; then
  echo "setup-python: unknown argument $1 (usage: scripts/setup-python.sh [--dev])" >&2
  exit 2
fi
VENV="$PWD/.venv"
LINK_DIR="${VNETBENCH_LINK_DIR-/usr/local/bin}"

# The interpreter: the distribution's own unless told otherwise.
py="${VNETBENCH_PYTHON:-}"
if [ -z "$py" ]; then
  if [ ! -x /usr/bin/python3 ] && ! command -v python3 >/dev/null; then
    apt_install setup-python python3 python3-venv
  fi
  if [ -x /usr/bin/python3 ]; then py=/usr/bin/python3; else py=$(command -v python3); fi
fi
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "setup-python: $py is not Python 3.11 or newer: install one (apt-get install python3 on" \
       "Debian 12 / Ubuntu 24.04) or name it with VNETBENCH_PYTHON=/path/to/python3" >&2
  exit 2
fi
# Debian and Ubuntu ship the venv module's pip in python3-venv.
if ! "$py" -c 'import ensurepip' 2>/dev/null; then
  if [ "$py" = /usr/bin/python3 ] && command -v dpkg-query >/dev/null; then
    apt_install setup-python python3-venv
  fi
  "$py" -c 'import ensurepip' 2>/dev/null || {
    echo "setup-python: $py cannot make a virtual environment (no ensurepip): install the" \
         "distribution's python3-venv package" >&2
    exit 2
  }
fi
echo "setup-python: python: $("$py" --version 2>&1) ($py)"

# The environment: made once; made again when its interpreter no longer runs (an upgraded or
# removed Python).
if ! "$VENV/bin/python" -c '' 2>/dev/null; then
  echo "setup-python: $py -m venv $VENV"
  "$py" -m venv --clear "$VENV"
fi

# The dependencies, from the lock only (--no-deps: nothing unpinned slips in; wheels only:
# nothing is compiled), then vnetbench editable (no build isolation: pyproject's build
# requirements are in the lock too). The stamp is the lock's and pyproject.toml's hash.
stamp="$VENV/.vnetbench-$(basename "$LOCK" .txt).sha256"
want=$(cat "$LOCK" pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] \
   || ! "$VENV/bin/python" -c 'import vnetbench' 2>/dev/null || [ ! -x "$VENV/bin/vnetbench" ]; then
  echo "setup-python: pip install --require-hashes -r $LOCK, then -e . (into .venv)"
  rm -f "$stamp"
  pip=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
  "${pip[@]}" install --require-hashes --no-deps --only-binary :all: -r "$LOCK"
  "${pip[@]}" install --no-deps --no-build-isolation -e .
  "${pip[@]}" check >/dev/null || { "${pip[@]}" check >&2; exit 1; }
  echo "$want" > "$stamp"
fi
where=$("$VENV/bin/python" -c 'import vnetbench; print(vnetbench.__file__)')
case "$where" in
  "$PWD/src/vnetbench/"* | "$(pwd -P)/src/vnetbench/"*) ;;
  *) echo "setup-python: .venv imports vnetbench from $where, not from $PWD/src" >&2; exit 1 ;;
esac
echo "setup-python: $("$VENV/bin/vnetbench" --version) in .venv ($(basename "$LOCK"):" \
     "$(grep -c '^[A-Za-z0-9].*==' "$LOCK") pinned packages)"

# The command on PATH.
if [ -n "$LINK_DIR" ]; then
  mkdir -p "$LINK_DIR"
  ln -sfn "$VENV/bin/vnetbench" "$LINK_DIR/vnetbench"
  echo "setup-python: command: $LINK_DIR/vnetbench -> $VENV/bin/vnetbench"
  found=$(command -v vnetbench || true)
  if [ -z "$found" ]; then
    echo "setup-python: note: $LINK_DIR is not on this PATH: add it, or call $LINK_DIR/vnetbench"
  elif [ "$found" != "$LINK_DIR/vnetbench" ]; then
    echo "setup-python: note: \`vnetbench\` on this PATH is $found, which comes before" \
         "$LINK_DIR: call $LINK_DIR/vnetbench to run this checkout"
  fi
fi
