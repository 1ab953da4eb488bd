"""Beats whose clocks disagree by more than a lease still publish each fire once.

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

from celery_dbeat import Every
from celery_dbeat.clock import FixedClock
from celery_dbeat.config import Settings
from celery_dbeat.definitions import Definition
from celery_dbeat.locks import DatabaseLock
from celery_dbeat.misfire import MisfireRules
from celery_dbeat.planning import plan
from celery_dbeat.store import migrate
from celery_dbeat.store.manage import sync_config
from celery_dbeat.store.queries import Store
from celery_dbeat.ticker import Ticker

SERVERS = [pytest.param("postgresql", id="postgresql"), pytest.param("mysql", id="mysql")]


def settings(name: str) -> Settings:
    return Settings.from_mapping({"instance_name": name, "lock_ttl": 3, "max_interval": 1})


@pytest.fixture
def due_now(database_url: str) -> tuple[str, datetime]:
    """A database with one schedule due now (real time: the server's clock is real)."""
    now = datetime.now(timezone.utc)
    store = Store(database_url)
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
        store, DatabaseLock(), publish_b, settings("B"), FixedClock(now + timedelta(seconds=5))
    )

    def publish_a(request: Any, *_: Any) -> None:
        beat_b.recover_pending()  # B's periodic step runs while A is publishing
        published.append(("A", request.task_id))

    beat_a = Ticker(store, DatabaseLock(), publish_a, settings("A"), FixedClock(now))
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
        # Beat A records the fire with a 1 s lease and dies before publishing it.
        with store.claim_due(now, 10, "A") as batch:
            (transition,) = [plan(row, now, MisfireRules()) for row in batch.schedules]
            batch.record([transition], batch.lease_until(now, timedelta(seconds=1)))

        # B is 5 s behind: on its own clock the lease would be over only 6 s from now.
        behind = FixedClock(now - timedelta(seconds=5))
        beat_b = Ticker(
            store, DatabaseLock(), lambda r, *_: published.append(r.task_id), settings("B"), behind
        )
        assert beat_b.recover_pending() == 0  # the lease is still running
        time.sleep(1.2)
        assert beat_b.recover_pending() == 1
    finally:
        store.close()
    assert len(published) == 1
