"""Exclusion calendars: named sets of dates, in a time zone, on which a schedule does not fire.

Pure: no SQL, no clock. A :class:`Calendar` is read from its row by the store and handed to
planning, which asks :meth:`Calendar.excludes` of each slot that passes: an excluded slot is not
sent, not missed, and recorded as skipped with the calendar's name (``SEMANTICS.md``). A slot is
excluded when its date, in the calendar's zone, falls in one of the calendar's ranges, whatever
the schedule's own zone; every beat reads the same row, so every beat excludes the same slots.

Dates are typed as ``YYYY-MM-DD`` or ranges ``YYYY-MM-DD..YYYY-MM-DD`` (both ends included; an
ISO-8601 ``/`` works too) and stored in that form, merged and sorted.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

from .errors import ValidationError
from .suggestions import did_you_mean
from .text import refuse_control_characters
from .timing.cron import load_zone
from .timing.dst import DstNote

__all__ = [
    "LOOK_AHEAD",
    "MAX_DATE_ENTRIES",
    "MAX_NAME",
    "Calendar",
    "DateRange",
    "PreviewSlot",
    "check_calendar_name",
    "parse_dates",
    "preview",
    "stored_dates",
    "unknown_calendar",
]

#: Longest calendar name (the ``dbeat_calendars.name`` column, and ``dbeat_schedules.calendar``).
MAX_NAME = 200
#: Most dates and ranges one calendar holds: enough for decades of any country's holidays.
MAX_DATE_ENTRIES = 10_000
#: Most slots :func:`preview` looks at before it says there are no more.
LOOK_AHEAD = 100_000

_RANGE_SEP = re.compile(r"\.\.|/")


@dataclass(frozen=True, order=True)
class DateRange:
    """From ``first`` to ``last``, both included."""

    first: date
    last: date

    def __str__(self) -> str:
        if self.first == self.last:
            return self.first.isoformat()
        return f"{self.first.isoformat()}..{self.last.isoformat()}"


def check_calendar_name(value: object, field_name: str = "name") -> str:
    """A calendar's name: non-empty printable text of at most :data:`MAX_NAME` characters."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field_name, value, "must be a non-empty calendar name")
    if len(value) > MAX_NAME:
        raise ValidationError(field_name, value, f"is longer than {MAX_NAME} characters")
    if value != value.strip() or not value.isprintable():
        raise ValidationError(
            field_name, value, "must be printable, without leading or trailing spaces"
        )
    return value


def unknown_calendar(name: str, known: Iterable[str] = ()) -> ValidationError:
    """The error of a schedule naming a calendar that does not exist, on every surface, with the
    name of ``known`` (the calendars there are) it most likely meant."""
    return ValidationError(
        "calendar",
        name,
        f"no calendar has this name{did_you_mean(name, known)} (add it: dbeat calendar add)",
    )


def stored_dates(dates: str | None) -> list[str]:
    """The dates and ranges of a ``dbeat_calendars`` row's ``dates`` column, as the admins show
    them (the column as written, if it is no JSON list)."""
    try:
        entries = json.loads(dates or "")
    except ValueError:
        return [str(dates)]
    return [str(d) for d in entries] if isinstance(entries, list) else [str(dates)]


def _date(text: str, entry: object) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValidationError(
            "dates", entry, "must be YYYY-MM-DD or a range YYYY-MM-DD..YYYY-MM-DD"
        ) from None


def _range(entry: object) -> DateRange:
    if isinstance(entry, DateRange):
        return entry
    if isinstance(entry, datetime):
        raise ValidationError("dates", entry, "must be a date, not an instant")
    if isinstance(entry, date):
        return DateRange(entry, entry)
    if isinstance(entry, (tuple, list)) and len(entry) == 2:
        first, last = (_range(part).first for part in entry)
        bounds = (first, last)
    elif isinstance(entry, str):
        parts = _RANGE_SEP.split(entry.strip())
        if len(parts) > 2:
            _date("", entry)
        bounds = (_date(parts[0], entry), _date(parts[-1], entry))
    else:
        raise ValidationError(
            "dates", entry, "must be YYYY-MM-DD or a range YYYY-MM-DD..YYYY-MM-DD"
        )
    if bounds[1] < bounds[0]:
        raise ValidationError("dates", entry, "ends before it starts")
    return DateRange(*bounds)


