#!/usr/bin/env bash
# Set up a virtualenv (.venv) with celery-dbeat and its test tools, then run lint, type checks and
# the whole test suite against the real services (PostgreSQL, MariaDB, Redis; see docs/how-to/running-the-tests.md).
# Extra arguments go to pytest, e.g. ./run-tests.sh -k ticker
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$root"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade "pip>=25.1"
.venv/bin/python -m pip install --quiet -e . --group dev
echo "== ruff" && .venv/bin/ruff check . && .venv/bin/ruff format --check .
echo "== mypy" && .venv/bin/mypy
echo "== import contracts" && .venv/bin/lint-imports
# Three workers: the tests that start real celery processes (marked e2e) run in two groups, the
# chaos scenarios and the rest, each one test after another on one worker, and the in-process
# tests fill the workers around them (tests/conftest.py). The celery processes mostly wait on
# time, so a third worker keeps both cores busy. -n 0 runs it all in one process.
echo "== pytest" && exec .venv/bin/python -m pytest -n 3 --dist loadgroup "$@"
