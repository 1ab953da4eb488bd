"""Data for the load pages (both admins): schedules that make a herd every hour and a nightly
one, and a past day of sent fires (lag) and failed runs, written as beat and the worker hook
would record them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import sqlalchemy as sa

from celery_dbeat import Cron, Every
from celery_dbeat.api import Schedules
from celery_dbeat.core.definitions import Definition
from celery_dbeat.store.models import F

HOURLY = "cron '0 * * * *' UTC"


def seed(api: Schedules, *, hourly: int = 60, polls: int = 20) -> None:
    """``hourly`` schedules on ``0 * * * *`` (the herd), ``polls`` every-minute ones, one whose
    calendar excludes the next 24 hours (none of its slots counted), and a sent fire of each poll
    for each of the last 24 hours, one of three of them failed."""
    today = datetime.now(timezone.utc).date()
    api.calendars.add("closed", dates=[today, today + timedelta(days=1)])
    api.add_many(
        [
            *(
                Definition.create(name=f"report-{i}", task="t", schedule=Cron("0 * * * *"))
                for i in range(hourly)
            ),
            *(
                Definition.create(name=f"poll-{i}", task="t", schedule=Every(60))
                for i in range(polls)
            ),
            Definition.create(name="nightly", task="t", schedule=Cron("30 2 * * *"), jitter=600),
            Definition.create(name="closed", task="t", schedule=Every(600), calendar="closed"),
        ]
    )
    ids = [info.id for info in api.list() if info.name.startswith("poll-")]
    now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
    rows = []
    for hour in range(1, 24):
        slot = now - timedelta(hours=hour)
        for n, schedule_id in enumerate(ids):
            rows.append(
                {
                    "schedule_id": schedule_id,
                    "slot": slot,
                    "manual": False,
                    "status": "sent",
                    "slot_count": 1,
                    "task_id": f"{schedule_id}-{hour}",
                    "recorded_at": slot,
                    "sent_at": slot + timedelta(milliseconds=40 * (n + 1) + 200 * (hour % 5)),
                    "attempts": 1,
                    "run_status": "failed"
                    if (hour + n) % 3 == 0 and hour % 4 == 0
                    else "succeeded",
                }
            )
    with api.store.engine.begin() as conn:
        conn.execute(sa.insert(F), rows)
