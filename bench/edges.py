"""The edges an operator meets rarely, measured in-process on PostgreSQL (no beat processes).

* ``sync``: a ``beat_schedule`` of N interval entries synced as beat does at start-up: first
  (every row created), again unchanged (what every later start does), then with half removed.
* ``catchup``: N schedules (half per-second crons, half per-minute intervals) 30 days behind,
  one tick of a :class:`~celery_dbeat.beat.ticker.Ticker` under each misfire policy, publishing to a
  stand-in: how long the tick takes and how many fires it sends.
* ``backfill``: an every-second cron in Europe/London: how long a backfill of ten years takes to
  be refused (the default limit), how long a backfill of a day (86,400 slots) takes and how long
  it holds the schedule's row; then N schedules with 10 sent fires each pruned by age, with the
  prune's ``pruned_until`` and as a plain delete (what the prune cost before it kept the mark).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench.load import backdate, outage_mix
from bench.services import Run
from celery_dbeat import Cron, Every
from celery_dbeat.api import Schedules
from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import FixedClock
from celery_dbeat.config import Settings
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.errors import ValidationError
from celery_dbeat.locks import DatabaseLock
from celery_dbeat.store import Store, migrate
from celery_dbeat.store.models import F, S
from celery_dbeat.store.pruning import delete_in_batches
from celery_dbeat.store.runs import prune_history
from celery_dbeat.store.sync import sync_config

NOW = datetime(2026, 1, 31, tzinfo=timezone.utc)
DAY, MINUTE, SECOND = timedelta(days=1), timedelta(minutes=1), timedelta(seconds=1)


def _timed(call: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def sync(workdir: Path, n: int) -> dict[str, Any]:
    run = Run(workdir, "sync")
    try:
        store = Store(run.database_url, server_clock=False)
        migrate(store.engine)
        entries = [Definition.create(name=f"e{i}", task="t", schedule=Every(60)) for i in range(n)]
        first, _ = _timed(lambda: sync_config(store, entries, NOW))
        again, report = _timed(lambda: sync_config(store, entries, NOW + timedelta(minutes=1)))
        assert len(report.unchanged) == n
        half, report = _timed(lambda: sync_config(store, entries[: n // 2], NOW))
        assert len(report.disabled) == n - n // 2
        store.close()
        row = {"scenario": "sync", "n": n, "first_s": first, "again_s": again, "half_s": half}
    finally:
        run.close()
    print(row)
    return row


def catchup(workdir: Path, n: int, policy: str) -> dict[str, Any]:
    run = Run(workdir, f"catchup-{policy}")
    try:
        store = Store(run.database_url, server_clock=False)
        migrate(store.engine)
        entries = [
            Definition.create(
                name=f"s{i}",
                task="t",
                schedule=Cron("* * * * * *") if i % 2 else Every(60),
                misfire_policy=policy,
            )
            for i in range(n)
        ]
        sync_config(store, entries, NOW - timedelta(days=30))
        sent: list[Any] = []
        settings = Settings.from_mapping({"instance_name": "bench", "misfire_tolerance": 0})
        ticker = Ticker(
            store, DatabaseLock(), lambda r, *_: sent.append(r), settings, FixedClock(NOW)
        )
        tick_s, _ = _timed(ticker.tick)
        store.close()
        row = {
            "scenario": "catchup",
            "n": n,
            "policy": policy,
            "tick_s": tick_s,
            "fires": len(sent),
        }
    finally:
        run.close()
    print(row)
    return row


def _row_locked(store: Store) -> list[float]:
    """Seconds from each lock of a schedule row (``FOR UPDATE`` on dbeat_schedules) to the
    commit of its transaction, on ``store``'s engine."""
    held: list[float] = []
    since: dict[int, float] = {}

    @sa.event.listens_for(store.engine, "before_cursor_execute")
    def _locking(conn: Any, _c: Any, statement: str, *_: Any) -> None:
        if "FROM dbeat_schedules" in statement and "FOR UPDATE" in statement:
            since.setdefault(id(conn), time.perf_counter())

    @sa.event.listens_for(store.engine, "commit")
    def _committed(conn: Any) -> None:
        started = since.pop(id(conn), None)
        if started is not None:
            held.append(time.perf_counter() - started)

    return held


