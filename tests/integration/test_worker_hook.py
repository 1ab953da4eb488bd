"""The worker hook (celery_dbeat.beat.worker) in a real Celery worker, inside the test process.

Celery's own pytest plugin (``celery.contrib.pytest``, loaded in tests/conftest.py) starts the
worker in a thread with the in-memory broker: beat's scheduler publishes a fire through Celery as
it does in production, the worker runs the task, and the hook's signal handlers record the run
in the fire row. tests/e2e/test_runs.py does the same with real processes and a real broker.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any, cast

import pytest
import sqlalchemy as sa
from celery import Celery, signals
from celery.contrib.testing.worker import TestWorkController

from celery_dbeat import Cron
from celery_dbeat.api import Schedules
from celery_dbeat.beat import worker as hook
from celery_dbeat.beat.scheduler import Scheduler
from celery_dbeat.store import Fire

F = cast(sa.Table, Fire.__table__)


@pytest.fixture
def celery_config(database_url: str) -> Mapping[str, Any]:
    """The app ``celery_app`` is made with: the in-memory broker, this test's database."""
    return {
        "broker_url": "memory://",
        "result_backend": "cache+memory://",
        "dbeat_database_url": database_url,
        "dbeat_sync_beat_schedule": False,
    }


@pytest.fixture(scope="session")
def celery_includes() -> list[str]:
    # The worker fixture pings the worker before the test begins: the ping task must be known.
    return ["celery.contrib.testing.tasks"]


class Finished:
    """Set when a task's ``task_postrun`` handlers have all run (the hook's included: it was
    connected first, on import)."""

    def __init__(self) -> None:
        self.task_ids: set[str] = set()
        self._changed = threading.Condition()

    def __call__(self, task_id: str, **_: Any) -> None:
        with self._changed:
            self.task_ids.add(task_id)
            self._changed.notify_all()

    def wait(self, task_id: str) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: task_id in self.task_ids, timeout=60), task_id


@pytest.fixture
def finished() -> Iterator[Finished]:
    waiter = Finished()
    signals.task_postrun.connect(waiter, weak=False)
    yield waiter
    signals.task_postrun.disconnect(waiter)


@pytest.fixture
def tasks(celery_app: Celery) -> None:
    """The tasks beat fires here; registered before the worker starts (``worker`` needs them)."""

    @celery_app.task(name="tasks.report", shared=False)
    def report() -> str:
        return "done"

    @celery_app.task(name="tasks.broken", shared=False)
    def broken() -> None:
        raise ValueError("the report server is down")


@pytest.fixture
def worker(tasks: None, celery_worker: TestWorkController, celery_app: Celery) -> Iterator[None]:
    yield
    hook._close_all()  # this app's recorder: its thread and engine


@pytest.fixture
def beat(celery_app: Celery, worker: None) -> Iterator[Scheduler]:
    """Beat's scheduler on the test app (migrates the database, publishes through Celery)."""
    scheduler = Scheduler(app=celery_app)
    yield scheduler
    scheduler.close()


def fire_now(celery_app: Celery, beat: Scheduler, task: str, finished: Finished) -> dict[str, Any]:
    """Add a schedule, trigger it, let beat publish it and the worker run it: the fire's row."""
    with Schedules.from_app(celery_app) as api:
        api.add("nightly", task, Cron("0 3 * * *"))
        task_id = api.trigger("nightly")
    beat.tick()
    finished.wait(task_id)
    assert hook.recorder_for(celery_app).flush()
    engine = beat.store.engine if beat.store is not None else None
    assert engine is not None
    with engine.connect() as conn:
        row = conn.execute(sa.select(F).where(F.c.task_id == task_id)).one()
    return dict(row._mapping)


def test_a_fire_beat_published_is_recorded_as_it_runs_and_succeeds(
    celery_app: Celery, beat: Scheduler, finished: Finished
) -> None:
    row = fire_now(celery_app, beat, "tasks.report", finished)

    assert row["run_status"] == "succeeded"
    assert row["started_at"] is not None
    assert row["finished_at"] is not None
    assert row["finished_at"] >= row["started_at"]
    assert row["runtime"] is not None
    assert row["runtime"] >= 0
    assert row["worker"]
    assert row["run_error"] is None


def test_a_fire_whose_task_raises_is_recorded_as_failed_with_the_error(
    celery_app: Celery, beat: Scheduler, finished: Finished
) -> None:
    row = fire_now(celery_app, beat, "tasks.broken", finished)

    assert row["run_status"] == "failed"
    assert row["run_error"] == "ValueError: the report server is down"
    assert row["finished_at"] is not None


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_schedule_whose_runs_fail_pause_after_failures_times_in_a_row_is_paused(
    celery_app: Celery, beat: Scheduler, finished: Finished
) -> None:
    # The hook's own logger, at the level a worker's -l info lets through.
    records = Records()
    hook.logger.addHandler(records)
    level = hook.logger.level
    hook.logger.setLevel(logging.WARNING)
    try:
        with Schedules.from_app(celery_app) as api:
            api.add("nightly", "tasks.broken", Cron("0 3 * * *"), pause_after_failures=2)
            for _ in range(2):
                task_id = api.trigger("nightly")
                beat.tick()
                finished.wait(task_id)
                assert hook.recorder_for(celery_app).flush()
            paused = api.get("nightly")
    finally:
        hook.logger.removeHandler(records)
        hook.logger.setLevel(level)

    note = "paused after 2 consecutive failed runs; last: ValueError: the report server is down"
    assert (paused.state, paused.pause_source, paused.pause_note) == ("paused", "failures", note)
    assert hook.recorder_for(celery_app).paused == 1
    warned = [r for r in records.records if "pause_after_failures" in r.getMessage()]
    assert [r.levelname for r in warned] == ["WARNING"]
    assert "'nightly' paused after 2 consecutive failed runs" in warned[0].getMessage()
