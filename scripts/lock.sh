#!/usr/bin/env bash
# Regenerate the hashed Python locks from pyproject.toml and requirements/pins.in:
#   requirements/run.txt  runtime + extra parquet + build tools (scripts/setup-python.sh)
#   requirements/dev.txt  the same + extra dev: pytest, mypy, ruff... (scripts/setup-test.sh)
# run.txt is resolved within dev.txt, so a package in both has the same version.
# One universal resolution for Python 3.11 and newer, every file's hash. Uses uv (installed
# into a throw-away virtual environment); needs PyPI. Not run by set-up: run it by hand when a
# version should move, then run the tests and commit both files.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q --disable-pip-version-check uv==0.13.9
uv=("$tmp/venv/bin/uv" pip compile --universal --python-version 3.11 --generate-hashes
    --no-annotate --custom-compile-command scripts/lock.sh -q)
# pyproject's [build-system] requires: set-up builds the editable install without isolation
python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))
  ["build-system"]["requires"]))' > "$tmp/build.in"
"${uv[@]}" pyproject.toml "$tmp/build.in" --extra parquet --extra dev -c requirements/pins.in \
  -o requirements/dev.txt
"${uv[@]}" pyproject.toml "$tmp/build.in" --extra parquet -c requirements/dev.txt \
  -o requirements/run.txt
echo "lock: requirements/dev.txt ($(grep -c '==' requirements/dev.txt) packages)," \
     "requirements/run.txt ($(grep -c '==' requirements/run.txt) packages)"