def backfill(workdir: Path, n: int) -> dict[str, Any]:
    run = Run(workdir, "backfill")
    try:
        store = Store(run.database_url, server_clock=False)
        migrate(store.engine)
        api = Schedules(store, clock=FixedClock(NOW))
        api.add("s", "t", Cron("* * * * * *", timezone="Europe/London"), start_at=NOW - 4000 * DAY)
        started = time.perf_counter()
        try:
            api.backfill("s", NOW - 3650 * DAY, NOW)
            raise AssertionError("ten years of seconds were not refused")
        except ValidationError:
            refuse_s = time.perf_counter() - started
        held = _row_locked(store)
        day_s, report = _timed(lambda: api.backfill("s", NOW - DAY + SECOND, NOW, limit=100_000))
        assert len(report.queued) == 86_400, report.summary()
        pruned_s, plain_s = _prune(store, api, n)
        store.close()
        row = {
            "scenario": "backfill",
            "n": n,
            "refuse_s": refuse_s,
            "day_s": day_s,
            "day_locked_s": max(held),
            "prune_s": pruned_s,
            "prune_plain_s": plain_s,
        }
    finally:
        run.close()
    print(row)
    return row


def _prune(store: Store, api: Schedules, n: int) -> tuple[float, float]:
    """Seconds to prune ``n`` schedules' 10 sent fires each, with the mark and as before."""
    old = sa.and_(F.c.slot < NOW - 30 * DAY, F.c.status == "sent")
    timings: list[float] = []
    for marked in (True, False):
        with store.engine.begin() as conn:
            conn.execute(sa.delete(F))
            conn.execute(sa.delete(S).where(S.c.name.like("p%")))
        api.add_many(
            Definition.create(name=f"p{i}", task="t", schedule=Every(60)) for i in range(n)
        )
        with store.engine.begin() as conn:
            ids = conn.execute(sa.select(S.c.id).where(S.c.name.like("p%"))).scalars().all()
            fires = [
                {"schedule_id": i, "slot": NOW - DAY * 40 - k * MINUTE, "manual": False,
                 "status": "sent", "slot_count": 1, "recorded_at": NOW, "attempts": 0}
                for i in ids for k in range(10)
            ]  # fmt: skip
            for start in range(0, len(fires), 10_000):
                conn.execute(sa.insert(F), fires[start : start + 10_000])
        started = time.perf_counter()
        if marked:
            deleted = prune_history(store.engine, NOW - 30 * DAY, budget=3600)
        else:
            deleted = delete_in_batches(store.engine, F, old, F.c.slot, batch=1000, budget=3600)
        timings.append(time.perf_counter() - started)
        assert deleted == 10 * n, (marked, deleted)
    return timings[0], timings[1]


def firstpass(workdir: Path) -> dict[str, Any]:
    run = Run(workdir, "firstpass")
    try:
        store = Store(run.database_url, server_clock=False)
        migrate(store.engine)
        created = NOW - timedelta(days=7, hours=1)
        with Schedules(store, clock=FixedClock(created)) as api:
            definitions = outage_mix(created)
            for first in range(0, len(definitions), 2000):
                api.add_many(definitions[first : first + 2000])
        # Created an hour before the outage; every next slot moved back 7 days, to just after
        # NOW - 7 days.
        backdate(store.engine, timedelta(days=7) - (NOW - created))
        started = time.perf_counter()
        published: list[tuple[float, datetime]] = []
        settings = Settings.from_mapping({"instance_name": "bench"})
        ticker = Ticker(
            store,
            DatabaseLock(),
            lambda r, *_: published.append((time.perf_counter() - started, r.slot)),
            settings,
            FixedClock(NOW),
        )
        started = time.perf_counter()
        ticker.fire_due()
        took = time.perf_counter() - started
        with store.engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT status, count(*), sum(slot_count) FROM dbeat_fires GROUP BY status")
            ).all()
        store.close()
        on_time = [at for at, slot in published if slot >= NOW - settings.misfire_tolerance]
        row = {
            "scenario": "firstpass",
            "n": len(definitions),
            "first_pass_s": took,
            "last_on_time_published_s": max(on_time, default=None),
            "published": len(published),
            "rows": {status: [int(count), int(slots)] for status, count, slots in rows},
        }
    finally:
        run.close()
    print(row)
    return row
