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
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, CroniterError, croniter

from ..errors import ValidationError

__all__ = ["CronSpec", "DstFold", "DstGap", "load_zone"]

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


def load_zone(name: str, field_name: str = "timezone") -> ZoneInfo:
    if isinstance(name, str) and len(name) > MAX_ZONE:
        raise ValidationError(field_name, name, f"is longer than {MAX_ZONE} characters")
    if not isinstance(name, str) or not name:
        raise ValidationError(
            field_name, name, "must be an IANA time zone name such as 'Europe/Paris'"
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
        before = low.astimezone(self.zone).utcoffset()
        # Transitions fall on whole seconds: binary search the first second with the new offset.
        lo, hi = 0, int((high - low).total_seconds())
        while lo < hi:
            mid = (lo + hi) // 2
            if (low + timedelta(seconds=mid)).astimezone(self.zone).utcoffset() == before:
                lo = mid + 1
            else:
                hi = mid
        return low + timedelta(seconds=lo)


#: :meth:`CronSpec.parse` of well-typed arguments, remembered (a ``CronSpec`` is immutable;
#: errors are not cached).
_parsed = functools.lru_cache(maxsize=4096)(CronSpec._parse)


@functools.lru_cache(maxsize=4096)
def _expanded(fields: tuple[str, ...], day_or: bool) -> croniter:
    """A parsed expression for :meth:`CronSpec.slots_after` to copy; never walked itself."""
    return croniter(" ".join(fields), datetime(2000, 1, 1), day_or=day_or)
