#!/usr/bin/env bash
# Set up a virtualenv (.venv) with celery-dbeat and its test tools, then run lint, type checks and
# the whole test suite against the real services (PostgreSQL, MariaDB, Redis; see README).
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
# Two workers: the tests that start real celery processes (marked e2e) run one after another on
# one of them, everything else on the other (tests/conftest.py); -n 0 runs it all in-process.
echo "== pytest" && exec .venv/bin/python -m pytest -n 2 --dist loadgroup "$@"