def parse_dates(entries: Iterable[object] | str) -> tuple[DateRange, ...]:
    """Dates and ranges (text, several to a string separated by commas or spaces; :class:`date`;
    pairs), sorted, with overlapping and adjacent ones
    merged. Raises :class:`ValidationError` naming the first bad entry."""
    if isinstance(entries, str):
        entries = [entries]
    typed: list[object] = []
    for entry in entries:
        # Text may hold several, separated by commas or spaces (as typed on a command line).
        if isinstance(entry, str):
            typed += [e for e in re.split(r"[,\s]+", entry) if e]
        else:
            typed.append(entry)
    ranges = sorted(_range(entry) for entry in typed)
    if len(ranges) > MAX_DATE_ENTRIES:
        raise ValidationError(
            "dates", len(ranges), f"holds more than {MAX_DATE_ENTRIES} dates and ranges"
        )
    merged: list[DateRange] = []
    for r in ranges:
        if merged and r.first <= merged[-1].last + timedelta(days=1):
            merged[-1] = DateRange(merged[-1].first, max(merged[-1].last, r.last))
        else:
            merged.append(r)
    return tuple(merged)


@dataclass(frozen=True)
class Calendar:
    """A named exclusion calendar, as stored (``version`` is bumped by every edit)."""

    name: str
    timezone: str
    ranges: tuple[DateRange, ...]
    description: str = ""
    version: int = 1
    _zone: ZoneInfo = field(init=False, repr=False, compare=False)
    _firsts: list[date] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_zone", load_zone(self.timezone))
        object.__setattr__(self, "_firsts", [r.first for r in self.ranges])

    @classmethod
    def create(
        cls,
        name: str,
        *,
        timezone: str = "UTC",
        dates: Iterable[object] | str = (),
        description: str | None = None,
        version: int = 1,
    ) -> Calendar:
        """Validate every field; raise :class:`ValidationError` naming the first bad one."""
        check_calendar_name(name)
        load_zone(timezone)
        if description is not None:
            if not isinstance(description, str):
                raise ValidationError("description", description, "must be text")
            refuse_control_characters("description", description)
        return cls(name, timezone, parse_dates(dates), description or "", version)

    def excludes(self, slot: datetime) -> bool:
        """Whether ``slot`` (an aware instant) falls on one of the calendar's dates, in its zone."""
        day = slot.astimezone(self._zone).date()
        i = bisect.bisect_right(self._firsts, day) - 1
        return i >= 0 and self.ranges[i].last >= day

    def excluded_since(self, slot: datetime) -> datetime | None:
        """When the run of excluded dates ``slot`` falls on begins (midnight of its first date in
        the calendar's zone, aware), or ``None`` if ``slot`` is not excluded: a walk back over
        F(S) steps over a whole range at once, not one slot at a time."""
        day = slot.astimezone(self._zone).date()
        i = bisect.bisect_right(self._firsts, day) - 1
        if i < 0 or self.ranges[i].last < day:
            return None
        return datetime.combine(self.ranges[i].first, time(0), tzinfo=self._zone)

    @property
    def dates(self) -> list[str]:
        """The dates and ranges as typed and stored."""
        return [str(r) for r in self.ranges]

    @property
    def day_count(self) -> int:
        return sum((r.last - r.first).days + 1 for r in self.ranges)


@dataclass(frozen=True)
class PreviewSlot:
    """A slot of a schedule and, if its calendar excludes it, that calendar's name; and the DST
    changes that moved it (or that made it a wall time that happened twice)."""

    slot: datetime
    excluded_by: str | None = None
    dst: tuple[DstNote, ...] = ()


def preview(
    slots: Iterable[datetime], calendar: Calendar | None, count: int, limit: int = LOOK_AHEAD
) -> list[PreviewSlot]:
    """The first ``count`` of ``slots`` that ``calendar`` leaves (the fires), with the slots it
    removes among them: at most ``count`` of those are listed, the others passed over (a dense
    schedule's excluded day would list thousands). Looks at most at ``limit`` slots."""
    shown: list[PreviewSlot] = []
    fires = removed = 0
    for slot in islice(slots, limit):
        if fires >= count:
            break
        if calendar is not None and calendar.excludes(slot):
            if removed < count:
                shown.append(PreviewSlot(slot, calendar.name))
            removed += 1
        else:
            shown.append(PreviewSlot(slot))
            fires += 1
    return shown
