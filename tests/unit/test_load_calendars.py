"""The load forecast counts only the slots beat sends: a slot on a day the schedule's calendar
excludes is not counted. Checked against planning itself: beat's ``plan`` called at each instant a
fire comes due over the window, as the ticker calls it."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from celery_dbeat.core.calendars import Calendar
from celery_dbeat.core.fires import FireStatus, ScheduleRow
from celery_dbeat.core.load import BUCKETS, HORIZON, LoadCounter
from celery_dbeat.core.misfire import MisfireRules
from celery_dbeat.core.planning import plan
from tests.unit.test_planning import row as planning_row

START = datetime(2026, 1, 5, 12, 0, tzinfo=timezone.utc)
END = START + HORIZON
#: The window's two days in most zones.
TODAY, TOMORROW = "2026-01-05", "2026-01-06"


def schedule(name: str, kind: str = "cron", **given: Any) -> ScheduleRow:
    """Planning's test row (:func:`tests.unit.test_planning.row`), created a day before the
    window."""
    fields = {
        "timezone": None,
        "cron": None,
        "created_at": START - timedelta(days=1, seconds=17.25),
    }
    return planning_row(name=name, uid=f"uid-{name}", kind=kind, **{**fields, **given})


def beat_sends(schedule: ScheduleRow, calendar: Calendar) -> list[int]:
    """Fires per minute that beat sends in the window: ``plan`` at each due instant."""
    counts = [0] * BUCKETS
    rules = MisfireRules()
    first = plan(schedule, START, rules, calendar=calendar)
    row = replace(schedule, next_run_at=first.next_run_at)
    due = first.due_at or first.next_run_at
    while due is not None and due <= END:
        step = plan(row, due, rules, calendar=calendar)
        assert step.error is None
        sent = [f for f in step.fires if f.status is FireStatus.PENDING]
        counts[min((due - START) // timedelta(minutes=1), BUCKETS - 1)] += len(sent)
        row = replace(
            row,
            next_run_at=step.next_run_at,
            last_slot=step.last_slot or row.last_slot,
            run_count=row.run_count + step.runs_added,
        )
        due = None if step.finished else step.due_at or step.next_run_at
    return counts


def forecast(row: ScheduleRow, calendar: Calendar | str | None) -> Any:
    counter = LoadCounter(START, calendars={} if calendar is None else {"cal": calendar})
    counter.add([row])
    return counter.result()


def cal(zone: str, *dates: str) -> Calendar:
    return Calendar.create("cal", timezone=zone, dates=list(dates))


@pytest.mark.parametrize(
    ("row", "calendar"),
    [
        pytest.param(
            schedule("a", cron="0 * * * *", calendar="cal"),
            cal("UTC", TODAY, TOMORROW),
            id="hourly-whole-window-excluded",
        ),
        pytest.param(
            schedule("b", cron="0 * * * *", timezone="America/New_York", calendar="cal"),
            cal("Europe/London", TOMORROW),
            id="cron-zone-other-than-the-calendars",
        ),
        pytest.param(
            schedule("c", "interval", every=45, calendar="cal"),
            cal("Asia/Kolkata", TOMORROW),
            id="interval-half-hour-zone",
        ),
        pytest.param(
            schedule("d", "interval", every=7, calendar="cal"),
            cal("America/New_York", TODAY),
            id="interval-dense",
        ),
        pytest.param(
            schedule("e", cron="* * * * * */10", calendar="cal"),
            cal("Australia/Adelaide", TOMORROW),
            id="seconds-cron-counted-not-walked",
        ),
        pytest.param(
            schedule("f", cron="*/5 * * * *", jitter=120, calendar="cal"),
            cal("UTC", TOMORROW),
            id="jittered-cron",
        ),
        pytest.param(
            schedule("g", "interval", every=600, jitter=900, calendar="cal"),
            cal("Europe/Paris", TODAY),
            id="jitter-capped-by-an-excluded-slot",
        ),
        pytest.param(
            schedule("h", cron="0 * * * *", max_runs=20, run_count=2, calendar="cal"),
            cal("UTC", TODAY),
            id="excluded-slots-are-not-runs",
        ),
    ],
)
def test_a_calendar_removes_from_the_count_the_slots_beat_does_not_send(
    row: ScheduleRow, calendar: Calendar
) -> None:
    load = forecast(row, calendar)
    unfiltered = forecast(replace(row, calendar=None), None)

    assert list(load.per_minute) == beat_sends(row, calendar)
    assert load.total < unfiltered.total
    if row.max_runs is None and row.jitter is None:  # else a fire may be due after the window
        assert load.excluded == unfiltered.total - load.total


def test_a_calendar_that_excludes_the_whole_window_leaves_no_fire() -> None:
    load = forecast(schedule("a", cron="0 * * * *", calendar="cal"), cal("UTC", TODAY, TOMORROW))

    assert (load.total, load.excluded, load.herds) == (0, 24, ())


@pytest.mark.parametrize(
    "calendar",
    [
        pytest.param(None, id="missing"),
        pytest.param("calendar 'cal' cannot be read: bad dates", id="unreadable"),
    ],
)
def test_a_row_whose_calendar_beat_cannot_use_is_set_aside(calendar: str | None) -> None:
    counter = LoadCounter(START, calendars={} if calendar is None else {"cal": calendar})
    counter.add([schedule("a", cron="0 * * * *", calendar="cal"), schedule("b", cron="0 0 * * *")])

    load = counter.result()

    assert (load.schedules, load.unreadable, load.total) == (2, 1, 1)
