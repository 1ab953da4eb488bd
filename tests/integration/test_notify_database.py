"""Without Redis, PostgreSQL's NOTIFY/LISTEN wakes beats; other databases leave them polling."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.notify import PG_CHANNEL, DatabaseListener, DatabaseNotifier
from celery_dbeat.store import migrate
from celery_dbeat.store.queries import Store
from tests.services import private_database


@pytest.fixture
def postgres_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    with private_database("postgresql", tmp_path_factory) as url:
        store = Store(url)
        migrate(store.engine)
        yield store
        store.close()


@pytest.fixture
def listener(postgres_store: Store) -> Iterator[DatabaseListener]:
    listener = DatabaseListener(postgres_store.engine)
    assert listener.wait(0.01) is False  # LISTENs
    yield listener
    listener.close()


def test_a_notify_ends_the_wait_early(listener: DatabaseListener, postgres_store: Store) -> None:
    timer = threading.Timer(0.2, DatabaseNotifier(postgres_store.engine).notify)
    timer.start()
    try:
        assert listener.wait(30) is True
    finally:
        timer.cancel()
    assert listener.wait(0.2) is False


def test_a_burst_of_notifications_wakes_a_beat_once(
    listener: DatabaseListener, postgres_store: Store
) -> None:
    # Distinct payloads: PostgreSQL folds identical notifications of one transaction into one.
    with postgres_store.engine.begin() as conn:
        for n in range(1000):
            conn.execute(sa.select(sa.func.pg_notify(PG_CHANNEL, str(n))))
    assert listener.wait(5) is True
    assert listener.wait(0.3) is False, "the whole burst was drained by one wake-up"


def test_every_api_write_notifies_the_beats_without_redis(
    listener: DatabaseListener, postgres_store: Store
) -> None:
    with Schedules(postgres_store) as schedules:
        writes = [
            lambda: schedules.add("n", "t.n", Every(60)),
            lambda: schedules.update("n", args=[1]),
            lambda: schedules.pause("n"),
            lambda: schedules.resume("n"),
            lambda: schedules.trigger("n"),
            lambda: schedules.remove("n"),
        ]
        for write in writes:
            write()
            assert listener.wait(5) is True


def test_a_lost_listen_connection_falls_back_to_polling_then_listens_again(
    listener: DatabaseListener, postgres_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="celery_dbeat")
    with postgres_store.engine.connect() as conn:
        conn.execute(
            sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE query LIKE 'LISTEN%' AND datname = current_database()"
            )
        )
        conn.commit()

    assert listener.wait(0.5) is False  # the dead connection: polling from now on
    assert listener.wait(0.05) is False  # (no reconnection attempt yet)
    listener._database.retry_at = 0.0  # instead of waiting the 30 s before the next attempt
    assert listener.wait(0.05) is False  # LISTENs again
    DatabaseNotifier(postgres_store.engine).notify()
    woken = listener.wait(5)

    messages = [r.getMessage() for r in caplog.records]
    assert woken is True
    assert sum("unavailable" in m for m in messages) == 1
    assert any("resumed" in m for m in messages)


@pytest.mark.parametrize("database_url", ["sqlite", "mysql"], indirect=True)
def test_other_databases_leave_writers_without_a_notifier(database_url: str) -> None:
    with Schedules(database_url) as schedules:
        assert schedules.notifier is None
