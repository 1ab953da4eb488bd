"""An ``rrule`` schedule through the API and a real database, with what a cron schedule has:
preview, an exclusion calendar, backfill with each slot's task id, jitter, the load picture, an
edit of the rule, and a stored rule beat cannot read set aside with its error."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import sqlalchemy as sa

from celery_dbeat import Rrule, fire_task_id
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.store import Store
from tests.integration.conftest import MakeTicker, RecordingPublisher, run

UTC = timezone.utc
#: The last business day of each month, 18:00 in London.
MONTH_END = Rrule("FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;BYHOUR=18", "Europe/London")
LAST_BUSINESS_DAYS_2026 = [
    datetime(2026, 1, 30, 18, tzinfo=UTC),
    datetime(2026, 2, 27, 18, tzinfo=UTC),
    datetime(2026, 3, 31, 17, tzinfo=UTC),  # British Summer Time
    datetime(2026, 4, 30, 17, tzinfo=UTC),
    datetime(2026, 5, 29, 17, tzinfo=UTC),
]


def test_preview_and_next_fire_are_the_rules_instants(api: Schedules, clock: FixedClock) -> None:
    clock.set(datetime(2026, 1, 2, tzinfo=UTC))
    info = api.add("month-end", "proj.tasks.report", MONTH_END)

    assert info.schedule == MONTH_END
    assert info.next_run_at == LAST_BUSINESS_DAYS_2026[0]
    assert [p.slot for p in api.preview("month-end", count=5)] == LAST_BUSINESS_DAYS_2026


def test_a_calendar_removes_its_dates_from_the_rule(api: Schedules, clock: FixedClock) -> None:
    clock.set(datetime(2026, 1, 2, tzinfo=UTC))
    api.calendars.add("closures", timezone="Europe/London", dates=[date(2026, 2, 27)])
    api.add("month-end", "proj.tasks.report", MONTH_END, calendar="closures")

    preview = api.preview("month-end", count=3)

    assert [(p.slot, p.excluded_by) for p in preview][:3] == [
        (LAST_BUSINESS_DAYS_2026[0], None),
        (LAST_BUSINESS_DAYS_2026[1], "closures"),
        (LAST_BUSINESS_DAYS_2026[2], None),
    ]


def test_a_month_backfilled_sends_each_slot_once_with_its_own_task_id(
    api: Schedules,
    clock: FixedClock,
    make_ticker: MakeTicker,
    publisher: RecordingPublisher,
) -> None:
    clock.set(datetime(2026, 6, 1, tzinfo=UTC))
    daily = Rrule(
        "DTSTART;TZID=Europe/London:20260101T070000\nRRULE:FREQ=DAILY;BYDAY=MO,TU,WE,TH,FR"
    )
    uid = api.add("weekdays", "proj.tasks.report", daily).uid
    assert uid is not None

    first = api.backfill(
        "weekdays", datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC)
    )
    run(make_ticker(), clock, clock.now())
    again = api.backfill(
        "weekdays", datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC)
    )

    # March 2026 has 22 weekdays; London moves to summer time on the 29th.
    assert (first.slots, len(first.queued), again.slots, len(again.queued)) == (22, 22, 22, 0)
    sent = [(r.slot, r.task_id) for r, *_ in publisher]
    assert sent == [(slot, fire_task_id(uid, slot)) for slot in first.queued]
    assert sent[0][0] == datetime(2026, 3, 2, 7, tzinfo=UTC)
    assert sent[-1][0] == datetime(2026, 3, 31, 6, tzinfo=UTC)


def test_jitter_moves_each_fire_within_its_window_on_the_rules_slots(
    api: Schedules, clock: FixedClock
) -> None:
    clock.set(datetime(2026, 1, 2, tzinfo=UTC))
    api.add("month-end", "proj.tasks.report", MONTH_END, jitter="10m")

    due = api.get("month-end").next_run_at
    preview = api.preview("month-end", count=1)[0]

    assert preview.slot == LAST_BUSINESS_DAYS_2026[0]
    assert due is not None
    assert preview.slot <= due < preview.slot + timedelta(minutes=10)


def test_the_load_picture_counts_an_hourly_rule(api: Schedules, clock: FixedClock) -> None:
    clock.set(datetime(2026, 1, 2, tzinfo=UTC))
    api.add("hourly", "proj.tasks.h", Rrule("FREQ=HOURLY;BYMINUTE=15"))

    load = api.load(start=datetime(2026, 1, 2, tzinfo=UTC))

    assert (load.total, load.unreadable) == (24, 0)
    assert {m % 60 for m, n in enumerate(load.per_minute) if n} == {15}


def test_editing_the_rule_recomputes_the_next_fire(api: Schedules, clock: FixedClock) -> None:
    clock.set(datetime(2026, 1, 2, tzinfo=UTC))
    api.add("month-end", "proj.tasks.report", MONTH_END)

    info = api.update(
        "month-end", schedule=Rrule("FREQ=MONTHLY;BYDAY=2TU;BYHOUR=9", "Europe/London")
    )

    assert info.next_run_at == datetime(2026, 1, 13, 9, tzinfo=UTC)


def test_a_stored_rule_beat_cannot_read_is_set_aside_and_others_keep_firing(
    api: Schedules,
    store: Store,
    clock: FixedClock,
    make_ticker: MakeTicker,
    publisher: RecordingPublisher,
) -> None:
    clock.set(datetime(2026, 1, 2, 8, 59, tzinfo=UTC))
    api.add("fine", "proj.tasks.f", Rrule("FREQ=HOURLY"))
    api.add("broken", "proj.tasks.b", Rrule("FREQ=HOURLY"))
    with store.engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE dbeat_schedules SET rrule = 'FREQ=HOURLY;BYHOUR=25' WHERE name = 'broken'"
            )
        )

    run(make_ticker(), clock, datetime(2026, 1, 2, 9, 0, 1, tzinfo=UTC))

    assert [(r.schedule_name, r.slot) for r, *_ in publisher] == [
        ("fine", datetime(2026, 1, 2, 9, tzinfo=UTC))
    ]
    error = api.get("broken").last_error
    assert error is not None
    assert error.startswith("rrule='FREQ=HOURLY;BYHOUR=25'"), error
