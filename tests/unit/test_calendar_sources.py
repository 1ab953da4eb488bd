"""An iCalendar file's all-day events as calendar dates: single events as they are; recurring ones
(RRULE, RDATE, minus EXDATE and the occurrences a RECURRENCE-ID moves or cancels) expanded within
the years asked for, refused without them; a rule finer than a day refused. The fixtures are the
small files in tests/unit/ics/."""

from __future__ import annotations

from datetime import datetime
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


# Hostile and malformed files: the years and the entry limit bound the work while expanding, and
# what cannot be read is one line naming the event and the property -------------------------------


def event(*lines: str, summary: str = "Closures", start: str = "20260105") -> str:
    """A calendar of one all-day event starting on ``start``, with ``lines`` added to it."""
    body = "\n".join(lines)
    return (
        "BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//celery-dbeat tests//EN\nBEGIN:VEVENT\n"
        f"UID:e\nSUMMARY:{summary}\nDTSTART;VALUE=DATE:{start}\n{body}\nEND:VEVENT\n"
        "END:VCALENDAR\n"
    ).replace("\n\n", "\n")


def expanded(text: str, years: str) -> list[str]:
    return [str(r) for r in parse_dates(ics_dates(text, parse_years(years)))]


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ("FREQ=DAILY;INTERVAL=0", "has a rule with INTERVAL=0: it must be 1 or more"),
        ("FREQ=DAILY;INTERVAL=-3", "has a rule with INTERVAL=-3: it must be 1 or more"),
        ("FREQ=WEEKLY;COUNT=0", "has a rule with COUNT=0: it must be 1 or more"),
        ("FREQ=DAILY;BYHOUR=9", "has a rule with BYHOUR: an all-day event repeats by day"),
        ("BYDAY=MO", "repeats without a FREQ"),
    ],
)
def test_a_rule_that_would_not_move_forward_or_is_finer_than_a_day_is_refused_at_once(
    rule: str, problem: str
) -> None:
    # INTERVAL=0 made dateutil search for ever, even within one year.
    with pytest.raises(ValidationError) as refused:
        expanded(event(f"RRULE:{rule}"), "2026")

    assert str(refused.value) == f"ics='Closures': {problem}" or problem in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_rule_that_never_matches_again_ends_with_no_day_within_the_years() -> None:
    # 30 February: dateutil alone searches up to the year 9999 (9 s); at most a 400-year cycle here.
    never = event("RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", start="20260101")

    with pytest.raises(ValidationError, match="has no all-day event within the years 2026-2125"):
        expanded(
            never.replace("DTSTART;VALUE=DATE:20260101", "DTSTART;VALUE=DATE:20250101"), "2026-2125"
        )


def test_the_entry_limit_stops_the_expansion_at_the_first_day_too_many() -> None:
    # 200 daily events over a century (24 KB) expanded every day before counting: 1.5 GB.
    events = "".join(
        f"BEGIN:VEVENT\nUID:e{n}\nSUMMARY:Daily {n}\nDTSTART;VALUE=DATE:20260101\n"
        "RRULE:FREQ=DAILY\nEND:VEVENT\n"
        for n in range(200)
    )
    text = f"BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//t//EN\n{events}END:VCALENDAR\n"

    with pytest.raises(ValidationError) as refused:
        ics_dates(text, parse_years("2026-2125"))

    assert str(refused.value) == (
        "ics='file': holds more than 10000 dates and ranges within the years 2026-2125, more "
        "than a calendar holds: give fewer years or a smaller file"
    )


@pytest.mark.parametrize(
    ("start", "rule", "years"),
    [
        ("19000226", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29", "2096-2104"),  # 2100 is no leap year
        ("15850101", "FREQ=MONTHLY;BYDAY=-1FR", "2026-2028"),
        ("19900101", "FREQ=WEEKLY;INTERVAL=3;BYDAY=TU,TH", "2026-2027"),
        ("20000103", "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1", "2026"),
        ("17000101", "FREQ=YEARLY;BYWEEKNO=53;BYDAY=TH", "2020-2030"),
        ("20100101", "FREQ=DAILY;INTERVAL=7;COUNT=1000", "2027-2029"),  # COUNT from DTSTART
        ("20240101", "FREQ=YEARLY;BYYEARDAY=-1;UNTIL=20271231", "2026-2030"),
        ("19700101", "FREQ=DAILY;INTERVAL=401", "2026-2125"),
    ],
)
def test_expanding_within_the_years_gives_the_days_of_the_whole_rule(
    start: str, rule: str, years: str
) -> None:
    # The oracle: dateutil over the whole rule from its DTSTART, kept within the years.
    from dateutil.rrule import rrulestr

    first, last = parse_years(years)[0], parse_years(years)[-1]
    whole = rrulestr(rule, dtstart=datetime.strptime(start, "%Y%m%d"))
    oracle = sorted(
        {o.date() for o in whole.between(datetime(first, 1, 1), datetime(last, 12, 31), inc=True)}
    )

    found = ics_dates(event(f"RRULE:{rule}", start=start), parse_years(years))

    assert [r.first for r in found] == [day for day in oracle if day.year >= first]
    assert all(r.first == r.last for r in found)


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("RECURRENCE-ID:notadate", "RECURRENCE-ID"),
        ("RDATE;VALUE=DATE:2026XX01", "RDATE"),
        ("EXDATE:tomorrow", "EXDATE"),
        ("RRULE:FREQ=DAILY;UNTIL=soon", "RRULE"),  # the part is in the message
        ("DURATION:P9999999D", "DURATION"),
    ],
)
def test_a_property_that_cannot_be_read_is_one_line_naming_the_event_and_the_property(
    line: str, name: str
) -> None:
    rule = "" if line.startswith(("RRULE", "RECURRENCE-ID")) else "RRULE:FREQ=YEARLY"

    with pytest.raises(ValidationError) as refused:
        expanded(event(rule, line, summary="Shutdown"), "2026")

    message = str(refused.value)
    assert message.startswith("ics='Shutdown': ")
    assert name in message
    assert "\n" not in message


def test_one_year_is_named_as_it_was_given() -> None:
    with pytest.raises(ValidationError, match=r"has no all-day event within the years 2010$"):
        days("rdates.ics", "2010")
