"""``cron`` specs evaluated in an IANA zone, with cron(8)'s DST rules by default.

croniter only walks naive local wall-clock times; this module decides what each wall-clock time
means in UTC, so DST behaviour is ours (``SEMANTICS.md``), not the library's:

* fixed-time expressions (minute and hour fields both not starting with ``*``): a slot in the
  spring-forward gap fires once at the end of the gap (``gap_end``); a slot in the repeated
  fall-back hour fires once, at its first occurrence (``first``);
* wildcard expressions follow the real clock: gap minutes do not exist (``skip``), repeated
  minutes fire in both copies (``both``);
* several local slots that resolve to the same UTC instant fire once.

``dst_gap`` and ``dst_fold`` override the defaults per schedule.
"""

from __future__ import annotations

import copy
import enum
import functools
import heapq
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, CroniterError, croniter

from ..errors import ValidationError

__all__ = ["HOST_DEPENDENT_ZONE", "CronSpec", "DstFold", "DstGap", "load_zone"]

UTC = timezone.utc

#: Aliases, expanded before classification (so ``@hourly`` is a wildcard expression).
ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
#: Column sizes of the stored expression and zone name.
MAX_EXPRESSION = 255
MAX_ZONE = 64
FIELD_NAMES = ("minute", "hour", "day of month", "month", "day of week", "second")
# Random ("R") and hashed ("H") fields would give each beat a different slot.
_NONDETERMINISTIC = re.compile(r"^[rh](\(|/|$)")
_RANGE = re.compile(r"^([0-9a-z]+)-([0-9a-z]+)(?:/\d+)?$")
# A step from a single start value, "N/S": cronie's reading, N-<field max>/S.
_START_STEP = re.compile(r"^([0-9a-z]+)/(\d+)$")
#: Highest value of each field (minute, hour, day of month, month, day of week, second).
_FIELD_MAX = (59, 23, 31, 12, 6, 59)
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1
    )
}
_WEEKDAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# Offset changes are looked for this far on either side of the instant a walk starts from.
_TRANSITION_REACH = timedelta(days=1)
# Offset changes between two instants are looked for at this spacing (tzdb's changes of one zone
# lie days apart).
_TRANSITION_PROBE = timedelta(hours=6)
_SECOND = timedelta(seconds=1)
_DAY = timedelta(days=1)


class DstGap(str, enum.Enum):
    """What a slot whose wall-clock time falls in a spring-forward gap does."""

    GAP_END = "gap_end"  #: fire once at the end of the gap (cron(8) for fixed-time expressions)
    SHIFT = "shift"  #: fire at the same offset into the new time (02:30 -> 03:30)
    SKIP = "skip"  #: do not fire (the real clock; cron(8) for wildcard expressions)


class DstFold(str, enum.Enum):
    """What a slot whose wall-clock time occurs twice (fall-back) does."""

    FIRST = "first"  #: fire at the first occurrence only (cron(8) for fixed-time expressions)
    SECOND = "second"  #: fire at the second occurrence only
    BOTH = "both"  #: fire at both (the real clock; cron(8) for wildcard expressions)


#: Zone files whose meaning differs between hosts: the host's own zone, the POSIX rules file,
#: the "zone not set" placeholder, and the posix/ and right/ (leap-second) copies of the tree.
HOST_DEPENDENT_ZONE = re.compile(r"(?i)(localtime|posixrules|factory|posix/.*|right/.*)\Z")


