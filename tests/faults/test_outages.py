"""Beat survives its services: the database or Redis going away and coming back.

The service is taken down by cutting a TCP proxy between the beat and the real server, so the
beat's connections break and new ones are refused, as when the server dies.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis
import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import FixedClock
from celery_dbeat.config import Settings
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import FireKey, PublishRequest, fire_lock_key
from celery_dbeat.locks import DatabaseLock
from celery_dbeat.locks.redis import RedisLock
from celery_dbeat.store import Store, create_engine, migrate
from celery_dbeat.store.sync import sync_config
from tests.proxy import Proxy
from tests.services import private_database

T0 = datetime(2025, 1, 6, 12, 0, tzinfo=timezone.utc)
SETTINGS = Settings.from_mapping({"instance_name": "beat-under-test", "lock_ttl": 60})


class Recorder:
    def __init__(self) -> None:
        self.sent: list[PublishRequest] = []

    def __call__(self, request: PublishRequest, *_: Any) -> None:
        self.sent.append(request)

    def offsets(self) -> list[int]:
        return [int((r.slot - T0).total_seconds()) for r in self.sent]


def _sent_offsets(url: str) -> list[int]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            slots = conn.execute(
                sa.text("SELECT slot FROM dbeat_fires WHERE status = 'sent' ORDER BY slot")
            ).scalars()
            return [int((s.replace(tzinfo=timezone.utc) - T0).total_seconds()) for s in slots]
    finally:
        engine.dispose()


def test_beat_rides_out_a_database_outage_and_applies_the_misfire_policy(
    server_database: str, caplog: pytest.LogCaptureFixture
) -> None:
    direct = Store(server_database, server_clock=False)  # the schedule is created at T0
    migrate(direct.engine)
    definition = Definition.create(name="minutely", task="t.minutely", schedule=Every(60))
    sync_config(direct, [definition], T0)
    direct.close()

    target = sa.make_url(server_database)
    proxy = Proxy(target.host or "127.0.0.1", target.port or 0)
    url = target.set(host="127.0.0.1", port=proxy.port, query={"connect_timeout": "2"})
    store = Store(url.render_as_string(hide_password=False), server_clock=False)  # FixedClock
    clock = FixedClock(T0)
    publish = Recorder()
    ticker = Ticker(store, DatabaseLock(), publish, SETTINGS, clock)
    caplog.set_level(logging.INFO, logger="celery_dbeat")
    try:
        clock.advance(60)
        ticker.tick()
        assert publish.offsets() == [60]

        with proxy.down():
            for _ in range(6):
                clock.advance(50)
                sleep = ticker.tick()  # must not raise
                assert 0 < sleep <= SETTINGS.max_interval.total_seconds()
        outage_logs = [r.getMessage() for r in caplog.records if "unreachable" in r.getMessage()]
        # When it begins, then again once a minute at most while it lasts (six retries over
        # 300 s): never on every retry, never silent for long.
        assert "unreachable, retrying" in outage_logs[0]
        assert [m.split(" after ")[1].split(",")[0] for m in outage_logs[1:]] == ["100 s", "200 s"]

        # Back at T0+400 s (past the retry backoff): 120..360 came due while the only beat
        # could not work, so they were missed (360 by 40 s, past the 5 s tolerance).
        clock.set(T0 + timedelta(seconds=400))
        ticker.tick()
        assert any("reachable again" in r.getMessage() for r in caplog.records)
        assert publish.offsets() == [60, 360], "latest policy: exactly one, the newest missed"
    finally:
        store.close()
        proxy.close()
    assert _sent_offsets(server_database) == [60, 360]


def test_redis_outage_falls_back_to_database_claims_and_recovers(
    redis_url: str,
    redis_prefix: str,
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    target = redis.connection.parse_url(redis_url)
    proxy = Proxy(target.get("host", "127.0.0.1"), target.get("port", 6379))
    lock = RedisLock(
        f"redis://127.0.0.1:{proxy.port}/{target.get('db', 0)}",
        prefix=redis_prefix,
        owner="beat-under-test",
    )
    direct = redis.Redis.from_url(redis_url)
    caplog.set_level(logging.INFO, logger="celery_dbeat")
    with private_database("sqlite", tmp_path_factory) as url:
        store = Store(url)
        migrate(store.engine)
        schedule = Definition.create(name="s", task="t.s", schedule=Every(10))
        sync_config(store, [schedule], T0)
        clock = FixedClock(T0)
        publish = Recorder()
        ticker = Ticker(store, lock, publish, SETTINGS, clock)
        try:
            clock.advance(10)
            ticker.tick()
            assert len(list(direct.scan_iter(f"{redis_prefix}fire:*"))) == 1

            with proxy.down():
                for _ in range(3):
                    clock.advance(10)
                    ticker.tick()
                assert lock.degraded
            assert publish.offsets() == [10, 20, 30, 40], "fires go on through database claims"
            assert sum("Redis unreachable" in r.getMessage() for r in caplog.records) == 1

            deadline = time.monotonic() + 15
            while lock.degraded and time.monotonic() < deadline:
                time.sleep(0.5)  # the lock retries Redis after its own (real-time) backoff
                clock.advance(10)
                ticker.tick()
            assert not lock.degraded
            assert any("Redis reachable again" in r.getMessage() for r in caplog.records)
            last = publish.sent[-1]
            key = fire_lock_key(redis_prefix, FireKey(last.schedule_id, last.slot))
            assert direct.get(key) == b"beat-under-test", "claims go through Redis again"
            assert len(publish.sent) == len({r.task_id for r in publish.sent})
        finally:
            store.close()
            lock.close()
            direct.close()
            proxy.close()
