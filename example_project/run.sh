#!/usr/bin/env bash
# Set up (a virtualenv in .venv with celery-dbeat installed) and run the example: a worker and
# two beats. With no arguments it needs no servers (SQLite and a filesystem broker); on RabbitMQ:
#   ./example_project/run.sh --broker amqp://guest:guest@127.0.0.1:5672// [--kill-one]
# on Redis: --broker redis://127.0.0.1:6379/0. Other options: --seconds N, --beats N (--help).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
# The drivers the URLs in use need (kombu brings RabbitMQ's; Redis and the databases are extras).
urls="$* ${CELERY_BROKER_URL:-} ${DBEAT_REDIS_URL:-} ${DBEAT_DATABASE_URL:-}"
extras=()
for pair in redis:redis postgresql:postgres mysql:mysql; do
    if [[ "$urls" == *"${pair%%:*}"* ]]; then
        extras+=("${pair#*:}")
    fi
done
spec="."
if [ ${#extras[@]} -gt 0 ]; then
    spec=".[$(IFS=,; echo "${extras[*]}")]"
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e "$spec"
exec .venv/bin/python example_project/demo.py "$@"
