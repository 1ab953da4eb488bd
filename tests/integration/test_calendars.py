"""Exclusion calendars (SEMANTICS: "A calendar removes days from F(S): an excluded slot is never
due and never missed; it is recorded as skipped with the calendar's name when it passes"), on
every backend: calendars are rows every beat reads, so an edit takes effect at the next batch."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

import pytest

from celery_dbeat import Cron, Every, ValidationError
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.errors import CalendarExists, CalendarInUse, CalendarNotFound
from tests.integration.conftest import (
    START,
    MakeTicker,
    RecordingPublisher,
    Tables,
    run,
)

DAY = timedelta(days=1)
#: Beat's ticks over days, on every slot of these tests (its own sleeps would be 5 s each).
STEP = timedelta(minutes=30)
TEN = START.replace(hour=10)  # 2024-05-06 10:00Z, a Monday


def test_an_excluded_slot_is_not_sent_and_is_recorded_skipped_with_the_calendars_name(
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    caplog: pytest.LogCaptureFixture,
) -> None:
    api.calendars.add("holidays", dates=["2024-05-07"])
    api.add("daily", "t.daily", Cron("0 10 * * *"), calendar="holidays")
    api.add("other", "t.other", Cron("0 10 * * *"))

    with caplog.at_level(logging.INFO, logger="celery_dbeat"):
        run(make_ticker(), clock, TEN + 2 * DAY, step=STEP)

    sent = [(r.schedule_name, r.slot) for r, *_ in publisher]
    assert [slot for name, slot in sent if name == "daily"] == [TEN, TEN + 2 * DAY]
    assert [slot for name, slot in sent if name == "other"] == [TEN, TEN + DAY, TEN + 2 * DAY]
    skipped = [f for f in api.history("daily") if f.status == "skipped"]
    assert [(f.slot, f.calendar, f.task_id) for f in skipped] == [(TEN + DAY, "holidays", None)]
    assert "decision=skipped schedule=daily" in caplog.text
    assert "calendar=holidays" in caplog.text
    # The schedule moved on past the excluded slot.
    assert api.get("daily").next_run_at == TEN + 3 * DAY


def test_a_calendar_edit_takes_effect_at_the_next_batch_of_a_running_beat(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, publisher: RecordingPublisher
) -> None:
    api.calendars.add("holidays")
    api.add("daily", "t.daily", Cron("0 10 * * *"), calendar="holidays")
    ticker = make_ticker()
    run(ticker, clock, TEN, step=STEP)

    api.calendars.update("holidays", add_dates="2024-05-07..2024-05-08")
    run(ticker, clock, TEN + DAY, step=STEP)
    api.calendars.update("holidays", dates=["2024-05-07"])
    run(ticker, clock, TEN + 2 * DAY, step=STEP)

    assert [r.slot for r, *_ in publisher] == [TEN, TEN + 2 * DAY]
    assert api.calendars.get("holidays").version == 3


def test_a_calendar_removed_and_created_again_applies_its_new_dates_on_a_beat_that_read_the_old(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, publisher: RecordingPublisher
) -> None:
    # Both calendars are at version 1: only their identity tells them apart.
    api.calendars.add("holidays")
    api.add("daily", "t.daily", Cron("0 10 * * *"), calendar="holidays")
    ticker = make_ticker()
    run(ticker, clock, TEN, step=STEP)

    api.update("daily", calendar=None)
    api.calendars.remove("holidays")
    api.calendars.add("holidays", dates="2024-05-07")
    api.update("daily", calendar="holidays")
    run(ticker, clock, TEN + 2 * DAY, step=STEP)

    assert api.calendars.get("holidays").version == 1
    assert [r.slot for r, *_ in publisher] == [TEN, TEN + 2 * DAY]
    skipped = [f for f in api.history("daily") if f.status == "skipped"]
    assert [(f.slot, f.calendar) for f in skipped] == [(TEN + DAY, "holidays")]


def test_a_calendar_row_inserted_by_hand_without_a_uid_is_read_at_every_batch(
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    tables: Tables,
) -> None:
    api.calendars.add("holidays")
    api.add("daily", "t.daily", Cron("0 10 * * *"), calendar="holidays")
    tables.execute("UPDATE dbeat_calendars SET uid = NULL")
    ticker = make_ticker()
    run(ticker, clock, TEN, step=STEP)

    tables.execute("UPDATE dbeat_calendars SET dates = '[\"2024-05-07\"]'")  # version kept
    run(ticker, clock, TEN + 2 * DAY, step=STEP)

    assert [r.slot for r, *_ in publisher] == [TEN, TEN + 2 * DAY]


def test_excluded_slots_are_never_missed_after_an_outage(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, publisher: RecordingPublisher
) -> None:
    # All beats down for three days; the newest missed slot is on an excluded day, so policy
    # latest sends the newest slot that is not.
    api.calendars.add("holidays", dates="2024-05-08")
    api.add("daily", "t.daily", Cron("0 10 * * *"), calendar="holidays")
    clock.set(TEN + 2 * DAY + timedelta(hours=3))
    run(make_ticker(), clock, clock.now(), step=STEP)

    assert [r.slot for r, *_ in publisher] == [TEN + DAY]
    history = {(f.status, f.slot, f.slot_count, f.calendar) for f in api.history("daily")}
    assert ("skipped", TEN + 2 * DAY, 1, "holidays") in history
    assert ("skipped", TEN, 1, None) in history  # the policy's, not the calendar's


def test_a_calendar_reads_dates_in_its_own_zone(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, publisher: RecordingPublisher
) -> None:
    # 23:30Z on Monday is already Tuesday in Berlin (UTC+2 in May).
    api.calendars.add("berlin", timezone="Europe/Berlin", dates=["2024-05-07"])
    api.add("late", "t.late", Cron("30 23 * * *"), calendar="berlin")
    run(make_ticker(), clock, START.replace(hour=23, minute=30) + DAY, step=STEP)

    assert [r.slot for r, *_ in publisher] == [START.replace(hour=23, minute=30) + DAY]
    assert [f.calendar for f in api.history("late") if f.status == "skipped"] == ["berlin"]


def test_a_schedule_naming_an_unknown_calendar_is_refused_on_add_and_update(
    api: Schedules, tables: Tables
) -> None:
    with pytest.raises(ValidationError, match=r"calendar='nope': no calendar has this name"):
        api.add("daily", "t.daily", Cron("0 10 * * *"), calendar="nope")
    assert tables.rows() == []
    api.add("daily", "t.daily", Cron("0 10 * * *"))
    with pytest.raises(ValidationError, match=r"calendar='nope'"):
        api.update("daily", calendar="nope")
    assert api.get("daily").calendar is None


def test_an_unknown_calendar_is_refused_with_the_name_it_most_likely_meant(
    api: Schedules,
) -> None:
    api.calendars.add("holidays")
    api.calendars.add("closures")

    with pytest.raises(
        ValidationError,
        match=r"calendar='holidyas': no calendar has this name \(did you mean holidays\?\)",
    ):
        api.add("daily", "t.daily", Cron("0 10 * * *"), calendar="holidyas")
    with pytest.raises(CalendarNotFound, match=r"'holidyas' \(did you mean holidays\?\)"):
        api.calendars.get("holidyas")
    with pytest.raises(ValidationError) as caught:
        api.add("daily", "t.daily", Cron("0 10 * * *"), calendar="nothing-like-it")
    assert "did you mean" not in str(caught.value)


def test_removing_a_calendar_still_named_is_refused_with_the_schedules_names(
    api: Schedules,
) -> None:
    api.calendars.add("holidays")
    api.add("b", "t.b", Every(60), calendar="holidays")
    api.add("a", "t.a", Every(60), calendar="holidays")
    with pytest.raises(CalendarInUse, match=r"named by 2 schedule\(s\): 'a', 'b'"):
        api.calendars.remove("holidays")
    assert api.calendars.get("holidays").name == "holidays"

    api.update("a", calendar=None)
    api.update("b", calendar=None)
    api.calendars.remove("holidays")
    with pytest.raises(CalendarNotFound):
        api.calendars.get("holidays")


def test_bad_calendar_input_is_refused_with_one_clear_line_and_stores_nothing(
    api: Schedules,
) -> None:
    with pytest.raises(ValidationError, match=r"dates='2024-13-01': must be YYYY-MM-DD"):
        api.calendars.add("x", dates=["2024-13-01"])
    with pytest.raises(ValidationError, match=r"ends before it starts"):
        api.calendars.add("x", dates=["2024-05-08..2024-05-07"])
    with pytest.raises(ValidationError, match=r"timezone='Mars/Base'"):
        api.calendars.add("x", timezone="Mars/Base")
    assert api.calendars.list() == []
    api.calendars.add("x")
    with pytest.raises(CalendarExists):
        api.calendars.add("x")
    with pytest.raises(ValidationError, match=r"dates='soon'"):
        api.calendars.update("x", add_dates="soon")
    assert api.calendars.get("x").dates == []


def test_a_row_naming_a_missing_calendar_is_set_aside_and_the_others_fire(
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    tables: Tables,
) -> None:
    api.add("good", "t.good", Cron("0 10 * * *"))
    tables.insert("raw", cron="0 10 * * *", calendar="gone", next_run_at=TEN, uid="a" * 32)
    run(make_ticker(), clock, TEN, step=STEP)

    assert [r.schedule_name for r, *_ in publisher] == ["good"]
    assert tables.row("raw").last_error == "calendar 'gone' does not exist"


def test_preview_shows_the_slots_a_calendar_removes(api: Schedules) -> None:
    api.calendars.add("holidays", dates="2024-05-07..2024-05-08")
    api.add("daily", "t.daily", Cron("0 10 * * *"), calendar="holidays")

    shown = api.preview("daily", count=2)

    assert [(p.slot, p.excluded_by) for p in shown] == [
        (TEN, None),
        (TEN + DAY, "holidays"),
        (TEN + 2 * DAY, "holidays"),
        (TEN + 3 * DAY, None),
    ]


def test_preview_lists_at_most_count_removed_slots_of_a_dense_schedule(api: Schedules) -> None:
    api.calendars.add("closed", dates="2024-05-06")
    api.add("poll", "t.poll", Every(1), calendar="closed")

    shown = api.preview("poll", count=3)

    assert [p.excluded_by for p in shown] == ["closed"] * 3 + [None] * 3
    assert shown[3].slot == datetime(2024, 5, 7, tzinfo=timezone.utc)


def test_a_backfill_leaves_out_the_days_the_calendar_removes(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, publisher: RecordingPublisher
) -> None:
    api.calendars.add("holidays", dates="2024-05-04")
    api.add("daily", "t.daily", Cron("0 10 * * *"), start_at=TEN - 5 * DAY, calendar="holidays")

    report = api.backfill("daily", TEN - 3 * DAY, TEN - DAY)
    holiday = api.backfill("daily", TEN - 2 * DAY, TEN - 2 * DAY, dry_run=True)

    assert report.queued == [TEN - 3 * DAY, TEN - DAY]
    assert (report.calendar, report.excluded) == ("holidays", [TEN - 2 * DAY])
    assert report.summary().startswith("queued 2 fire(s) of 'daily' from ")
    assert (
        "(0 of the 2 slot(s) in the range already sent or on their way; 1 excluded by calendar"
        " 'holidays', never sent (2024-05-04T10:00:00Z)); beats send them" in report.summary()
    )
    # A range whose only slot the calendar removes says why nothing is left.
    assert holiday.summary() == (
        "nothing to backfill: 0 slot(s) of 'daily' in the range, 0 already sent or on their way;"
        " 1 excluded by calendar 'holidays', never sent (2024-05-04T10:00:00Z)"
    )
