"""``cron`` specs evaluated in an IANA zone, with cron(8)'s DST rules by default.

croniter only walks naive local wall-clock times; this module decides what each wall-clock time
means in UTC, so DST behaviour is ours (``SEMANTICS.md``), not the library's:

* fixed-time expressions (minute and hour fields both not starting with ``*``): a slot in the
  spring-forward gap fires once at the end of the gap (``gap_end``); a slot in the repeated
  fall-back hour fires once, at its first occurrence (``first``);
* wildcard expressions follow the real clock: gap minutes do not exist (``skip``), repeated
  minutes fire in both copies (``both``);
* several local slots that resolve to the same UTC instant fire once.

``dst_gap`` and ``dst_fold`` override the defaults per schedule. Each wall time is resolved by
:mod:`.dst` (shared with any spec of local wall times), which also gives the schedule's DST notes
(:meth:`CronSpec.dst_notes`).
"""

from __future__ import annotations

import copy
import functools
import itertools
import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, CroniterError, croniter

from ..errors import ValidationError, one_of
from . import dst, walltimes
from .cronfields import FIELD_NAMES, never_matches, read
from .dst import DstFold, DstGap
from .zoned import WallClock

__all__ = ["HOST_DEPENDENT_ZONE", "CronSpec", "DstFold", "DstGap", "load_zone"]

UTC = timezone.utc

#: Column size of the stored zone name.
MAX_ZONE = 64
_SECOND = timedelta(seconds=1)
_DAY = timedelta(days=1)
#: How far :meth:`CronSpec.slots_after` looks ahead for the zone's next offset change at a time.
_QUIET_HORIZON = timedelta(days=7)


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


def _bad_field(fields: list[str], written: list[str]) -> str:
    """Name the first field croniter rejects on its own (only an L, W or # element can be
    refused there: :mod:`.cronfields` checks the rest), to point the user at it."""
    for index, value in enumerate(fields):
        probe = ["*"] * len(fields)
        probe[index] = value
        try:
            croniter(" ".join(probe))
        except (CroniterError, ValueError, KeyError, IndexError):
            return f"{FIELD_NAMES[index]} field {written[index]!r} is invalid"
    return "is not a valid cron expression"


