"""Start-up checks on real services: what ``celery dbeat check`` and beat's start-up report."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
import sqlalchemy as sa

from celery_dbeat.checks import Finding, Level, run_checks
from celery_dbeat.config import Settings
from celery_dbeat.store import create_engine, migrate

#: The default settings, with a database URL of its own (the default SQLite file is warned about).
DEFAULTS = Settings.from_mapping({"database_url": "postgresql+psycopg://db/schedules"})


@pytest.fixture
def engine(database_url: str) -> Iterator[sa.Engine]:
    engine = create_engine(database_url)
    yield engine
    engine.dispose()


def _levels(findings: list[Finding], topic: str) -> set[Level]:
    return {f.level for f in findings if f.topic == topic}


def test_a_current_schema_and_sound_settings_give_no_warning(engine: sa.Engine) -> None:
    migrate(engine)
    findings = run_checks(DEFAULTS, engine)
    assert {f.level for f in findings} == {Level.OK}, findings


def test_a_missing_schema_is_an_error(engine: sa.Engine) -> None:
    findings = run_checks(DEFAULTS, engine)
    assert _levels(findings, "schema") == {Level.ERROR}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_contradicting_timing_settings_are_warned_about(engine: sa.Engine) -> None:
    migrate(engine)
    settings = Settings.from_mapping({"misfire_tolerance": 60, "misfire_grace": 30})
    warnings = [f.message for f in run_checks(settings, engine) if f.level is Level.WARNING]
    assert any("dbeat_misfire_grace" in text for text in warnings)


@pytest.mark.parametrize("database_url", ["mysql"], indirect=True)
def test_a_non_strict_mysql_sql_mode_is_warned_about(database_url: str) -> None:
    engine = create_engine(database_url)

    @sa.event.listens_for(engine, "connect")
    def _lax(dbapi_connection: object, _record: object) -> None:
        cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
        cursor.execute("SET SESSION sql_mode = ''")
        cursor.close()

    try:
        migrate(engine)
        assert _levels(run_checks(DEFAULTS, engine), "database") == {Level.WARNING}
    finally:
        engine.dispose()


class _Config:
    """A Redis client stand-in for one CONFIG GET answer (the real server's policy is shared);
    every other command succeeds."""

    def __init__(self, answer: dict[str, str] | Exception) -> None:
        self.answer = answer
        self.connection_pool = redis.ConnectionPool()

    def ping(self) -> bool:
        return True

    def pipeline(self, transaction: bool = True) -> _Config:
        return self

    def set(self, *args: object, **kwargs: object) -> None:
        pass

    def execute_command(self, *args: object) -> None:
        pass

    def execute(self) -> list[object]:
        return []

    def publish(self, channel: str, message: bytes) -> int:
        return 0

    def config_get(self, pattern: str) -> dict[str, str]:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize(
    ("answer", "level"),
    [
        pytest.param({"maxmemory-policy": "noeviction", "maxmemory": "1000"}, Level.OK, id="safe"),
        pytest.param(
            {"maxmemory-policy": "allkeys-lru", "maxmemory": "0"}, Level.OK, id="no-limit"
        ),
        pytest.param(
            {"maxmemory-policy": "volatile-ttl", "maxmemory": "1000"}, Level.WARNING, id="evicts"
        ),
        pytest.param(redis.ResponseError("unknown command"), Level.WARNING, id="config-refused"),
    ],
)
def test_a_redis_that_can_evict_lock_keys_is_warned_about(
    engine: sa.Engine, answer: dict[str, str] | Exception, level: Level
) -> None:
    migrate(engine)
    assert _levels(run_checks(DEFAULTS, engine, _Config(answer)), "redis") == {level}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_real_redis_is_checked(engine: sa.Engine, redis_url: str) -> None:
    migrate(engine)
    client = redis.Redis.from_url(redis_url)
    try:
        findings = run_checks(DEFAULTS, engine, client)
    finally:
        client.close()
    (finding,) = [f for f in findings if f.topic == "redis"]
    assert "maxmemory" in finding.message
