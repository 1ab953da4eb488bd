"""The load picture, timed.

``forecast --n N``: its computation (:mod:`celery_dbeat.core.load`) for N schedules, in-process,
no database: rows shaped as the store reads them, fed in its chunks.

``forecast-db --n N``: ``Schedules.load()`` end to end, on PostgreSQL (a database of the run's
own) and on SQLite (a file), with N schedules stored through ``Schedules.add_many`` and a past
day of ``--fires`` sent fires (one in fifty failed), as beat and the worker hook record them.

``forecast-bounded --n N``: ``Schedules.load()`` on a SQLite file of N schedules whose
``end_at`` falls inside the 24 hours (6 h ahead, each a second after the one before): half
``Cron('* * * * *')``, half ``Every(10)``, the rows that used to be counted one by one. The
time (median of ``--repeats``) and, in one more call, the peak of Python's allocations during
it (``tracemalloc``, which would slow the timed calls).

The mix: 30% hourly crons on a random minute, 10% on ``0 * * * *``, 10% ``*/5`` in
Europe/London, 10% daily crons in New York at 03:00 (one in ten with 10 minutes of jitter), 10%
on one of 96 quarter-hours a day, 10% midnight UTC (one in thirty with 5 minutes of jitter), 10%
intervals of 30 s, 60 s, 90 s, 5 min or 1 h, 10% daily intervals; anchors to the microsecond.
One schedule in eight names the calendar ``holidays``, which excludes the window's second day
(in Europe/London).
"""

from __future__ import annotations

import random
import statistics
import time
import tracemalloc
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa

from celery_dbeat.core.calendars import Calendar
from celery_dbeat.core.load import ROW_COLUMNS, LoadCounter
from celery_dbeat.store.load import CHUNK

START = datetime(2026, 1, 5, 12, 0, tzinfo=timezone.utc)
CALENDAR = "holidays"
_NONE = dict.fromkeys(ROW_COLUMNS)


def holidays(start: datetime) -> Calendar:
    """The mix's calendar: the day after ``start``'s, in London."""
    return Calendar.create(
        CALENDAR, timezone="Europe/London", dates=[(start + timedelta(days=1)).date()]
    )


def rows(n: int, start: datetime = START) -> list[Any]:
    rng = random.Random(20)
    out = []
    for i in range(n):
        values: dict[str, Any] = {**_NONE, "name": f"s{i}", "uid": f"{i:032x}", "run_count": 0}
        values["created_at"] = start - timedelta(days=3, microseconds=rng.randrange(86_400 * 10**6))
        kind, r = "cron", i % 10
        if r < 3:
            values["cron"] = f"{rng.randrange(60)} * * * *"
        elif r == 3:
            values["cron"] = "0 * * * *"
        elif r == 4:
            values.update(cron="*/5 * * * *", timezone="Europe/London")
        elif r == 5:
            values.update(cron="0 3 * * *", timezone="America/New_York")
            values["jitter"] = 600 if i % 100 == 5 else None
        elif r == 6:
            values["cron"] = f"{rng.randrange(0, 60, 15)} {rng.randrange(24)} * * *"
        elif r == 7:
            values.update(cron="0 0 * * *", jitter=300 if i % 300 == 7 else None)
        elif r == 8:
            kind, values["every"] = "interval", rng.choice([30, 60, 90, 300, 3600])
        else:
            kind, values["every"] = "interval", 86_400
        if i % 8 == 3:
            values["calendar"] = CALENDAR
        out.append(SimpleNamespace(**{**values, "kind": kind}))
    return out


def forecast(n: int, repeats: int) -> dict[str, Any]:
    data = rows(n)
    calendars = {CALENDAR: holidays(START)}
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        counter = LoadCounter(START, calendars=calendars)
        for k in range(0, n, CHUNK):
            counter.add(data[k : k + CHUNK])
        load = counter.result()
        times.append(time.perf_counter() - started)
    return {
        "scenario": "forecast",
        "n": n,
        "median_s": statistics.median(times),
        "best_s": min(times),
        "fires": load.total,
        "excluded": load.excluded,
        "herds": len(load.herds),
        "jitter_exact": load.jitter_exact,
    }


# End to end ------------------------------------------------------------------------------------


def _definitions(data: list[Any]) -> list[Any]:
    from celery_dbeat import Cron, Every
    from celery_dbeat.core.definitions import Definition

    out = []
    for r in data:
        if r.kind == "cron":
            spec: Any = Cron(r.cron, timezone=r.timezone or "UTC")
            start_at = None
        else:
            spec, start_at = Every(r.every), r.created_at  # the anchor, to the microsecond
        out.append(
            Definition.create(
                name=r.name,
                task="bench.task",
                schedule=spec,
                start_at=start_at,
                jitter=r.jitter,
                calendar=r.calendar,
            )
        )
    return out


