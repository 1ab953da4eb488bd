"""Dates for an exclusion calendar from elsewhere: a country's public holidays (the
:mod:`holidays` package, extra ``holidays``) or an iCalendar file's all-day events (the
:mod:`icalendar` package, extra ``ics``; its recurrences expanded by :mod:`dateutil.rrule`, which
icalendar itself depends on).

Pure: each reads what it is given (years, the file's bytes) and returns plain dates and ranges for
:meth:`celery_dbeat.calendars.Calendars.add`; what it cannot read faithfully (a timed event, a
recurring event without a bounded range of years, an unknown country) is refused with one line
that says what to do, and nothing is stored.

A recurring event (``RRULE``, ``RDATE``) is expanded only within the years asked for, minus its
``EXDATE`` and the occurrences that another ``VEVENT`` of its ``UID`` overrides
(``RECURRENCE-ID``: that event's own days are taken instead, none when it is cancelled). The years
bound the work: at most :data:`MAX_YEARS` of them, and a rule that repeats by day at the finest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

from .calendars import DateRange
from .errors import ValidationError

__all__ = ["MAX_YEARS", "holiday_dates", "ics_dates", "parse_years"]

#: Most years one ``--years`` range may span.
MAX_YEARS = 100
#: The rule frequencies an all-day event may repeat at.
_FREQUENCIES = ("DAILY", "WEEKLY", "MONTHLY", "YEARLY")


def parse_years(text: str) -> list[int]:
    """``2026`` or ``2026-2028`` (both included)."""
    found = re.fullmatch(r"\s*(\d{4})\s*(?:-\s*(\d{4})\s*)?", text or "")
    if found is None:
        raise ValidationError("years", text, "must be a year or a range such as 2026-2028")
    first = int(found.group(1))
    last = int(found.group(2) or first)
    if last < first or last - first >= MAX_YEARS:
        raise ValidationError("years", text, f"must run forward, over at most {MAX_YEARS} years")
    return list(range(first, last + 1))


def _import(module: str, extra: str) -> Any:
    try:
        return __import__(module)
    except ImportError:
        raise ImportError(
            f"the {module!r} package is needed for this: pip install 'celery-dbeat[{extra}]'"
        ) from None


def holiday_dates(country: str, years: list[int], subdiv: str | None = None) -> list[str]:
    """The public holidays of ``country`` (ISO 3166 code, e.g. ``GB``) and optionally its
    subdivision (``ENG``) in ``years``, as ``YYYY-MM-DD``."""
    holidays = _import("holidays", "holidays")
    try:
        found = holidays.country_holidays(country, subdiv=subdiv, years=years)
    except NotImplementedError:
        raise ValidationError(
            "country", country, "is not a country the holidays package knows (ISO code: GB, US)"
        ) from None
    except ValueError as exc:  # an unknown subdivision
        raise ValidationError("subdiv", subdiv, str(exc).split("\n")[0]) from None
    return sorted(day.isoformat() for day in found)


def ics_dates(text: str | bytes, years: Sequence[int] | None = None) -> list[DateRange]:
    """The days of the all-day events (``VEVENT`` whose ``DTSTART`` is a date) of an iCalendar
    file; ``DTEND`` is exclusive, as RFC 5545 says. With ``years``, only the days within them,
    and recurring events expanded there; without, a recurring event is refused. Timed events are
    refused."""
    icalendar = _import("icalendar", "ics")
    try:
        calendar = icalendar.Calendar.from_ical(text)
    except ValueError as exc:
        raise ValidationError("ics", "file", f"is not an iCalendar file: {exc}") from None
    window = None if not years else (date(min(years), 1, 1), date(max(years), 12, 31))
    events = list(calendar.walk("VEVENT"))
    moved = _overridden(events)
    ranges: list[DateRange] = []
    for event in events:
        if str(event.get("STATUS", "")).upper() == "CANCELLED":
            continue
        summary = str(event.get("SUMMARY", "an event"))
        start, days = _span(event, summary)
        if event.get("RRULE") is None and event.get("RDATE") is None:
            starts = [start]
        elif window is None:
            raise ValidationError(
                "ics",
                summary,
                "is a recurring event: give the years to take its days in (--years 2026-2028)",
            )
        else:
            skipped = moved.get(str(event.get("UID", "")), set())
            starts = _occurrences(event, summary, start, days, window, skipped)
        for first in starts:
            ranges += _clipped(DateRange(first, first + days - timedelta(days=1)), window)
    if not ranges and window is not None and events:
        span = f"{window[0].year}-{window[1].year}"
        raise ValidationError("ics", "file", f"has no all-day event within the years {span}")
    if not ranges:
        raise ValidationError("ics", "file", "holds no events")
    return ranges


def _span(event: Any, summary: str) -> tuple[date, timedelta]:
    """An all-day event's first day and how many days it lasts."""
    start = event.decoded("DTSTART", None)
    if start is None or isinstance(start, datetime) or not isinstance(start, date):
        raise ValidationError("ics", summary, "is not an all-day event (DTSTART must be a date)")
    end = event.decoded("DTEND", None)
    if isinstance(end, datetime):
        raise ValidationError("ics", summary, "ends at a time, not on a date")
    if end is None:
        duration = event.decoded("DURATION", None)
        end = start + (duration or timedelta(days=1))
    if not isinstance(end, date) or end <= start:
        raise ValidationError("ics", summary, "ends before it starts")
    return start, end - start


