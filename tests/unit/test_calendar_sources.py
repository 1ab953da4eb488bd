"""An iCalendar file's all-day events as calendar dates: single events as they are; recurring ones
(RRULE, RDATE, minus EXDATE and the occurrences a RECURRENCE-ID moves or cancels) expanded within
the years asked for, refused without them; a rule finer than a day refused. The fixtures are the
small files in tests/unit/ics/."""

from __future__ import annotations

from pathlib import Path

import pytest

from celery_dbeat.core.calendar_sources import ics_dates, parse_years
from celery_dbeat.core.calendars import parse_dates
from celery_dbeat.core.errors import ValidationError

ICS = Path(__file__).parent / "ics"


def days(fixture: str, years: str | None) -> list[str]:
    """The dates ``fixture`` yields for ``years`` (``2026-2027``), merged as a calendar stores
    them."""
    found = ics_dates((ICS / fixture).read_bytes(), None if years is None else parse_years(years))
    return [str(r) for r in parse_dates(found)]


@pytest.mark.parametrize(
    ("fixture", "years", "expected"),
    [
        pytest.param(
            "yearly.ics",
            "2026-2028",
            # Christmas every year (no end); Boxing Day but 2027 (EXDATE), until 2028 (a UTC
            # UNTIL on a date rule); the one-off of 2027; not the 2035 one, outside the years.
            ["2026-12-25..2026-12-26", "2027-06-01", "2027-12-25", "2028-12-25..2028-12-26"],
            id="yearly-exdate-until",
        ),
        pytest.param(
            "yearly.ics",
            "2029",
            ["2029-12-25"],  # Boxing Day's rule ended in 2028
            id="yearly-after-until",
        ),
        pytest.param(
            "overrides.ics",
            "2019-2022",
            # The first Monday of May, but 2020's moved to Friday 8 (VE Day) and 2021's cancelled.
            ["2019-05-06", "2020-05-08", "2022-05-02"],
            id="recurrence-id-moved-and-cancelled",
        ),
        pytest.param(
            "rdates.ics",
            "2026-2027",
            ["2026-01-02", "2026-04-03", "2027-03-26"],  # RDATE on two lines, one EXDATE
            id="rdate-exdate",
        ),
        pytest.param(
            "shutdown.ics",
            "2026-2027",
            # Three days from each 30 December, cut at the years' ends.
            ["2026-01-01", "2026-12-30..2027-01-01", "2027-12-30..2027-12-31"],
            id="multi-day-across-years",
        ),
        pytest.param(
            "shutdown.ics",
            "2034-2035",
            ["2034-01-01"],  # COUNT=10: the last starts 2033-12-30 and reaches into 2034
            id="count",
        ),
    ],
)
def test_recurring_all_day_events_are_expanded_within_the_years(
    fixture: str, years: str, expected: list[str]
) -> None:
    assert days(fixture, years) == expected


@pytest.mark.parametrize("fixture", ["yearly.ics", "overrides.ics", "rdates.ics"])
def test_a_recurring_event_without_years_is_refused_naming_it_and_what_to_give(
    fixture: str,
) -> None:
    with pytest.raises(ValidationError) as refused:
        ics_dates((ICS / fixture).read_bytes())

    assert refused.value.field == "ics"
    assert "is a recurring event: give the years to take its days in (--years 2026-2028)" in str(
        refused.value
    )


def test_a_rule_finer_than_a_day_is_refused() -> None:
    with pytest.raises(ValidationError, match="repeats HOURLY: an all-day event repeats DAILY"):
        days("hourly.ics", "2026")


def test_a_file_with_no_day_within_the_years_is_refused_saying_so() -> None:
    with pytest.raises(ValidationError, match="has no all-day event within the years 2010-2011"):
        days("rdates.ics", "2010-2011")


def test_single_events_are_taken_whole_without_years() -> None:
    text = (ICS / "yearly.ics").read_text()
    singles = text.replace("RRULE:FREQ=YEARLY;UNTIL=20281226T000000Z\n", "").replace(
        "RRULE:FREQ=YEARLY\n", ""
    )

    found = [str(r) for r in parse_dates(ics_dates(singles))]

    # EXDATE without a rule excludes nothing: the events are single.
    assert found == ["2020-12-25..2020-12-26", "2027-06-01", "2035-01-01"]