@dataclass(frozen=True)
class CronSpec(WallClock):
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
        parsed = read(expr)
        written, fields = parsed.written, parsed.canonical
        zone = load_zone(tz)
        if days not in (None, "any", "all"):
            raise ValidationError("cron_days", days, "must be 'any' (cron) or 'all' (crontab)")
        # cron(8): only when both day fields are restricted (neither starts with "*") does a day
        # matching either fire; "*/2" in one of them still means "and". croniter would OR them.
        day_or = days != "all" and not (written[2].startswith("*") or written[4].startswith("*"))
        if day_or and never_matches(fields[2], fields[3]):
            # "0 0 30 2 mon": no February has a 30th, so cron(8) fires on Mondays alone. croniter
            # 6 gives up on the whole expression instead (7 does not): say it without the day.
            fields[2], day_or = "*", False
        try:
            croniter(" ".join(fields))
        except (CroniterError, ValueError, KeyError, IndexError):
            raise ValidationError("cron", expr, _bad_field(fields, written)) from None
        fixed = not written[0].startswith("*") and not written[1].startswith("*")
        gap = one_of("dst_gap", dst_gap, DstGap) if dst_gap else None
        fold = one_of("dst_fold", dst_fold, DstFold) if dst_fold else None
        gap = gap or (DstGap.GAP_END if fixed else DstGap.SKIP)
        fold = fold or (DstFold.FIRST if fixed else DstFold.BOTH)
        spec = cls(expr.strip(), zone, gap, fold, day_or, tuple(fields))
        if spec.first_slot_after(datetime(2000, 1, 1, tzinfo=UTC)) is None:
            raise ValidationError("cron", expr, "never matches a date (check day and month)")
        return spec

    def first_slot_after(self, after: datetime) -> datetime | None:
        return next(self.slots_after(after), None)

    def slots_after(self, after: datetime) -> Iterator[datetime]:
        """Slots strictly after ``after``, ascending, as aware UTC datetimes.

        The first is remembered (:func:`_first_after`): a herd is many schedules of the same
        expression due at the same slot, each asking for the slot after it; the rest are walked
        from it only if asked for.
        """
        first = _first_after(self, after)
        if first is None:
            return iter(())
        return itertools.chain((first,), self._slots_after(first))

    def _slots_after(self, after: datetime) -> Iterator[datetime]:
        """:meth:`slots_after`, found.

        Away from the zone's offset changes a wall time and a UTC instant correspond one to one:
        there the slots are the matching wall times, found day by day (one croniter step finds
        each matching day; its times come from the expanded hour, minute and second fields) and
        shifted by the offset. Within the reach of an offset change the DST rules decide, and
        :meth:`_walk` resolves each wall time croniter finds. (croniter's step, taken for every
        slot, was most of the cost of planning a catch-up.)
        """
        position = after.astimezone(UTC)
        while True:
            horizon = position + _QUIET_HORIZON
            reach = next(
                (
                    (change - size - _SECOND, change + size + _SECOND)
                    for change, size in self._changes(position - _DAY, horizon + _DAY)
                    if change + size + _SECOND > position
                ),
                None,
            )
            quiet_until = horizon if reach is None else min(horizon, reach[0])
            if quiet_until > position:
                if not (yield from self._quiet(position, quiet_until)):
                    return
                position = quiet_until
            if reach is not None and reach[0] <= position:
                for slot in self._walk(position):
                    if slot > reach[1]:
                        break
                    yield slot
                else:
                    return
                position = reach[1]

    def _quiet(self, low: datetime, high: datetime) -> Generator[datetime, None, bool]:
        """The slots in ``(low, high]``, a stretch in which the zone's offset does not change.
        Returns ``False`` once no wall time matches any more."""
        offset = (low + _SECOND).astimezone(self.zone).utcoffset() or timedelta(0)
        return (yield from walltimes.instants(self.fields, self.day_or, low, high, offset))

    def _walk(self, after: datetime) -> Iterator[datetime]:
        """Slots strictly after ``after``: each wall time croniter finds, resolved by the DST
        rules (see the module docstring)."""
        after = after.astimezone(UTC)
        local_start = after.astimezone(self.zone).replace(tzinfo=None, fold=0) - self.lookback(
            after
        )
        # A copy of the parsed expression, moved to the start (``set_current``): parsing it
        # again costs several times the few steps a walk usually takes.
        walker = copy.copy(walltimes.expanded(self.fields, self.day_or))
        walker.set_current(local_start, force=True)
        return self.resolved(_found(walker), after)

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
                total += walltimes.count(
                    self.fields,
                    self.day_or,
                    (low + offset).replace(tzinfo=None),
                    (high + offset).replace(tzinfo=None),
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
        for change, size in dst.offset_changes(self.zone, start, end):
            yield change, abs(size)

    def _walls(self, low: datetime, high: datetime) -> Iterator[datetime]:
        """The naive wall times the expression matches in ``[low, high)``, ascending."""
        walker = copy.copy(walltimes.expanded(self.fields, self.day_or))
        walker.set_current(low - _SECOND, force=True)
        return itertools.takewhile(lambda wall: wall < high, _found(walker))


def _found(walker: croniter) -> Iterator[datetime]:
    """The wall times croniter finds from where ``walker`` stands, until it finds none."""
    while True:
        try:
            yield walker.get_next(datetime)
        except CroniterBadDateError:
            return


@functools.lru_cache(maxsize=4096)
def _first_after(spec: CronSpec, after: datetime) -> datetime | None:
    """The first slot of ``spec`` after ``after``, remembered (see :meth:`CronSpec.slots_after`)."""
    return next(spec._slots_after(after), None)


#: :meth:`CronSpec.parse` of well-typed arguments, remembered (a ``CronSpec`` is immutable;
#: errors are not cached).
_parsed = functools.lru_cache(maxsize=4096)(CronSpec._parse)
