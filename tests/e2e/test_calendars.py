"""Calendars with real beats (docs/how-to/calendars.md): every beat reads the same
calendar from the database, so a slot on an excluded date is recorded once, as skipped with the
calendar's name, and never reaches the broker; a schedule without the calendar fires as usual;
an edit of the calendar takes effect on the next batch, with no restart."""

from __future__ import annotations

from collections import Counter

import pytest
import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.store import migrate
from tests.e2e.harness import Harness

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _skipped_by(harness: Harness, calendar: str) -> int:
    with harness.engine.connect() as conn:
        return int(
            conn.execute(
                sa.text(
                    "SELECT count(*) FROM dbeat_fires WHERE status = 'skipped'"
                    " AND calendar = :calendar"
                ),
                {"calendar": calendar},
            ).scalar_one()
        )


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_two_beats_skip_the_excluded_day_once_and_an_edit_takes_effect_without_a_restart(
    harness: Harness,
) -> None:
    harness.configure({}, redis_locks=True)
    with Schedules(harness.database_url) as api:
        migrate(api.store.engine)
        today = api.clock.now().date()
        api.calendars.add("closed", dates=[today.isoformat()])
        api.add("excluded", "e2e.record", Every(1), args=["excluded"], calendar="closed")
        api.add("open", "e2e.record", Every(1), args=["open"])
    harness.start_worker()
    beats = [harness.start_beat(f"beat-{n}") for n in (1, 2)]
    harness.wait_ready(beats)
    harness.wait_until(
        lambda: (
            Counter(r.schedule for r in harness.received())["open"] >= 5
            and _skipped_by(harness, "closed") >= 5
        ),
        timeout=60,
        what="five fires of 'open' and five slots of 'excluded' skipped",
    )
    assert Counter(r.schedule for r in harness.received())["excluded"] == 0

    with Schedules(harness.database_url) as api:
        api.calendars.update("closed", dates=[])  # the day is no longer excluded
    harness.wait_until(
        lambda: Counter(r.schedule for r in harness.received())["excluded"] >= 3,
        timeout=60,
        what="'excluded' to fire once its calendar no longer excludes today",
    )
    harness.stop_all(beats)
    harness.drain()

    received = harness.received()
    assert not [i for i, n in Counter(r.task_id for r in received).items() if n > 1]
    fires = [f for f in harness.fires() if f.schedule == "excluded"]
    skipped = {f.slot for f in fires if f.status == "skipped"}
    sent = {f.slot for f in fires if f.status == "sent"}
    assert skipped
    assert sent
    assert not skipped & sent  # a skipped slot never went out, and was recorded once
    assert {r.task_id for r in received if r.schedule == "excluded"} == {
        f.task_id for f in fires if f.status == "sent"
    }
