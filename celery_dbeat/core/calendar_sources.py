"""Dates for an exclusion calendar from elsewhere: a country's public holidays (the
:mod:`holidays` package, extra ``holidays``) or an iCalendar file's all-day events (the
:mod:`icalendar` package, extra ``ics``; its recurrences expanded by :mod:`dateutil.rrule`, which
icalendar itself depends on).

Pure: each reads what it is given (years, the file's bytes) and returns plain dates and ranges for
:meth:`celery_dbeat.api.Calendars.add`; what it cannot read faithfully (a timed event, a
recurring event without a bounded range of years, an unknown country) is refused with one line
that says what to do, and nothing is stored.

A recurring event (``RRULE``, ``RDATE``) is expanded only within the years asked for, minus its
``EXDATE`` and the occurrences that another ``VEVENT`` of its ``UID`` overrides
(``RECURRENCE-ID``: that event's own days are taken instead, none when it is cancelled). The years
and the entry limit bound the work while expanding, whatever the file holds: at most
:data:`MAX_YEARS` of them; a rule that repeats by day at the finest, forward (``INTERVAL`` of 1
or more); expansion lazily within the years, stopped at the
:data:`~celery_dbeat.core.calendars.MAX_DATE_ENTRIES`-th occurrence and one; and a rule that
never matches again searched through at most one 400-year cycle of the Gregorian calendar, which
repeats itself every 400 years (see :func:`_occurrences`). A property that cannot be read (a
``RECURRENCE-ID``, ``RDATE``, ``EXDATE`` or ``UNTIL`` that is not a date, a ``DURATION`` past
year 9999) is refused in one line naming the event and the property.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

from .calendars import MAX_DATE_ENTRIES, DateRange
from .errors import ValidationError

__all__ = ["MAX_YEARS", "holiday_dates", "ics_dates", "parse_years"]

#: Most years one ``--years`` range may span.
MAX_YEARS = 100
#: The rule frequencies an all-day event may repeat at.
_FREQUENCIES = ("DAILY", "WEEKLY", "MONTHLY", "YEARLY")
#: The rule parts of RFC 5545 that a rule of days may hold (not BYHOUR, BYMINUTE, BYSECOND:
#: finer than a day; not dateutil's BYEASTER, whose dates do not repeat every 400 years).
_RULE_PARTS = frozenset(
    {"FREQ", "UNTIL", "COUNT", "INTERVAL", "BYDAY", "BYMONTHDAY", "BYYEARDAY", "BYWEEKNO"}
    | {"BYMONTH", "BYSETPOS", "WKST"}
)
#: The Gregorian calendar repeats itself (leap years, weekdays, week numbers) every 400 years.
_CYCLE = 400


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
    refused, and so is a file of more than :data:`MAX_DATE_ENTRIES` days and ranges (counted
    while expanding: the expansion stops at the first one too many)."""
    icalendar = _import("icalendar", "ics")
    try:
        calendar = icalendar.Calendar.from_ical(text)
    except ValueError as exc:
        raise ValidationError("ics", "file", f"is not an iCalendar file: {exc}") from None
    window = None if not years else (date(min(years), 1, 1), date(max(years), 12, 31))
    events = list(calendar.walk("VEVENT"))
    for event in events:
        _refuse_dropped(event)
    moved = _overridden(events)
    ranges: list[DateRange] = []
    for event in events:
        if str(event.get("STATUS", "")).upper() == "CANCELLED":
            continue
        summary = str(event.get("SUMMARY", "an event"))
        start, days = _span(event, summary)
        if event.get("RRULE") is None and event.get("RDATE") is None:
            starts: Iterable[date] = [start]
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
            ranges += _clipped(first, days, window)
            if len(ranges) > MAX_DATE_ENTRIES:
                within = "" if window is None else f" within the years {_span_text(window)}"
                raise ValidationError(
                    "ics",
                    "file",
                    f"holds more than {MAX_DATE_ENTRIES} dates and ranges{within}, more than a "
                    "calendar holds: give fewer years or a smaller file",
                )
    if not ranges and window is not None and events:
        span = _span_text(window)
        raise ValidationError("ics", "file", f"has no all-day event within the years {span}")
    if not ranges:
        raise ValidationError("ics", "file", "holds no events")
    return ranges


def _span_text(window: tuple[date, date]) -> str:
    """The years of ``window`` as ``--years`` takes them: ``2026`` or ``2026-2028``."""
    first, last = window[0].year, window[1].year
    return str(first) if first == last else f"{first}-{last}"


def _unreadable(summary: str, name: str, problem: object) -> ValidationError:
    """The error of a property of event ``summary`` that cannot be read."""
    text = str(problem).strip()
    # icalendar's "Cannot access 'dts' on broken property 'RDATE' (expected ...): why": the why.
    text = re.sub(r"^Cannot access .*? on broken property .*?\): ", "", text)
    first = text.splitlines()[0] if text else "no value"
    return ValidationError("ics", summary, f"its {name} cannot be read: {first}")