def _overridden(events: Iterable[Any]) -> dict[str, set[date]]:
    """Per ``UID``, the occurrences that a ``VEVENT`` with a ``RECURRENCE-ID`` replaces."""
    found: dict[str, set[date]] = {}
    for event in events:
        if event.get("RECURRENCE-ID") is not None:
            found.setdefault(str(event.get("UID", "")), set()).add(
                _day(event.decoded("RECURRENCE-ID"))
            )
    return found


def _day(value: date) -> date:
    """The date of a value (an instant: its UTC date when it has an offset)."""
    if isinstance(value, datetime):
        return (value.astimezone(timezone.utc) if value.tzinfo else value).date()
    return value


def _lines(prop: Any) -> list[Any]:
    """A property's lines: none, one, or the list icalendar gives for several."""
    return [] if prop is None else prop if isinstance(prop, list) else [prop]


def _dates(prop: Any) -> list[Any]:
    """The values of a date-list property (``RDATE``, ``EXDATE``) on all its lines."""
    return [value.dt for line in _lines(prop) for value in line.dts]


def _occurrences(
    event: Any,
    summary: str,
    start: date,
    days: timedelta,
    window: tuple[date, date],
    skipped: set[date],
) -> list[date]:
    """The first days of the occurrences of a recurring all-day event that touch ``window``."""
    icalendar = _import("icalendar", "ics")
    from dateutil.rrule import rrule, rruleset, rrulestr

    anchor = datetime.combine(start, time())
    occurrences = rruleset()
    occurrences.rdate(anchor)  # DTSTART is the first occurrence, whatever the rule (RFC 5545)
    for rule in _lines(event.get("RRULE")):
        parts = {key: list(value) for key, value in rule.items()}
        frequency = str((parts.get("FREQ") or [""])[0]).upper()
        if frequency not in _FREQUENCIES:
            raise ValidationError(
                "ics",
                summary,
                f"repeats {frequency or 'without a FREQ'}: an all-day event repeats DAILY, "
                "WEEKLY, MONTHLY or YEARLY",
            )
        if "UNTIL" in parts:  # a date, as the event's start is one (RFC 5545 3.3.10)
            parts["UNTIL"] = [_day(u) for u in parts["UNTIL"]]
        text = icalendar.vRecur(parts).to_ical().decode()
        try:
            parsed = rrulestr(text, dtstart=anchor)
        except ValueError as exc:
            problem = f"has a rule that cannot be read ({text}): {exc}"
            raise ValidationError("ics", summary, problem) from None
        assert isinstance(parsed, rrule)  # the text of one rule is one rule
        occurrences.rrule(parsed)
    for value in _dates(event.get("RDATE")):
        if isinstance(value, datetime) or not isinstance(value, date):
            raise ValidationError("ics", summary, "has an RDATE that is not a date")
        occurrences.rdate(datetime.combine(value, time()))
    for value in _dates(event.get("EXDATE")):
        if not isinstance(value, date):
            raise ValidationError("ics", summary, "has an EXDATE that is not a date")
        skipped = skipped | {_day(value)}
    for day in skipped:
        occurrences.exdate(datetime.combine(day, time()))
    first = datetime.combine(window[0], time()) - days + timedelta(days=1)
    last = datetime.combine(window[1], time())
    return sorted({o.date() for o in occurrences.between(first, last, inc=True)})


def _clipped(found: DateRange, window: tuple[date, date] | None) -> list[DateRange]:
    """``found`` cut to ``window`` (nothing when outside it; all of it without a window)."""
    if window is None:
        return [found]
    first, last = max(found.first, window[0]), min(found.last, window[1])
    return [DateRange(first, last)] if first <= last else []
