"""Without Redis, PostgreSQL's NOTIFY/LISTEN wakes beats; other databases leave them polling."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

import pytest
import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.beat.notify import PG_CHANNEL, DatabaseListener, DatabaseNotifier
from celery_dbeat.store import Store


@pytest.fixture
def postgres_listener(postgres_store: Store) -> Iterator[DatabaseListener]:
    """A beat's LISTEN on ``postgres_store`` (tests/conftest.py), already listening."""
    listener = DatabaseListener(postgres_store.engine)
    assert listener.wait(0.01) is False  # LISTENs
    yield listener
    listener.close()


def test_a_notify_ends_the_wait_early(
    postgres_listener: DatabaseListener, postgres_store: Store
) -> None:
    timer = threading.Timer(0.2, DatabaseNotifier(postgres_store.engine).notify)
    timer.start()
    try:
        assert postgres_listener.wait(30) is True
    finally:
        timer.cancel()
    assert postgres_listener.wait(0.2) is False


def test_a_burst_of_notifications_wakes_a_beat_once(
    postgres_listener: DatabaseListener, postgres_store: Store
) -> None:
    # Distinct payloads: PostgreSQL folds identical notifications of one transaction into one.
    with postgres_store.engine.begin() as conn:
        for n in range(1000):
            conn.execute(sa.select(sa.func.pg_notify(PG_CHANNEL, str(n))))
    assert postgres_listener.wait(5) is True
    assert postgres_listener.wait(0.3) is False, "the whole burst was drained by one wake-up"


def test_every_api_write_notifies_the_beats_without_redis(
    postgres_listener: DatabaseListener, postgres_store: Store
) -> None:
    with Schedules(postgres_store) as api:
        writes: list[Callable[[], object]] = [
            lambda: api.add("n", "t.n", Every(60)),
            lambda: api.update("n", args=[1]),
            lambda: api.pause("n"),
            lambda: api.resume("n"),
            lambda: api.trigger("n"),
            lambda: api.remove("n"),
        ]
        for write in writes:
            write()
            assert postgres_listener.wait(5) is True


def test_a_lost_listen_connection_falls_back_to_polling_then_listens_again(
    postgres_listener: DatabaseListener, postgres_store: Store, caplog: pytest.LogCaptureFixture
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

    assert postgres_listener.wait(0.5) is False  # the dead connection: polling from now on
    assert postgres_listener.wait(0.05) is False  # (no reconnection attempt yet)
    # Instead of waiting the 30 s before the next attempt:
    postgres_listener._database.retry_at = 0.0
    assert postgres_listener.wait(0.05) is False  # LISTENs again
    DatabaseNotifier(postgres_store.engine).notify()
    woken = postgres_listener.wait(5)

    messages = [r.getMessage() for r in caplog.records]
    assert woken is True
    assert sum("unavailable" in m for m in messages) == 1
    assert any("resumed" in m for m in messages)


@pytest.mark.parametrize("database_url", ["sqlite", "mysql"], indirect=True)
def test_other_databases_leave_writers_without_a_notifier(database_url: str) -> None:
    with Schedules(database_url) as api:
        assert api.notifier is None
