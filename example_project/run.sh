#!/usr/bin/env bash
# Set up (a virtualenv in .venv with celery-dbeat installed) and run the example:
# a worker and two beats on SQLite and a filesystem broker, no servers needed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
exec .venv/bin/python example_project/demo.py "$@"