#: The properties of an event this module reads.
_READ = frozenset({"DTSTART", "DTEND", "DURATION", "RRULE", "RDATE", "EXDATE", "RECURRENCE-ID"})


def _refuse_dropped(event: Any) -> None:
    """Refuse, as :func:`_decoded` does, a property this module reads that icalendar could not
    parse: icalendar before 6.1 drops it from the event and notes it in ``errors`` (later ones
    keep it as a ``vBroken``), which would import the event without it."""
    for name, problem in getattr(event, "errors", None) or ():
        if str(name).upper() in _READ:
            raise _unreadable(str(event.get("SUMMARY", "an event")), str(name).upper(), problem)


def _decoded(event: Any, name: str, summary: str) -> Any:
    """The value of property ``name`` (``None`` when absent); refused in one line when the file
    holds something icalendar could not read as its type (a ``vBroken``)."""
    if event.get(name) is None:
        return None
    try:
        value = event.decoded(name)
    except (ValueError, TypeError) as exc:
        raise _unreadable(summary, name, exc) from None
    if isinstance(value, (str, bytes)):
        raise _unreadable(summary, name, value if isinstance(value, str) else value.decode())
    return value


def _span(event: Any, summary: str) -> tuple[date, timedelta]:
    """An all-day event's first day and how many days it lasts."""
    start = _decoded(event, "DTSTART", summary)
    if start is None or isinstance(start, datetime) or not isinstance(start, date):
        raise ValidationError("ics", summary, "is not an all-day event (DTSTART must be a date)")
    end = _decoded(event, "DTEND", summary)
    if isinstance(end, datetime):
        raise ValidationError("ics", summary, "ends at a time, not on a date")
    if end is None:
        duration = _decoded(event, "DURATION", summary)
        if duration is not None and not isinstance(duration, timedelta):
            raise _unreadable(summary, "DURATION", duration)
        try:
            end = start + (duration or timedelta(days=1))
        except OverflowError:
            raise ValidationError(
                "ics", summary, f"has a DURATION ({duration}) that ends after the year 9999"
            ) from None
    if not isinstance(end, date) or end <= start:
        raise ValidationError("ics", summary, "ends before it starts")
    return start, end - start


def _overridden(events: Iterable[Any]) -> dict[str, set[date]]:
    """Per ``UID``, the occurrences that a ``VEVENT`` with a ``RECURRENCE-ID`` replaces."""
    found: dict[str, set[date]] = {}
    for event in events:
        summary = str(event.get("SUMMARY", "an event"))
        value = _decoded(event, "RECURRENCE-ID", summary)
        if value is None:
            continue
        if not isinstance(value, date):
            raise _unreadable(summary, "RECURRENCE-ID", value)
        found.setdefault(str(event.get("UID", "")), set()).add(_day(value))
    return found


def _day(value: date) -> date:
    """The date of a value (an instant: its UTC date when it has an offset)."""
    if isinstance(value, datetime):
        return (value.astimezone(timezone.utc) if value.tzinfo else value).date()
    return value


def _lines(prop: Any) -> list[Any]:
    """A property's lines: none, one, or the list icalendar gives for several."""
    return [] if prop is None else prop if isinstance(prop, list) else [prop]


def _dates(event: Any, name: str, summary: str) -> list[date]:
    """The values of a date-list property (``RDATE``, ``EXDATE``) on all its lines: each a date
    (an instant of ``EXDATE``: its date), refused in one line otherwise."""
    found: list[date] = []
    for line in _lines(event.get(name)):
        try:
            values = [value.dt for value in line.dts]
        except (AttributeError, ValueError, TypeError) as exc:
            raise _unreadable(summary, name, exc) from None
        for value in values:
            if name == "RDATE" and isinstance(value, datetime):
                raise ValidationError("ics", summary, "has an RDATE that is not a date")
            if not isinstance(value, date):
                raise ValidationError("ics", summary, f"has an {name} that is not a date")
            found.append(_day(value))
    return found


def _moved(day: date, years: int) -> date:
    """``day`` ``years`` later: exact for a multiple of :data:`_CYCLE` (29 February included)."""
    return day.replace(year=day.year + years)


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time())


