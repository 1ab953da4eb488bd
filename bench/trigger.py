"""``trigger``: run-now latency, from ``Schedules.trigger`` returning to the message on the broker.

One real beat on N daily schedules (nothing due), asleep between ticks; ``--repeats`` triggers of
random schedules, one at a time, each timed until the queue holds one more message. Twice: with
``dbeat_redis_url`` (the write wakes the beat through Redis, as ``Schedules.from_app`` does) and
without it (database locks; the write wakes the beat through PostgreSQL's ``NOTIFY``).
"""

from __future__ import annotations

import random
import statistics
import time
from pathlib import Path
from typing import Any

from bench.app import TASK_NAME
from bench.services import Run
from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.core.definitions import Definition
from celery_dbeat.store import migrate


def trigger(workdir: Path, n: int, repeats: int, *, redis_locks: bool) -> dict[str, Any]:
    run = Run(workdir, f"trigger-{'redis' if redis_locks else 'database'}")
    try:
        settings: dict[str, Any] = {} if redis_locks else {"dbeat_redis_url": None}
        with Schedules(run.database_url) as api:
            migrate(api.store.engine)
            names = [f"s{i}" for i in range(n)]
            for start in range(0, n, 5000):
                api.add_many(
                    Definition.create(name=name, task=TASK_NAME, schedule=Every(86400))
                    for name in names[start : start + 5000]
                )
        run.start_beat(settings=settings)
        run.wait_ready(1)
        time.sleep(6)  # past the first ticks: the beat sleeps its full interval between polls
        latencies = []
        notify = run.redis_url if redis_locks else None
        with Schedules(
            run.database_url, notify=notify, redis_key_prefix=f"{run.prefix}dbeat:"
        ) as api:
            for i in range(repeats):
                time.sleep(random.uniform(0.5, 1.5))  # land anywhere in the beat's sleep
                api.trigger(random.choice(names))
                returned = time.time()
                seen = run.wait_length(i + 1, timeout=30, poll=0.002)
                if seen is None:
                    raise TimeoutError(f"trigger {i + 1} not on the broker after 30 s")
                latencies.append(seen - returned)
        row = {
            "scenario": "trigger",
            "n": n,
            "locks": "redis" if redis_locks else "database",
            "repeats": repeats,
            "p50_s": statistics.median(latencies),
            "max_s": max(latencies),
            "duplicates": run.queue_length() - repeats,
        }
    finally:
        run.close()
    print(row)
    return row
