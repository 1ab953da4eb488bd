"""The pure exclusion calendar (``celery_dbeat.core.calendars``): dates and ranges read, sorted
and merged; a slot excluded when it falls on one of them in the calendar's zone; bad input
refused naming the entry."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from celery_dbeat.core.calendars import Calendar, DateRange, PreviewSlot, parse_dates, preview
from celery_dbeat.core.errors import ValidationError

UTC = timezone.utc


def _d(text: str) -> date:
    return date.fromisoformat(text)


@pytest.mark.parametrize(
    ("entries", "stored"),
    [
        pytest.param(["2026-12-25"], ["2026-12-25"], id="one-date"),
        pytest.param("2026-12-25, 2026-12-26", ["2026-12-25..2026-12-26"], id="adjacent-merged"),
        pytest.param(
            ["2026-12-24..2026-12-27", "2026-12-25"], ["2026-12-24..2026-12-27"], id="inside-merged"
        ),
        pytest.param(["2027-01-01", "2026-12-25"], ["2026-12-25", "2027-01-01"], id="sorted-apart"),
        pytest.param(["2026-12-20/2026-12-22"], ["2026-12-20..2026-12-22"], id="slash-range"),
        pytest.param(
            [date(2026, 5, 1), (date(2026, 5, 3), date(2026, 5, 4))],
            ["2026-05-01", "2026-05-03..2026-05-04"],
            id="dates-and-pairs",
        ),
        pytest.param(
            ["2026-01-01..2026-01-10", "2026-01-05..2026-01-20"],
            ["2026-01-01..2026-01-20"],
            id="overlapping-merged",
        ),
        pytest.param([], [], id="none"),
    ],
)
def test_dates_and_ranges_are_read_sorted_and_merged(entries: object, stored: list[str]) -> None:
    assert [str(r) for r in parse_dates(entries)] == stored  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        pytest.param("2026-13-01", "YYYY-MM-DD", id="no-such-month"),
        pytest.param("25/12/2026", "YYYY-MM-DD", id="day-first"),
        pytest.param("2026-12-26..2026-12-25", "ends before it starts", id="backwards"),
        pytest.param("2026-01-01..2026-01-02..2026-01-03", "YYYY-MM-DD", id="three-parts"),
        pytest.param(datetime(2026, 12, 25, tzinfo=UTC), "not an instant", id="an-instant"),
        pytest.param(20261225, "YYYY-MM-DD", id="a-number"),
    ],
)
def test_a_bad_date_is_refused_naming_it(entry: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message) as caught:
        parse_dates([entry])
    assert caught.value.field == "dates"


def test_a_slot_is_excluded_on_the_calendars_dates_in_its_zone() -> None:
    christmas = Calendar.create("xmas", timezone="Pacific/Auckland", dates=["2026-12-25"])

    # 11:00 UTC on the 24th is already the 25th in Auckland (UTC+13 in December).
    assert christmas.excludes(datetime(2026, 12, 24, 11, 0, tzinfo=UTC))
    assert not christmas.excludes(datetime(2026, 12, 24, 10, 59, tzinfo=UTC))
    assert christmas.excludes(datetime(2026, 12, 25, 10, 59, tzinfo=UTC))
    assert not christmas.excludes(datetime(2026, 12, 25, 11, 0, tzinfo=UTC))


def test_every_day_of_a_range_is_excluded_and_the_days_around_it_are_not() -> None:
    closed = Calendar.create("closed", dates=["2026-08-03..2026-08-07", "2026-08-10"])
    days = [datetime(2026, 8, 1, 12, tzinfo=UTC) + timedelta(days=n) for n in range(12)]

    excluded = [d.day for d in days if closed.excludes(d)]

    assert excluded == [3, 4, 5, 6, 7, 10]
    assert closed.day_count == 6
    assert closed.ranges == (
        DateRange(_d("2026-08-03"), _d("2026-08-07")),
        DateRange(_d("2026-08-10"), _d("2026-08-10")),
    )


def test_a_calendar_refuses_a_bad_name_or_zone_naming_the_field() -> None:
    with pytest.raises(ValidationError) as name:
        Calendar.create(" padded ")
    with pytest.raises(ValidationError) as zone:
        Calendar.create("ok", timezone="Mars/Olympus")
    assert (name.value.field, zone.value.field) == ("name", "timezone")


def test_preview_lists_the_fires_and_the_slots_the_calendar_removes_between_them() -> None:
    weekend = Calendar.create("weekend", dates=["2026-12-05..2026-12-06"])  # Saturday, Sunday
    daily = [datetime(2026, 12, 4, 9, tzinfo=UTC) + timedelta(days=n) for n in range(10)]

    slots = preview(iter(daily), weekend, 2)

    assert slots == [
        PreviewSlot(daily[0]),
        PreviewSlot(daily[1], "weekend"),
        PreviewSlot(daily[2], "weekend"),
        PreviewSlot(daily[3]),
    ]


@pytest.mark.parametrize(
    ("description", "code"),
    [
        pytest.param("Bank holidays\x1b]0;owned\x07", "U+001B", id="terminal-title"),
        pytest.param("ring\x07", "U+0007", id="bell"),
        pytest.param("closed\r\n2026-12-06 beat: sent 0 fire(s)", "U+000D", id="forged-log-line"),
        pytest.param("syaw\u202eyadiloh", "U+202E", id="right-to-left-override"),
    ],
)
def test_a_description_with_a_control_character_is_refused_as_a_name_is(
    description: str, code: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        Calendar.create("holidays", description=description)

    assert refused.value.field == "description"
    assert f"contains the control character {code} " in str(refused.value)


def test_a_description_may_hold_any_printable_text() -> None:
    text = "Jours fériés — 祝日 🎄 (UK & FR)"

    assert Calendar.create("holidays", description=text).description == text
