"""The Celery app every benchmark process loads (beats of each scheduler, the ceiling producer).

Configured only from environment variables set by :mod:`bench.services`:

``BENCH_BROKER_URL``, ``BENCH_PREFIX``, ``BENCH_QUEUE``
    The broker (Redis), the run's private key prefix (kombu's ``global_keyprefix``) and queue.
``BENCH_SCHEDULER``
    ``dbeat``, ``redbeat`` or ``django``: which scheduler's settings to apply.
``BENCH_DATABASE_URL``, ``BENCH_SETTINGS``
    celery-dbeat's database and extra ``dbeat_*`` settings (JSON).
``BENCH_BEAT_SCHEDULE``
    When set to N, ``beat_schedule`` holds N daily crontab entries (the slowstart scenario);
    with ``BENCH_BEAT_SCHEDULE_KIND=every``, N entries of ``timedelta(days=1)`` instead.
``BENCH_QUERY_FILE``
    When set, every SQL statement the process executes is counted (a SQLAlchemy event) and the
    count is written to this file twice a second: the idle scenario's queries per second.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import redis
from celery import Celery, signals

BROKER_URL = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/0")
PREFIX = os.environ.get("BENCH_PREFIX", "dbeat-bench:")
QUEUE = os.environ.get("BENCH_QUEUE", "bench")
SCHEDULER = os.environ.get("BENCH_SCHEDULER", "none")
TASK_NAME = "bench.noop"


def ready_key(prefix: str) -> str:
    """Redis list: one entry per beat that finished setting up its scheduler."""
    return f"{prefix}bench:ready"


app = Celery("dbeat_bench")
app.conf.update(
    broker_url=BROKER_URL,
    broker_transport_options={"global_keyprefix": PREFIX},
    broker_connection_retry_on_startup=True,
    task_default_queue=QUEUE,
    task_ignore_result=True,
    result_backend=None,
    timezone="UTC",
    enable_utc=True,
    beat_max_interval=5,
    beat_schedule={},
)

if SCHEDULER == "dbeat":
    app.conf.update(
        {
            "dbeat_database_url": os.environ["BENCH_DATABASE_URL"],
            "dbeat_redis_url": BROKER_URL,
            "dbeat_redis_key_prefix": f"{PREFIX}dbeat:",
            **json.loads(os.environ.get("BENCH_SETTINGS", "{}")),
        }
    )
    if os.environ.get("BENCH_BEAT_SCHEDULE"):
        from datetime import timedelta

        from celery.schedules import crontab

        every = os.environ.get("BENCH_BEAT_SCHEDULE_KIND") == "every"
        app.conf.beat_schedule = {
            f"e{i:06d}": {
                "task": TASK_NAME,
                "schedule": timedelta(days=1)
                if every
                else crontab(minute=str(i % 60), hour=str(i // 60 % 24)),
                "args": [i],
            }
            for i in range(int(os.environ["BENCH_BEAT_SCHEDULE"]))
        }
elif SCHEDULER == "redbeat":
    app.conf.update(redbeat_redis_url=BROKER_URL, redbeat_key_prefix=f"{PREFIX}redbeat:")
elif SCHEDULER == "django":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.django_settings")
    import django

    django.setup()


@app.task(name=TASK_NAME)
def noop(*args: Any, **kwargs: Any) -> None:
    """Never run: the benchmark counts messages on the broker, with no worker."""


@signals.beat_init.connect
def _beat_ready(**_: Any) -> None:
    # Sent once the scheduler exists (its setup_schedule has run).
    client = redis.Redis.from_url(BROKER_URL)
    client.rpush(ready_key(PREFIX), json.dumps({"pid": os.getpid(), "at": time.time()}))
    client.close()


def _count_queries(path: Path) -> None:
    import sqlalchemy as sa

    count = [0]

    @sa.event.listens_for(sa.engine.Engine, "before_cursor_execute")
    def _counted(*_: Any) -> None:
        count[0] += 1

    def write() -> None:
        while True:
            path.write_text(str(count[0]))
            time.sleep(0.5)

    threading.Thread(target=write, name="bench-query-count", daemon=True).start()


if os.environ.get("BENCH_QUERY_FILE"):
    _count_queries(Path(os.environ["BENCH_QUERY_FILE"]))
