"""Storing N schedules for each scheduler, and arming a herd (every schedule due at one slot).

celery-dbeat's schedules go in through the public API (``Schedules.add_many``, in batches, timed).
A herd is armed with one ``UPDATE ... SET next_run_at = slot``: the schedules are daily
intervals, so after the herd each is back on its grid a day later and the set can be armed again
for the next repetition without reloading. RedBeat's entries are written as RedBeat writes them
(definition, meta, the due-time sorted set), in pipelines; django-celery-beat's rows with the ORM's
``bulk_create`` in a subprocess (Django is configured once per process).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import sqlalchemy as sa

from bench.app import TASK_NAME
from bench.services import ROOT, Run
from celery_dbeat.store.models import S

UTC = timezone.utc
DAY = 86400


def load_dbeat(run: Run, n: int, *, spread: bool = False, batch: int = 2000) -> float:
    """``n`` schedules through ``Schedules.add_many``; returns the seconds it took.

    ``spread``: ``Cron('* * * * * s')`` with ``s = i % 60`` (n/60 fires every second), else
    daily intervals that only fire when armed.
    """
    from celery_dbeat import Cron, Every
    from celery_dbeat.api import Schedules
    from celery_dbeat.core.definitions import Definition
    from celery_dbeat.store import migrate

    started = time.perf_counter()
    with Schedules(run.database_url) as api:
        migrate(api.store.engine)
        for first in range(0, n, batch):
            definitions = [
                Definition.create(
                    name=f"s{i:06d}",
                    task=TASK_NAME,
                    schedule=Cron(f"* * * * * {i % 60}") if spread else Every(DAY),
                    args=[f"s{i:06d}"],
                )
                for i in range(first, min(first + batch, n))
            ]
            api.add_many(definitions)
    return time.perf_counter() - started


def arm_dbeat(run: Run, slot: float, spread: int = 0) -> None:
    """Every schedule due at ``slot``; with ``spread``, at ``slot`` plus (its id modulo
    ``spread``) seconds instead."""
    at = datetime.fromtimestamp(slot, UTC)
    with run.engine.begin() as conn:
        if spread > 1:  # the memory scenario's passes, on PostgreSQL only
            conn.execute(
                sa.text(
                    "UPDATE dbeat_schedules"
                    " SET next_run_at = :at + (id % :spread) * interval '1 second'"
                ),
                {"at": at, "spread": spread},
            )
        else:
            conn.execute(sa.update(S).values(next_run_at=at))
    # The bulk update leaves a dead copy of every row; vacuum as autovacuum soon would.
    analyze = {"postgresql": "VACUUM ANALYZE", "mysql": "ANALYZE TABLE", "sqlite": "ANALYZE"}
    with run.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql(f"{analyze[run.dialect]} dbeat_schedules")


# RedBeat ---------------------------------------------------------------------------------------


def _redbeat_app(run: Run) -> Any:
    from celery import Celery
    from redbeat.schedulers import ensure_conf  # type: ignore[import-untyped]

    app = Celery("bench-loader")
    app.conf.update(
        broker_url=run.redis_url,
        redbeat_redis_url=run.redis_url,
        redbeat_key_prefix=f"{run.prefix}redbeat:",
        timezone="UTC",
        enable_utc=True,
    )
    ensure_conf(app)
    return app


def load_redbeat(run: Run, n: int, batch: int = 2000) -> float:
    from celery.schedules import schedule
    from redbeat.decoder import RedBeatJSONEncoder  # type: ignore[import-untyped]

    app = _redbeat_app(run)
    conf = app.redbeat_conf
    started = time.perf_counter()
    every = schedule(run_every=timedelta(seconds=DAY), app=app)
    far = time.time() + DAY
    meta = json.dumps({"last_run_at": datetime.now(UTC)}, cls=RedBeatJSONEncoder)
    for first in range(0, n, batch):
        pipe = run.redis.pipeline(transaction=False)
        for i in range(first, min(first + batch, n)):
            name = f"s{i:06d}"
            definition = {
                "name": name,
                "task": TASK_NAME,
                "args": [name],
                "kwargs": {},
                "options": {},
                "schedule": every,
                "enabled": True,
            }
            key = f"{conf.key_prefix}{name}"
            pipe.hset(key, "definition", json.dumps(definition, cls=RedBeatJSONEncoder))
            pipe.hset(key, "meta", meta)
            pipe.zadd(conf.schedule_key, {key: far})
        pipe.execute()
    return time.perf_counter() - started


def arm_redbeat(run: Run, n: int, slot: float) -> None:
    """As ``entry.reschedule(last_run_at=slot - 1 day)`` does for each entry, pipelined."""
    from redbeat.decoder import RedBeatJSONEncoder

    app = _redbeat_app(run)
    conf = app.redbeat_conf
    last = datetime.fromtimestamp(slot - DAY, UTC)
    meta = json.dumps({"last_run_at": last}, cls=RedBeatJSONEncoder)
    for first in range(0, n, 5000):
        pipe = run.redis.pipeline(transaction=False)
        for i in range(first, min(first + 5000, n)):
            key = f"{conf.key_prefix}s{i:06d}"
            pipe.hset(key, "meta", meta)
            pipe.zadd(conf.schedule_key, {key: slot})
        pipe.execute()


# django-celery-beat ----------------------------------------------------------------------------


def load_django(run: Run, n: int, slot: float) -> float:
    """Migrate and store ``n`` daily intervals due at ``slot`` (in a subprocess)."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "bench.loaders", str(n), str(slot)],
        cwd=ROOT,
        env=run.env("django"),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def _django_main(n: int, slot: float) -> None:
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.django_settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django_celery_beat.models import IntervalSchedule, PeriodicTask  # type: ignore[import-untyped]

    call_command("migrate", verbosity=0)
    interval, _ = IntervalSchedule.objects.get_or_create(every=DAY, period=IntervalSchedule.SECONDS)
    last = datetime.fromtimestamp(slot - DAY, UTC)
    PeriodicTask.objects.bulk_create(
        [
            PeriodicTask(
                name=f"s{i:06d}",
                task=TASK_NAME,
                interval=interval,
                args=json.dumps([f"s{i:06d}"]),
                last_run_at=last,
            )
            for i in range(n)
        ],
        batch_size=2000,
    )


if __name__ == "__main__":
    _django_main(int(sys.argv[1]), float(sys.argv[2]))
