"""A beat whose result backend keeps results stores Celery's ``celery.backend_cleanup`` with the
app's own entries, and disables it when the backend changes to one that expires results."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import celery

from celery_dbeat.api import Schedules
from celery_dbeat.beat.scheduler import Scheduler
from celery_dbeat.beat_schedule import CLEANUP_TASK
from celery_dbeat.core.specs import Cron


def _start_beat(database: str, results: str) -> None:
    app = celery.Celery("dbeat-defaults", set_as_current=False)
    app.conf.update(
        broker_url="memory://",
        result_backend=results,
        timezone="America/New_York",
        dbeat_database_url=database,
        beat_schedule={"report": {"task": "proj.tasks.report", "schedule": 60.0}},
    )
    Scheduler(app).close()  # not lazy: opens the store, migrates, syncs beat_schedule


def test_the_cleanup_is_synced_with_the_apps_entries_and_disabled_when_not_needed(
    tmp_path: Path,
) -> None:
    database = f"sqlite:///{tmp_path / 'schedules.sqlite3'}"
    _start_beat(database, f"db+sqlite:///{tmp_path / 'results.sqlite3'}")
    with Schedules(database) as api:
        assert sorted(info.name for info in api.list()) == [CLEANUP_TASK, "report"]
        cleanup = api.get(CLEANUP_TASK)
        assert cleanup.origin == "config"
        assert cleanup.schedule == Cron("0 4 * * *", "America/New_York", days="all")
        assert cleanup.options == {"expires": 12 * 3600}
        assert cleanup.next_run is not None
        assert cleanup.next_run > datetime.now(timezone.utc)
        assert cleanup.next_run.astimezone(ZoneInfo("America/New_York")).hour == 4

    _start_beat(database, "redis://127.0.0.1:6379/0")  # Redis expires results itself
    with Schedules(database) as api:
        assert api.get(CLEANUP_TASK).state == "paused"
        assert api.get("report").state == "active"
