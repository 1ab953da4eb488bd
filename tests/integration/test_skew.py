"""Beats whose clocks disagree by more than a lease still publish each fire once.

A schedule's first slot is computed from when it is written, and a host's clock ahead by a few
seconds would skip the first slots of a schedule that starts now (found by the chaos suite: the
beat 5 s ahead synced ``beat_schedule`` first). Writes are therefore timed on the database
server's clock, which every host shares.

A lease (how long a recorded fire is left to the beat that recorded it) is written by one beat
and compared by another. On the beats' own clocks, a beat 5 s ahead sees a 3 s lease of a beat
that is publishing right now as already over, takes the fire over and publishes it a second time
(found by the chaos suite). Leases are therefore taken and compared on the database server's
clock (PostgreSQL, MariaDB; SQLite's beats share a host and its clock).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat import Cron, Every
from celery_dbeat.api import Schedules
from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import FixedClock, SystemClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.misfire import MisfireRules
from celery_dbeat.core.planning import plan
from celery_dbeat.locks import DatabaseLock
from celery_dbeat.store import Store, migrate
from celery_dbeat.store.models import S
from celery_dbeat.store.sync import sync_config
from tests.integration.conftest import settings

SERVERS = [pytest.param("postgresql", id="postgresql"), pytest.param("mysql", id="mysql")]


#: The beats' settings here: short leases and ticks, so a skew of seconds matters.
SHORT_LEASES = {"lock_ttl": 3, "max_interval": 1}


@pytest.fixture
def due_now(database_url: str) -> tuple[str, datetime]:
    """A database with one schedule due now (real time: the server's clock is real)."""
    now = datetime.now(timezone.utc)
    store = Store(database_url, server_clock=False)  # created on `now - 10 s`, so due now
    migrate(store.engine)
    every = Definition.create(name="s", task="t.s", schedule=Every(10))
    sync_config(store, [every], now - timedelta(seconds=10))
    store.close()
    return database_url, now


@pytest.mark.parametrize("database_url", SERVERS, indirect=True)
@pytest.mark.parametrize(
    ("server_clock", "publishes"),
    [
        pytest.param(True, ["A"], id="leases-on-the-database-clock"),
        # The control: on the beats' clocks the fire is published twice (same task id).
        pytest.param(False, ["B", "A"], id="leases-on-the-beats-clocks"),
    ],
)
def test_a_beat_five_seconds_ahead_does_not_take_over_a_fire_being_published(
    due_now: tuple[str, datetime], server_clock: bool, publishes: list[str]
) -> None:
    url, now = due_now
    store = Store(url, server_clock=server_clock)
    published: list[tuple[str, str]] = []

    def publish_b(request: Any, *_: Any) -> None:
        published.append(("B", request.task_id))

    beat_b = Ticker(
        store,
        DatabaseLock(),
        publish_b,
        settings("B", **SHORT_LEASES),
        FixedClock(now + timedelta(seconds=5)),
    )

    def publish_a(request: Any, *_: Any) -> None:
        beat_b.recover_pending()  # B's periodic step runs while A is publishing
        published.append(("A", request.task_id))

    beat_a = Ticker(
        store, DatabaseLock(), publish_a, settings("A", **SHORT_LEASES), FixedClock(now)
    )
    try:
        beat_a.fire_due()
    finally:
        store.close()

    assert [beat for beat, _ in published] == publishes
    assert len({task_id for _, task_id in published}) == 1


@pytest.mark.parametrize("database_url", SERVERS, indirect=True)
def test_a_fire_whose_beat_died_is_taken_over_once_its_lease_is_over_on_the_database_clock(
    due_now: tuple[str, datetime],
) -> None:
    url, now = due_now
    store = Store(url)
    published: list[str] = []
    try:
        # B is a minute behind: on its own clock the lease below would end a minute late.
        behind = FixedClock(now - timedelta(seconds=60))
        beat_b = Ticker(
            store,
            DatabaseLock(),
            lambda r, *_: published.append(r.task_id),
            settings("B", **SHORT_LEASES),
            behind,
        )
        # Beat A records the fire with a 5 s lease and dies before publishing it.
        with store.claim_due(now, 10, "A") as batch:
            (transition,) = [plan(row, now, MisfireRules()) for row in batch.schedules]
            batch.record([transition], batch.lease_until(now, timedelta(seconds=5)))

        assert beat_b.recover_pending() == 0  # the lease is still running
        # Taken over once the lease is over on the database's clock: polled, bounded well
        # before B's own clock would say so.
        deadline = time.monotonic() + 40
        while not beat_b.recover_pending():
            assert time.monotonic() < deadline, "not taken over 40 s after a 5 s lease"
            time.sleep(0.1)
    finally:
        store.close()
    assert len(published) == 1


def _start_soon(now: datetime) -> tuple[datetime, Definition]:
    """A schedule firing every second from 3 s after ``now`` (a whole second)."""
    start = now.replace(microsecond=0) + timedelta(seconds=3)
    every_second = Cron("* * * * * *")
    return start, Definition.create(name="s", task="t.s", schedule=every_second, start_at=start)


@pytest.mark.parametrize("database_url", SERVERS, indirect=True)
@pytest.mark.parametrize(
    ("server_clock", "skipped"),
    [
        pytest.param(True, 0, id="written-on-the-database-clock"),
        # The control: on a clock 5 s ahead, the slots up to 2 s after start_at look past.
        pytest.param(False, 3, id="written-on-the-beats-clock"),
    ],
)
def test_a_beat_five_seconds_ahead_syncing_beat_schedule_keeps_the_first_slots(
    database_url: str, server_clock: bool, skipped: int
) -> None:
    store = Store(database_url, server_clock=server_clock)
    try:
        migrate(store.engine)  # before the clock is read: slow on a busy host (MariaDB's DDL)
        now = datetime.now(timezone.utc)
        start, definition = _start_soon(now)
        sync_config(store, [definition], now + timedelta(seconds=5))
        with store.engine.connect() as conn:
            first = conn.execute(sa.select(S.c.next_run_at)).scalar_one()
    finally:
        store.close()
    assert first.astimezone(timezone.utc) == start + timedelta(seconds=skipped)


@pytest.mark.parametrize("database_url", SERVERS, indirect=True)
def test_an_api_writer_five_seconds_ahead_keeps_the_first_slots_and_triggers_at_once(
    database_url: str,
) -> None:
    store = Store(database_url)
    migrate(store.engine)  # before the clock is read: slow on a busy host (MariaDB's DDL)
    start, definition = _start_soon(datetime.now(timezone.utc))
    api = Schedules(store, clock=SystemClock(timedelta(seconds=5)))  # this host, 5 s ahead
    try:
        assert api.create(definition).next_run_at == start
        task_id = api.trigger("s")
        # A beat on the database clock may take the manual fire now, not 5 s from now.
        (request,) = store.claim_stale_pending(
            datetime.now(timezone.utc), datetime.now(timezone.utc), 10
        )
        assert request.task_id == task_id
    finally:
        api.close()
        store.close()
