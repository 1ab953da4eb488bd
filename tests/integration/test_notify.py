"""Change notifications wake beats at once; without Redis they fall back to polling."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

import pytest
import redis

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.beat.notify import ChangeListener, ChangeNotifier
from celery_dbeat.store import migrate


@pytest.fixture
def redis_listener(redis_url: str, redis_prefix: str) -> Iterator[ChangeListener]:
    """A beat's subscription to the change channel under ``redis_prefix``, already subscribed."""
    listener = ChangeListener(redis_url, prefix=redis_prefix)
    assert listener.wait(0.01) is False  # subscribes
    yield listener
    listener.close()


def test_a_notification_ends_the_wait_early(
    redis_listener: ChangeListener, redis_url: str, redis_prefix: str
) -> None:
    notifier = ChangeNotifier(redis_url, prefix=redis_prefix)
    timer = threading.Timer(0.2, notifier.notify)
    timer.start()
    try:
        assert redis_listener.wait(30) is True
    finally:
        timer.cancel()
        notifier.close()


def test_a_burst_of_ten_thousand_notifications_wakes_a_beat_once(
    redis_listener: ChangeListener, redis_url: str, redis_prefix: str
) -> None:
    client = redis.Redis.from_url(redis_url)
    pipe = client.pipeline(transaction=False)
    for _ in range(10_000):
        pipe.publish(f"{redis_prefix}changes", b"1")
    pipe.execute()
    client.close()
    assert redis_listener.wait(5) is True
    assert redis_listener.wait(0.3) is False, "the whole burst was drained by one wake-up"


def test_every_api_write_notifies_the_beats(
    redis_listener: ChangeListener, redis_url: str, redis_prefix: str, tmp_path: object
) -> None:
    with Schedules(
        f"sqlite:///{tmp_path}/s.sqlite3", notify=redis_url, redis_key_prefix=redis_prefix
    ) as api:
        migrate(api.store.engine)
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
            assert redis_listener.wait(5) is True


def test_without_redis_the_listener_polls_and_logs_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="celery_dbeat")
    listener = ChangeListener("redis://127.0.0.1:1/0")
    try:
        for _ in range(3):
            assert listener.wait(0.05) is False
    finally:
        listener.close()
    assert sum("unavailable" in r.getMessage() for r in caplog.records) == 1
    ChangeNotifier("redis://127.0.0.1:1/0").notify()  # never raises