def _rule(rule: Any, summary: str) -> dict[str, list[Any]]:
    """The parts of one ``RRULE`` line, checked: a frequency of days at the finest, a positive
    ``INTERVAL``, only the parts of RFC 5545 that a rule of days may hold, a date ``UNTIL``."""
    try:
        parts = {str(key).upper(): list(value) for key, value in rule.items()}
    except (AttributeError, ValueError, TypeError) as exc:
        raise _unreadable(summary, "RRULE", exc) from None
    frequency = str((parts.get("FREQ") or [""])[0]).upper()
    if frequency not in _FREQUENCIES:
        raise ValidationError(
            "ics",
            summary,
            f"repeats {frequency or 'without a FREQ'}: an all-day event repeats DAILY, "
            "WEEKLY, MONTHLY or YEARLY",
        )
    unknown = sorted(set(parts) - _RULE_PARTS)
    if unknown:
        raise ValidationError(
            "ics",
            summary,
            f"has a rule with {unknown[0]}: an all-day event repeats by day at the finest, "
            f"with the parts {', '.join(sorted(_RULE_PARTS))}",
        )
    interval = (parts.get("INTERVAL") or [1])[0]
    if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
        raise ValidationError(
            "ics", summary, f"has a rule with INTERVAL={interval}: it must be 1 or more"
        )
    count = (parts.get("COUNT") or [1])[0]
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValidationError(
            "ics", summary, f"has a rule with COUNT={count}: it must be 1 or more"
        )
    if "UNTIL" in parts:  # a date, as the event's start is one (RFC 5545 3.3.10)
        until = parts["UNTIL"]
        if len(until) != 1 or not isinstance(until[0], date):
            raise _unreadable(summary, "UNTIL", until[0] if until else "")
        parts["UNTIL"] = [_day(until[0])]
    return parts


def _occurrences(
    event: Any,
    summary: str,
    start: date,
    days: timedelta,
    window: tuple[date, date],
    skipped: set[date],
) -> Iterator[date]:
    """The first days of the occurrences of a recurring all-day event that touch ``window``, in
    order, computed as they are taken (the caller stops at its limit).

    dateutil searches for a rule's next occurrence up to the year 9999, for ever when it has
    none (``BYMONTH=2;BYMONTHDAY=30``). As the calendar repeats every 400 years, the search runs
    in time moved forward by whole cycles so that the window ends in the last cycle before 9999,
    and a rule without ``COUNT`` starts at most ``400 * INTERVAL`` years before the window (the
    same occurrences, from a later one): the search costs at most a few cycles, whatever the
    rule. A rule with ``COUNT`` counts from its ``DTSTART``, so it is not moved."""
    icalendar = _import("icalendar", "ics")
    from dateutil.rrule import rrule, rruleset, rrulestr

    rules = [_rule(rule, summary) for rule in _lines(event.get("RRULE"))]
    rdates = _dates(event, "RDATE", summary)
    excluded = skipped | set(_dates(event, "EXDATE", summary))
    earliest = window[0] - days + timedelta(days=1)  # an occurrence from here reaches the window
    latest = window[1]
    shift = (9999 - latest.year) // _CYCLE * _CYCLE

    occurrences = rruleset()
    # DTSTART is the first occurrence, whatever the rule (RFC 5545).
    for day in [start, *rdates]:
        if earliest <= day <= latest:
            occurrences.rdate(_midnight(_moved(day, shift)))
    for day in excluded:
        if earliest <= day <= latest:
            occurrences.exdate(_midnight(_moved(day, shift)))
    for parts in rules:
        if start > latest or ("UNTIL" in parts and parts["UNTIL"][0] < earliest):
            continue  # no occurrence reaches the window
        anchor = start
        if "COUNT" not in parts:
            block = _CYCLE * parts.get("INTERVAL", [1])[0]
            anchor = _moved(start, max(0, (earliest.year - start.year) // block - 1) * block)
        if "UNTIL" in parts:
            parts = dict(parts, UNTIL=[_moved(min(parts["UNTIL"][0], latest), shift)])
        text = icalendar.vRecur(parts).to_ical().decode()
        try:
            parsed = rrulestr(text, dtstart=_midnight(_moved(anchor, shift)))
        except (ValueError, OverflowError) as exc:
            problem = f"has a rule that cannot be read ({text}): {exc}"
            raise ValidationError("ics", summary, problem) from None
        assert isinstance(parsed, rrule)  # the text of one rule is one rule
        occurrences.rrule(parsed)
    last = _midnight(_moved(latest, shift))
    previous = None
    for found in occurrences.xafter(_midnight(_moved(earliest, shift)), inc=True):
        if found > last:
            return
        day = _moved(found.date(), -shift)
        if day != previous:  # a rule and an RDATE on the same day
            yield day
        previous = day


def _clipped(first: date, days: timedelta, window: tuple[date, date] | None) -> list[DateRange]:
    """The days of an occurrence from ``first`` lasting ``days``, cut to ``window`` (nothing
    when outside it; all of it without a window)."""
    try:
        last = first + (days - timedelta(days=1))
    except OverflowError:
        last = date.max
    if window is None:
        return [DateRange(first, last)]
    first, last = max(first, window[0]), min(last, window[1])
    return [DateRange(first, last)] if first <= last else []
