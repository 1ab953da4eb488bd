"""The change-notification contract on every backend (Redis pub/sub, PostgreSQL's LISTEN/NOTIFY).

``notify/base.py``: a notification ends a beat's wait early, a burst is one wake-up, every write
of the management API notifies, and while the service is down the listener polls and says so
once and the notifier never raises. Then what one backend alone has: PostgreSQL's listener
listens again after losing its connection; other databases leave beats polling.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TypeVar

import pytest
import redis
import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.notify import (
    PG_CHANNEL,
    ChangeListener,
    ChangeNotifier,
    DatabaseListener,
    DatabaseNotifier,
    Listener,
    Notifier,
    channel_name,
)
from celery_dbeat.store import Store, migrate

#: Where nothing listens: connections are refused at once.
DOWN_REDIS = "redis://127.0.0.1:1/0"
DOWN_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:1/test"


@dataclass
class NotifyBackend:
    """How to make one backend's listeners (a beat's) and notifiers (a writer's)."""

    listener: Callable[[], Listener]
    notifier: Callable[[], Notifier]
    #: A listener and a notifier on a service that is down.
    down: tuple[Callable[[], Listener], Callable[[], Notifier]]
    #: Send this many notifications at once, as a burst of edits does.
    burst: Callable[[int], None]
    #: A management API whose writes notify this backend's listeners.
    api: Callable[[], Schedules]


T = TypeVar("T", Listener, Notifier)


@pytest.fixture(params=["redis", "postgresql"])
def notify_backend(request: pytest.FixtureRequest, sqlite_url: str) -> Iterator[NotifyBackend]:
    with ExitStack() as made:

        def closed_after(thing: T) -> T:
            made.callback(thing.close)
            return thing

        if request.param == "redis":
            url = request.getfixturevalue("redis_url")
            prefix = request.getfixturevalue("redis_prefix")

            def publish(count: int) -> None:
                client = redis.Redis.from_url(url)
                pipe = client.pipeline(transaction=False)
                for _ in range(count):
                    pipe.publish(channel_name(prefix), b"1")
                pipe.execute()
                client.close()

            def redis_api() -> Schedules:
                api = Schedules(sqlite_url, notify=url, redis_key_prefix=prefix)
                migrate(api.store.engine)
                return api

            yield NotifyBackend(
                listener=lambda: closed_after(ChangeListener(url, prefix=prefix)),
                notifier=lambda: closed_after(ChangeNotifier(url, prefix=prefix)),
                down=(
                    lambda: closed_after(ChangeListener(DOWN_REDIS)),
                    lambda: closed_after(ChangeNotifier(DOWN_REDIS)),
                ),
                burst=publish,
                api=redis_api,
            )
        else:
            store: Store = request.getfixturevalue("postgres_store")
            down = sa.create_engine(DOWN_POSTGRES)
            made.callback(down.dispose)

            def notify(count: int) -> None:
                # Distinct payloads: PostgreSQL folds identical notifications of one transaction
                # into one.
                with store.engine.begin() as conn:
                    conn.execute(
                        sa.text(
                            "SELECT pg_notify(:channel, n::text) FROM generate_series(1, :n) n"
                        ),
                        {"channel": PG_CHANNEL, "n": count},
                    )

            yield NotifyBackend(
                listener=lambda: closed_after(DatabaseListener(store.engine)),
                notifier=lambda: closed_after(DatabaseNotifier(store.engine)),
                down=(
                    lambda: closed_after(DatabaseListener(down)),
                    lambda: closed_after(DatabaseNotifier(down)),
                ),
                burst=notify,
                api=lambda: Schedules(store),
            )


@pytest.fixture
def listener(notify_backend: NotifyBackend) -> Listener:
    """A beat's listener on each backend, already listening."""
    listener = notify_backend.listener()
    assert listener.listen() is True
    assert listener.wait(0.01) is False
    return listener


def test_a_notification_ends_the_wait_early(
    listener: Listener, notify_backend: NotifyBackend
) -> None:
    timer = threading.Timer(0.2, notify_backend.notifier().notify)
    timer.start()
    try:
        assert listener.wait(30) is True
    finally:
        timer.cancel()
    assert listener.wait(0.2) is False


def test_a_burst_of_ten_thousand_notifications_wakes_a_beat_once(
    listener: Listener, notify_backend: NotifyBackend
) -> None:
    notify_backend.burst(10_000)
    assert listener.wait(5) is True
    assert listener.wait(0.3) is False, "the whole burst was drained by one wake-up"


def test_every_api_write_notifies_the_beats(
    listener: Listener, notify_backend: NotifyBackend
) -> None:
    with notify_backend.api() as api:
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
            assert listener.wait(5) is True


def test_without_the_service_the_listener_polls_and_says_so_once(
    notify_backend: NotifyBackend, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="celery_dbeat")
    make_listener, make_notifier = notify_backend.down
    listener = make_listener()

    assert listener.listen() is False
    for _ in range(3):
        assert listener.wait(0.05) is False
    assert sum("unavailable" in r.getMessage() for r in caplog.records) == 1
    make_notifier().notify()  # never raises


@pytest.mark.parametrize("notify_backend", ["postgresql"], indirect=True)
def test_a_lost_listen_connection_falls_back_to_polling_then_listens_again(
    listener: Listener, notify_backend: NotifyBackend, caplog: pytest.LogCaptureFixture
) -> None:
    assert isinstance(listener, DatabaseListener)
    caplog.set_level(logging.WARNING, logger="celery_dbeat")
    with listener.engine.connect() as conn:
        conn.execute(
            sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE query LIKE 'LISTEN%' AND datname = current_database()"
            )
        )
        conn.commit()

    assert listener.wait(0.5) is False  # the dead connection: polling from now on
    assert listener.wait(0.05) is False  # (no reconnection attempt yet)
    # Instead of waiting the 30 s before the next attempt:
    listener._database.retry_at = 0.0
    assert listener.wait(0.05) is False  # LISTENs again
    notify_backend.notifier().notify()
    woken = listener.wait(5)

    messages = [r.getMessage() for r in caplog.records]
    assert woken is True
    assert sum("unavailable" in m for m in messages) == 1
    assert any("resumed" in m for m in messages)


@pytest.mark.parametrize("database_url", ["sqlite", "mysql"], indirect=True)
def test_other_databases_leave_writers_without_a_notifier(database_url: str) -> None:
    with Schedules(database_url) as api:
        assert api.notifier is None
