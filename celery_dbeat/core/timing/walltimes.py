"""The wall-clock times a cron expression matches, by arithmetic: for a zone's stretches without
offset changes, where a wall time and a UTC instant correspond one to one (:mod:`.cron` walks
the reach of each change with croniter and its DST rules).

A matching day is croniter's first match from that day's midnight on (days without one are
passed over in a single step), remembered per expression and day; a day's times are the
combinations of the expanded hour, minute and second fields, which every matching day shares.
"""

from __future__ import annotations

import copy
import functools
from bisect import bisect_left, bisect_right
from collections.abc import Generator, Iterator, Sequence
from datetime import date, datetime, time, timedelta, timezone

from croniter import CroniterBadDateError, croniter

__all__ = ["count", "expanded", "instants"]

UTC = timezone.utc
_SECOND = timedelta(seconds=1)
_DAY = timedelta(days=1)


def instants(
    fields: tuple[str, ...], day_or: bool, low: datetime, high: datetime, offset: timedelta
) -> Generator[datetime, None, bool]:
    """The matching wall times whose instants lie in ``(low, high]`` (aware), a stretch in which
    the zone is ``offset`` from UTC throughout, as aware UTC instants, ascending. Returns
    ``False`` once no day matches any more."""
    wall_low = (low.astimezone(UTC) + offset).replace(tzinfo=None)
    wall_high = (high.astimezone(UTC) + offset).replace(tzinfo=None)
    hours, minutes, seconds = _times_of(fields, day_or)
    day = wall_low.date()
    while (found := _matching_day(fields, day_or, day)) is not None:
        if found > wall_high.date():
            return True
        midnight = datetime.combine(found, time.min)
        # A whole second t is after wall_low (which may hold microseconds) if t > its floor.
        floor = _seconds_of_day(wall_low) if found == wall_low.date() else -1
        for second in _day_times(hours, minutes, seconds, floor):
            wall = midnight + timedelta(seconds=second)
            if wall > wall_high:
                return True
            yield (wall - offset).replace(tzinfo=UTC)
        day = found + _DAY
    return False


def count(fields: tuple[str, ...], day_or: bool, after: datetime, until: datetime) -> int:
    """How many matching wall times (naive, whole seconds) lie in ``(after, until]``: day by
    day, each day by arithmetic over the hour, minute and second fields."""
    hours, minutes, seconds = _times_of(fields, day_or)
    first = _seconds_of_day(after.replace(microsecond=0))
    last = _seconds_of_day(until.replace(microsecond=0))
    total = 0
    day = after.date()
    while day <= until.date():
        found = _matching_day(fields, day_or, day)
        if found is None or found > until.date():
            break
        day = found
        low = first if day == after.date() else -1
        high = last if day == until.date() else 86_399
        total += _up_to(hours, minutes, seconds, high) - _up_to(hours, minutes, seconds, low)
        day += _DAY
    return total


@functools.lru_cache(maxsize=4096)
def expanded(fields: tuple[str, ...], day_or: bool) -> croniter:
    """A parsed expression to copy (``copy.copy``) and walk; never walked itself."""
    return croniter(" ".join(fields), datetime(2000, 1, 1), day_or=day_or)


@functools.lru_cache(maxsize=16384)
def _matching_day(fields: tuple[str, ...], day_or: bool, day: date) -> date | None:
    """The first day from ``day`` on that the expression's day and month fields match (``None``:
    none is left). Remembered: planning asks about the same few days of the same few
    expressions again and again, and each croniter step costs ~0.1 ms."""
    walker = copy.copy(expanded(fields, day_or))
    walker.set_current(datetime.combine(day, time.min) - _SECOND, force=True)
    try:
        found: datetime = walker.get_next(datetime)
    except CroniterBadDateError:
        return None
    return found.date()


@functools.lru_cache(maxsize=4096)
def _times_of(fields: tuple[str, ...], day_or: bool) -> tuple[list[int], list[int], list[int]]:
    """The hours, minutes and seconds the expression matches, each ascending."""
    return _time_fields(expanded(fields, day_or).expanded)


def _time_fields(
    fields: Sequence[Sequence[int | str]],
) -> tuple[list[int], list[int], list[int]]:
    def values(field: Sequence[int | str], size: int) -> list[int]:
        return list(range(size)) if "*" in field else sorted(int(v) for v in field)

    seconds = values(fields[5], 60) if len(fields) > 5 else [0]
    return values(fields[1], 24), values(fields[0], 60), seconds


def _day_times(
    hours: list[int], minutes: list[int], seconds: list[int], floor: int
) -> Iterator[int]:
    """The seconds of a day after ``floor`` that the hour, minute and second fields match,
    ascending."""
    for hour in hours:
        if hour * 3600 + 3599 <= floor:
            continue
        for minute in minutes:
            base = hour * 3600 + minute * 60
            if base + 59 <= floor:
                continue
            for second in seconds:
                if base + second > floor:
                    yield base + second


def _seconds_of_day(wall: datetime) -> int:
    return wall.hour * 3600 + wall.minute * 60 + wall.second


def _up_to(hours: list[int], minutes: list[int], seconds: list[int], limit: int) -> int:
    """How many (hour, minute, second) combinations fall at or before second ``limit`` of a
    day."""
    if limit < 0:
        return 0
    hour, rest = divmod(limit, 3600)
    minute, second = divmod(rest, 60)
    per_minute, per_hour = len(seconds), len(minutes) * len(seconds)
    total = bisect_left(hours, hour) * per_hour
    if hours and bisect_right(hours, hour) > bisect_left(hours, hour):
        total += bisect_left(minutes, minute) * per_minute
        if bisect_right(minutes, minute) > bisect_left(minutes, minute):
            total += bisect_right(seconds, second)
    return total