def load_zone(name: str, field_name: str = "timezone") -> ZoneInfo:
    if isinstance(name, str) and len(name) > MAX_ZONE:
        raise ValidationError(field_name, name, f"is longer than {MAX_ZONE} characters")
    if not isinstance(name, str) or not name:
        raise ValidationError(
            field_name, name, "must be an IANA time zone name such as 'Europe/Paris'"
        )
    if HOST_DEPENDENT_ZONE.match(name):
        # The same name would mean another zone (or leap-second time) on another host.
        raise ValidationError(
            field_name,
            name,
            "depends on the host's tz files (localtime, posixrules, Factory, posix/..., "
            "right/...); use an IANA name such as 'Europe/Paris'",
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValidationError(
            field_name, name, "is not a known IANA time zone (for example 'America/New_York')"
        ) from None


def _normalise(expr: str) -> list[str]:
    if not isinstance(expr, str) or not expr.strip():
        raise ValidationError("cron", expr, "must be a cron expression such as '*/5 * * * *'")
    text = expr.strip()
    if len(text) > MAX_EXPRESSION:
        raise ValidationError("cron", expr, f"is longer than {MAX_EXPRESSION} characters")
    if text.startswith("@"):
        if text.lower() not in ALIASES:
            raise ValidationError(
                "cron", expr, f"unknown alias; use one of {', '.join(sorted(ALIASES))}"
            )
        text = ALIASES[text.lower()]
    fields = text.split()
    if len(fields) not in (5, 6):
        raise ValidationError(
            "cron", expr, f"has {len(fields)} fields; expected 5 (m h dom mon dow) or 6 (+ seconds)"
        )
    for index, value in enumerate(fields):
        parts = value.lower().split(",")
        for position, part in enumerate(parts):
            if _NONDETERMINISTIC.match(part):
                raise ValidationError(
                    "cron",
                    expr,
                    f"{FIELD_NAMES[index]} field {value!r}: random (R) and hashed (H) values are "
                    "not supported, since every beat must compute the same slots",
                )
            parts[position] = _normalise_range(expr, index, value, part)
        fields[index] = ",".join(parts)
    return fields


def _normalise_range(expr: str, index: int, value: str, part: str) -> str:
    """``5-5`` becomes ``5`` (croniter 6 reads a one-value range as ``*``); ``5-1`` is refused;
    ``N/S`` means ``N-max/S`` (so ``59/15`` is minute 59 only, as in cronie)."""
    step = _START_STEP.match(part)
    if step is not None:
        part = f"{step.group(1)}-{_FIELD_MAX[index]}/{step.group(2)}"
    match = _RANGE.match(part)
    if match is None:
        return part
    names = _MONTHS if index == 3 else _WEEKDAYS if index == 4 else {}
    low, high = (int(token) if token.isdigit() else names.get(token) for token in match.group(1, 2))
    if low is None or high is None:
        return part
    if low > high:
        raise ValidationError(
            "cron",
            expr,
            f"{FIELD_NAMES[index]} field {value!r}: range {part!r} runs backwards",
        )
    return match.group(1) if low == high else part


def _bad_field(fields: list[str], expr: str) -> str:
    """Name the first field croniter rejects on its own, to point the user at it."""
    for index, value in enumerate(fields):
        probe = ["*"] * len(fields)
        probe[index] = value
        try:
            croniter(" ".join(probe))
        except (CroniterError, ValueError, KeyError, IndexError):
            return f"{FIELD_NAMES[index]} field {value!r} is invalid"
    return "is not a valid cron expression"


@dataclass(frozen=True)
class CronSpec:
    expr: str
    zone: ZoneInfo
    gap: DstGap
    fold: DstFold
    #: Vixie cron's rule: with both day fields restricted, a day matching either one fires.
    day_or: bool
    fields: tuple[str, ...] = field(compare=False, repr=False)

    @classmethod
    def parse(
        cls,
        expr: str,
        tz: str = "UTC",
        *,
        dst_gap: str | DstGap | None = None,
        dst_fold: str | DstFold | None = None,
        days: str | None = None,
    ) -> CronSpec:
        # Beat plans every fire from the stored columns: parsing (croniter's expansion) was
        # most of a fire's planning time, and a deployment has few distinct expressions. Only
        # hashable (well-typed) arguments can be remembered; the others get their error.
        arguments = (expr, tz, dst_gap, dst_fold, days)
        if all(value is None or isinstance(value, str) for value in arguments):
            return _parsed(*arguments)
        return cls._parse(*arguments)

    @classmethod
    def _parse(
        cls,
        expr: str,
        tz: str,
        dst_gap: str | DstGap | None,
        dst_fold: str | DstFold | None,
        days: str | None,
    ) -> CronSpec:
        fields = _normalise(expr)
        zone = load_zone(tz)
        if days not in (None, "any", "all"):
            raise ValidationError("cron_days", days, "must be 'any' (cron) or 'all' (crontab)")
        # cron(8): only when both day fields are restricted (neither starts with "*") does a day
        # matching either fire; "*/2" in one of them still means "and". croniter would OR them.
        day_or = days != "all" and not (fields[2].startswith("*") or fields[4].startswith("*"))
        try:
            croniter(" ".join(fields))
        except (CroniterError, ValueError, KeyError, IndexError):
            raise ValidationError("cron", expr, _bad_field(fields, expr)) from None
        fixed = not fields[0].startswith("*") and not fields[1].startswith("*")
        try:
            gap = DstGap(dst_gap) if dst_gap else (DstGap.GAP_END if fixed else DstGap.SKIP)
        except ValueError:
            raise ValidationError(
                "dst_gap", dst_gap, f"must be one of {', '.join(g.value for g in DstGap)}"
            ) from None
        try:
            fold = DstFold(dst_fold) if dst_fold else (DstFold.FIRST if fixed else DstFold.BOTH)
        except ValueError:
            raise ValidationError(
                "dst_fold", dst_fold, f"must be one of {', '.join(f.value for f in DstFold)}"
            ) from None
        spec = cls(expr.strip(), zone, gap, fold, day_or, tuple(fields))
        if spec.first_slot_after(datetime(2000, 1, 1, tzinfo=UTC)) is None:
            raise ValidationError("cron", expr, "never matches a date (check day and month)")
        return spec

    def first_slot_after(self, after: datetime) -> datetime | None:
        return next(self.slots_after(after), None)

    def slots_after(self, after: datetime) -> Iterator[datetime]:
        after = after.astimezone(UTC)
        local_start = after.astimezone(self.zone).replace(tzinfo=None, fold=0) - self._lookback(
            after
        )
        # A copy of the parsed expression, moved to the start (``set_current``): parsing it
        # again costs several times the few steps a walk usually takes.
        walker = copy.copy(_expanded(self.fields, self.day_or))
        walker.set_current(local_start, force=True)
        pending: list[datetime] = []
        last: datetime | None = None
        while True:
            try:
                wall = walker.get_next(datetime)
            except CroniterBadDateError:
                break
            floor = self._floor(wall)
            for instant in self._resolve(wall):
                if instant > after:
                    heapq.heappush(pending, instant)
            # Every later wall time resolves to an instant >= floor, so all pending instants up
            # to it are final and in order.
            while pending and pending[0] <= floor:
                instant = heapq.heappop(pending)
                if last is None or instant > last:
                    last = instant
                    yield instant
        while pending:
            instant = heapq.heappop(pending)
            if last is None or instant > last:
                last = instant
                yield instant

    def count(self, after: datetime, until: datetime) -> int:
        """How many slots lie in ``(after, until]``, without walking them one by one.

        Away from offset changes a UTC instant and its wall time correspond one to one, so slots
        are counted as matching wall times: day by day (one walker step finds each matching
        day), each day by arithmetic over the hour, minute and second fields. Within the reach
        of an offset change (where the DST rules decide) the slots are walked.
        """
        after, until = after.astimezone(UTC), until.astimezone(UTC)
        total = 0
        for low, high, walk in self._pieces(after, until):
            if walk:
                for slot in self.slots_after(low):
                    if slot > high:
                        break
                    total += 1
            else:
                offset = low.astimezone(self.zone).utcoffset() or timedelta(0)
                total += self._count_wall(
                    (low + offset).replace(tzinfo=None), (high + offset).replace(tzinfo=None)
                )
        return total

    def _pieces(
        self, after: datetime, until: datetime
    ) -> Iterator[tuple[datetime, datetime, bool]]:
        """``(after, until]`` split into ``(low, high]`` pieces with one offset each (``False``)
        and the reach of each offset change, to be walked (``True``)."""
        low = after
        for change, size in self._changes(after - _DAY, until + _DAY):
            reach_low, reach_high = change - size - _SECOND, change + size + _SECOND
            if reach_high <= low or reach_low >= until:
                continue
            if reach_low > low:
                yield low, reach_low, False
            high = min(reach_high, until)
            yield max(low, reach_low), high, True
            low = high
        if low < until:
            yield low, until, False

    def _changes(self, start: datetime, end: datetime) -> Iterator[tuple[datetime, timedelta]]:
        """Offset changes of the zone in ``[start, end]``: ``(instant, size)``, ascending."""
        if self.zone.key in ("UTC", "Etc/UTC"):
            return
        probe, offset = start, start.astimezone(self.zone).utcoffset()
        while probe < end:
            nxt = min(probe + _TRANSITION_PROBE, end)
            following = nxt.astimezone(self.zone).utcoffset()
            if following != offset:
                size = (following or timedelta(0)) - (offset or timedelta(0))
                yield self._transition(probe, nxt), abs(size)
            probe, offset = nxt, following

    def _count_wall(self, after: datetime, until: datetime) -> int:
        """Matching wall times (naive, whole seconds) in ``(after, until]``."""
        walker = copy.copy(_expanded(self.fields, self.day_or))
        hours, minutes, seconds = _time_fields(walker.expanded)
        first = _seconds_of_day(after.replace(microsecond=0))
        last = _seconds_of_day(until.replace(microsecond=0))
        total = 0
        day = after.date()
        while day <= until.date():
            # The first matching wall time from this day's midnight on finds the next matching
            # day: days without one are passed over in the walker's single step.
            walker.set_current(datetime.combine(day, datetime.min.time()) - _SECOND, force=True)
            try:
                found = walker.get_next(datetime)
            except CroniterBadDateError:
                break
            day = found.date()
            if day > until.date():
                break
            low = first if day == after.date() else -1
            high = last if day == until.date() else 86_399
            total += _up_to(hours, minutes, seconds, high) - _up_to(hours, minutes, seconds, low)
            day += _DAY
        return total

    # Wall-clock resolution -------------------------------------------------------------------

    def _lookback(self, after: datetime) -> timedelta:
        """How far before ``after``'s wall time to start walking.

        Near an offset change a wall time earlier than ``after``'s can still resolve to a later
        instant (the second copy of a repeated hour, or a shifted gap time); the walk must start
        that much earlier. Far from any change this is zero and the walk starts right at ``after``.
        """
        here = after.astimezone(self.zone).utcoffset() or timedelta(0)
        change = timedelta(0)
        for side in (after - _TRANSITION_REACH, after + _TRANSITION_REACH):
            offset = side.astimezone(self.zone).utcoffset() or timedelta(0)
            change = max(change, abs(offset - here))
        return change + timedelta(seconds=1) if change else change

    def _floor(self, wall: datetime) -> datetime:
        """A lower bound of what this and every later wall time resolve to (monotone in wall)."""
        first = wall.replace(tzinfo=self.zone, fold=0)
        if self._exists(first):
            return first.astimezone(UTC)
        return self._gap_end(wall)

    def _resolve(self, wall: datetime) -> list[datetime]:
        first = wall.replace(tzinfo=self.zone, fold=0)
        second = wall.replace(tzinfo=self.zone, fold=1)
        if not self._exists(first):  # in a spring-forward gap
            if self.gap is DstGap.SKIP:
                return []
            if self.gap is DstGap.SHIFT:
                return [first.astimezone(UTC)]
            return [self._gap_end(wall)]
        if first.utcoffset() == second.utcoffset():
            return [first.astimezone(UTC)]
        # Ambiguous: the wall time occurs twice.
        if self.fold is DstFold.FIRST:
            return [first.astimezone(UTC)]
        if self.fold is DstFold.SECOND:
            return [second.astimezone(UTC)]
        return [first.astimezone(UTC), second.astimezone(UTC)]

    def _exists(self, aware: datetime) -> bool:
        back = aware.astimezone(UTC).astimezone(self.zone)
        return back.replace(tzinfo=None) == aware.replace(tzinfo=None)

    def _gap_end(self, wall: datetime) -> datetime:
        """The UTC instant at which the gap containing ``wall`` ends (the transition)."""
        # fold=1 reads the wall time with the offset after the transition, fold=0 with the one
        # before; the transition lies between the two readings.
        low = wall.replace(tzinfo=self.zone, fold=1).astimezone(UTC)
        high = wall.replace(tzinfo=self.zone, fold=0).astimezone(UTC)
        if high < low:
            low, high = high, low
        return self._transition(low, high)

    def _transition(self, low: datetime, high: datetime) -> datetime:
        """The first whole second after ``low`` (up to ``high``) with another offset than
        ``low``'s: transitions fall on whole seconds, found by binary search."""
        before = low.astimezone(self.zone).utcoffset()
        lo, hi = 0, int((high - low).total_seconds())
        while lo < hi:
            mid = (lo + hi) // 2
            if (low + timedelta(seconds=mid)).astimezone(self.zone).utcoffset() == before:
                lo = mid + 1
            else:
                hi = mid
        return low + timedelta(seconds=lo)


def _time_fields(
    expanded: Sequence[Sequence[int | str]],
) -> tuple[list[int], list[int], list[int]]:
    """The hours, minutes and seconds a parsed expression matches, each ascending."""

    def values(field: Sequence[int | str], size: int) -> list[int]:
        return list(range(size)) if "*" in field else sorted(int(v) for v in field)

    seconds = values(expanded[5], 60) if len(expanded) > 5 else [0]
    return values(expanded[1], 24), values(expanded[0], 60), seconds


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


#: :meth:`CronSpec.parse` of well-typed arguments, remembered (a ``CronSpec`` is immutable;
#: errors are not cached).
_parsed = functools.lru_cache(maxsize=4096)(CronSpec._parse)


@functools.lru_cache(maxsize=4096)
def _expanded(fields: tuple[str, ...], day_or: bool) -> croniter:
    """A parsed expression for :meth:`CronSpec.slots_after` to copy; never walked itself."""
    return croniter(" ".join(fields), datetime(2000, 1, 1), day_or=day_or)
