"""The worker hook while the schedule database is unreachable: tasks never wait or fail, events
are kept (up to a bound) and written once the database is back."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from typing import cast

import pytest
import sqlalchemy as sa

from celery_dbeat.beat.worker import RunRecorder
from celery_dbeat.core.fires import RunStatus
from celery_dbeat.store import Fire, migrate
from celery_dbeat.store.database import create_engine
from celery_dbeat.store.runs import RunEvent
from tests.proxy import Proxy

T0 = datetime(2024, 5, 6, 9, 0, tzinfo=timezone.utc)
F = Fire.__table__


def _seed(url: str, task_ids: list[str]) -> None:
    engine = create_engine(url)
    try:
        migrate(engine)
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO dbeat_schedules (name, task, args, kwargs, options, enabled,"
                    " origin, kind, cron, timezone, run_count, version, created_at, updated_at)"
                    " VALUES ('s', 't', '[]', '{}', '{}', true, 'api', 'cron', '0 * * * *',"
                    " 'UTC', 0, 1, :t, :t)"
                ),
                {"t": T0.replace(tzinfo=None)},
            )
            schedule_id = conn.execute(sa.text("SELECT id FROM dbeat_schedules")).scalar_one()
            conn.execute(
                sa.insert(cast(sa.Table, F)),
                [
                    {
                        "schedule_id": schedule_id,
                        "slot": T0 + timedelta(hours=n),
                        "manual": False,
                        "status": "sent",
                        "slot_count": 1,
                        "task_id": task_id,
                        "recorded_at": T0,
                        "attempts": 0,
                    }
                    for n, task_id in enumerate(task_ids)
                ],
            )
    finally:
        engine.dispose()


def _statuses(url: str) -> dict[str, str | None]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {
                r.task_id: r.run_status
                for r in conn.execute(sa.select(F.c.task_id, F.c.run_status))
            }
    finally:
        engine.dispose()


def test_events_are_kept_while_the_database_is_down_and_written_when_it_is_back(
    server_database: str, caplog: pytest.LogCaptureFixture
) -> None:
    ids = [f"task-{n}" for n in range(5)]
    _seed(server_database, ids)
    target = sa.make_url(server_database)
    proxy = Proxy(target.host or "127.0.0.1", target.port or 0)
    url = target.set(host="127.0.0.1", port=proxy.port, query={"connect_timeout": "2"})
    caplog.set_level(logging.INFO, logger="celery_dbeat")
    # A long flush interval: the test flushes by hand; capacity 3 so that the oldest are dropped.
    recorder = RunRecorder(url.render_as_string(hide_password=False), capacity=3, flush_interval=60)
    try:
        with proxy.down():
            for task_id in ids:
                recorder.add(RunEvent(task_id, RunStatus.SUCCEEDED, T0, runtime=1.0))
            assert recorder.flush() is False  # must not raise
            assert recorder.flush() is False
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert sum("cannot record task runs" in m for m in warnings) == 1, warnings
        assert any("buffer full" in m for m in warnings), warnings
        assert recorder.dropped == 2

        assert recorder.flush() is True
        assert any("recording task runs again" in r.getMessage() for r in caplog.records)
    finally:
        recorder.close()
        proxy.close()

    # The three newest were kept and written; the two oldest were dropped, as logged.
    assert _statuses(server_database) == {
        "task-0": None,
        "task-1": None,
        "task-2": "succeeded",
        "task-3": "succeeded",
        "task-4": "succeeded",
    }