def _history(engine: sa.Engine, start: datetime, fires: int) -> None:
    """``fires`` sent fires over the day before ``start``: a herd at each hour's :00 (a third of
    them), the rest spread; lag 5 ms to 2 s; one in fifty failed (run tracking)."""
    from celery_dbeat.store.models import F, S

    rng = random.Random(21)
    with engine.begin() as conn:
        ids = list(conn.execute(sa.select(S.c.id)).scalars())
    batch: list[dict[str, Any]] = []
    for i in range(fires):
        # Fire i: schedule i // 24, hour i % 24 (unique pairs, as the constraint wants).
        cycle, schedule = divmod(i // 24, len(ids))
        hour = start - timedelta(hours=1 + i % 24)
        second = cycle if i % 3 == 0 else rng.randrange(3600)
        slot = hour.replace(minute=0) + timedelta(seconds=second)
        sent = slot + timedelta(milliseconds=5 + rng.randrange(2000))
        failed = i % 50 == 0
        batch.append(
            {
                "schedule_id": ids[schedule],
                "slot": slot,
                "manual": False,
                "status": "sent",
                "slot_count": 1,
                "task_id": f"bench-{i}",
                "recorded_at": slot,
                "sent_at": sent,
                "attempts": 1,
                "run_status": "failed" if failed else "succeeded",
                "finished_at": sent + timedelta(seconds=1),
            }
        )
    batch.sort(key=lambda f: f["slot"])  # ids in slot order, as beats record them
    with engine.begin() as conn:
        for k in range(0, len(batch), 20_000):
            conn.execute(sa.insert(F), batch[k : k + 20_000])


def prepare(url: str, n: int, fires: int, start: datetime) -> float:
    """Store the mix and ``fires`` of history in the empty database ``url``; the seconds it
    took."""
    from celery_dbeat.api import Schedules
    from celery_dbeat.store import migrate

    began = time.perf_counter()
    with Schedules(url) as api:
        migrate(api.store.engine)
        calendar = holidays(start)
        api.calendars.add(CALENDAR, timezone=calendar.timezone, dates=calendar.dates)
        definitions = _definitions(rows(n, start))
        for k in range(0, n, 2000):
            api.add_many(definitions[k : k + 2000])
        _history(api.store.engine, start, fires)
        if api.store.engine.dialect.name == "postgresql":
            with api.store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM ANALYZE")
    return time.perf_counter() - began


def measure(url: str, repeats: int, start: datetime) -> tuple[list[float], Any]:
    """``Schedules.load(start=start)`` ``repeats`` times: the seconds of each, the last load."""
    from celery_dbeat.api import Schedules

    times = []
    load = None
    with Schedules(url) as api:
        for _ in range(repeats):
            began = time.perf_counter()
            load = api.load(start=start)
            times.append(time.perf_counter() - began)
    return times, load


def forecast_db(
    workdir: Path, n: int, repeats: int, *, fires: int, backends: tuple[str, ...]
) -> list[dict[str, Any]]:
    from bench.services import Run

    out = []
    for backend in backends:
        run = Run(workdir, "forecast") if backend == "postgresql" else None
        url = (
            run.database_url
            if run is not None
            else f"sqlite:///{workdir / f'forecast-{time.time_ns()}.sqlite3'}"
        )
        try:
            start = datetime.now(timezone.utc).replace(second=0, microsecond=0)
            setup = prepare(url, n, fires, start)
            times, load = measure(url, repeats, start)
            out.append(
                {
                    "scenario": "forecast-db",
                    "backend": backend,
                    "n": n,
                    "history_fires": fires,
                    "median_s": statistics.median(times),
                    "best_s": min(times),
                    "fires": load.total,
                    "excluded": getattr(load, "excluded", None),
                    "past_sent": load.past.sent,
                    "past_failed": load.past.failed,
                    "lag_p99_s": load.past.lag_p99,
                    "sampled": load.past.sampled,
                    "setup_s": setup,
                }
            )
            print(out[-1], flush=True)
        finally:
            if run is not None:
                run.close()
    return out


def forecast_bounded(workdir: Path, n: int, repeats: int) -> dict[str, Any]:
    from celery_dbeat import Cron, Every
    from celery_dbeat.api import Schedules
    from celery_dbeat.core.definitions import Definition
    from celery_dbeat.store import migrate

    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"bounded-{time.time_ns()}.sqlite3"
    url = f"sqlite:///{path}"
    start = datetime.now(timezone.utc).replace(second=0, microsecond=0)
    try:
        with Schedules(url) as api:
            migrate(api.store.engine)
            definitions = [
                Definition.create(
                    name=f"b{i}",
                    task="bench.task",
                    schedule=Cron("* * * * *") if i % 2 else Every(10),
                    end_at=start + timedelta(hours=6, seconds=i),
                )
                for i in range(n)
            ]
            for k in range(0, n, 2000):
                api.add_many(definitions[k : k + 2000])
        times, load = measure(url, repeats, start)
        with Schedules(url) as api:
            tracemalloc.start()
            api.load(start=start)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    finally:
        path.unlink(missing_ok=True)
    row = {
        "scenario": "forecast-bounded",
        "n": n,
        "median_s": statistics.median(times),
        "best_s": min(times),
        "peak_alloc_mb": peak / 2**20,
        "fires": load.total,
    }
    print(row, flush=True)
    return row


if __name__ == "__main__":
    print(forecast(100_000, 5))
