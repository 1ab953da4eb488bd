"""``rrule`` specs: an RFC 5545 recurrence set (rules, dates and exclusions) in an IANA zone.

The text is what an iCalendar event says of its recurrence, one property a line::

    DTSTART;TZID=Europe/London:20260130T180000
    RRULE:FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1
    EXDATE;TZID=Europe/London:20261231T180000

or a rule alone (``FREQ=WEEKLY;BYDAY=2TU``). python-dateutil expands each rule into local wall
times; :class:`~.zoned.WallClock` decides what each means in UTC, with the rules of fixed-time
cron expressions by default (a wall time in a spring-forward gap fires once at the end of the gap,
one that happens twice fires once, at its first occurrence), so DST behaviour is ours, not the
library's. What is read:

* ``DTSTART``: floating (read in the schedule's zone), with ``TZID`` (sets the zone; it must agree
  with the schedule's own), or in UTC (``Z``: the rule is read in UTC). Without one the rule
  starts at :data:`DEFAULT_DTSTART` (2001-01-01T00:00, a Monday) in its zone, like a cron
  expression timeless: the parts a rule leaves out (the minute of an hourly rule, the day of a
  monthly one) and an ``INTERVAL``'s phase come from it, the same whenever the schedule is made,
  and past slots can be backfilled. ``COUNT`` needs a ``DTSTART``.
* any number of ``RRULE`` lines; ``RDATE`` and ``EXDATE`` lines (date-times, floating, ``TZID``
  or ``Z``, or ``VALUE=DATE`` dates meaning their midnight). An exclusion removes the wall time
  from every rule and date, as in an iCalendar recurrence set.
* ``UNTIL`` in UTC (``Z``) bounds the instants, a floating one the wall times. ``COUNT`` counts
  the rule's wall times from ``DTSTART``, before exclusions (RFC 5545).

Refused, with one line each: ``EXRULE`` (deprecated by RFC 5545), ``RDATE`` periods, ``COUNT``
with ``UNTIL`` or without ``DTSTART``, a ``COUNT`` above :data:`~.rruletext.MAX_COUNT`, a rule
dateutil cannot read, and a rule with no instant within :data:`~.rruletext.HORIZON_YEARS` years
of its start (:mod:`.rruletext` reads and checks the text).
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone
from typing import Any

from dateutil.relativedelta import relativedelta
from dateutil.rrule import rrulestr

from ..errors import ValidationError, one_of
from .dst import DstFold, DstGap
from .rruletext import WEEKDAYS, join_parts, lines, rule_parts, stamp, unsupported
from .zoned import WallClock

__all__ = ["DEFAULT_DTSTART", "MAX_TEXT", "RruleSpec"]

UTC = timezone.utc

#: Column size of the stored text.
MAX_TEXT = 4000
#: Where a rule without ``DTSTART`` starts, in its zone: a Monday, the 1st of January, at 00:00.
#: What the rule leaves out (an hourly rule's minute, a monthly rule's day, a weekly rule's day,
#: the phase of an ``INTERVAL``) comes from it, the same for every schedule whenever it was made.
DEFAULT_DTSTART = datetime(2001, 1, 1)


@dataclass(frozen=True)
class _Rule:
    """One ``RRULE``: its parts with the defaults DTSTART gives made explicit (so it can restart
    at a later period with the same wall times), and the instant its ``UNTIL`` in UTC sets."""

    parts: tuple[tuple[str, str], ...]
    freq: int
    interval: int
    start: datetime  # naive local DTSTART
    until: datetime | None  # aware UTC

    def walls(self, after: datetime) -> Iterator[datetime]:
        """The rule's wall times from ``after`` (naive local) on, ascending: expanded from the
        latest period that keeps the grid and starts before ``after``."""
        expanded = rrulestr("RRULE:" + join_parts(dict(self.parts)), dtstart=self._restart(after))
        found: Iterator[datetime] = expanded.xafter(after, inc=True)
        return found

    def _restart(self, before: datetime) -> datetime:
        """A start at the beginning of a period ``k * INTERVAL`` periods after DTSTART's,
        before ``before`` (DTSTART itself when there is none)."""
        unit = _period_start(self.start, self.freq, self.parts)
        periods = _periods_between(unit, before, self.freq)
        steps = periods // self.interval - 1
        if steps < 1:
            return self.start
        return _add_periods(unit, self.freq, steps * self.interval)


@dataclass(frozen=True)
class RruleSpec(WallClock):
    text: str
    zone: Any  # ZoneInfo
    gap: DstGap
    fold: DstFold
    rules: tuple[_Rule, ...]
    #: RDATE wall times (naive local) and instants (aware UTC), EXDATE wall times.
    dates: tuple[datetime, ...]
    instants: tuple[datetime, ...]
    excluded: frozenset[datetime]

    @classmethod
    def parse(
        cls,
        text: str,
        tz: str | None = None,
        *,
        dst_gap: str | None = None,
        dst_fold: str | None = None,
    ) -> RruleSpec:
        """Read ``text`` in zone ``tz`` (``None``: DTSTART's TZID, or UTC)."""
        arguments = (text, tz, dst_gap, dst_fold)
        if all(value is None or isinstance(value, str) for value in arguments):
            return _parsed(*arguments)
        return _parse(*arguments)

    def slots_after(self, after: datetime) -> Iterator[datetime]:
        """Slots strictly after ``after``, ascending, as aware UTC datetimes, each once."""
        after = after.astimezone(UTC)
        start = after.astimezone(self.zone).replace(tzinfo=None, fold=0)
        start -= self.lookback(after)
        streams = [self._rule_slots(rule, start, after) for rule in self.rules]
        dates = (wall for wall in self.dates if wall >= start and wall not in self.excluded)
        streams.append(self.resolved(dates, after))
        streams.append(i for i in self.instants if i > after)
        last = None
        for slot in heapq.merge(*streams):
            if slot != last:
                last = slot
                yield slot

    def _rule_slots(self, rule: _Rule, start: datetime, after: datetime) -> Iterator[datetime]:
        walls = (w for w in rule.walls(start) if w not in self.excluded)
        for slot in self.resolved(walls, after):
            if rule.until is not None and slot > rule.until:
                return
            yield slot

    def _walls(self, low: datetime, high: datetime) -> Iterator[datetime]:
        """The wall times of the set in ``[low, high)`` (naive local), ascending, each once."""
        streams: list[Iterable[datetime]] = [
            (w for w in rule.walls(low) if rule.until is None or self._floor(w) <= rule.until)
            for rule in self.rules
        ]
        streams.append(wall for wall in self.dates if wall >= low)
        last = None
        for wall in heapq.merge(*streams):
            if wall >= high:
                return
            if wall != last and wall not in self.excluded:
                last = wall
                yield wall

    def count(self, after: datetime, until: datetime) -> int:
        total = 0
        for slot in self.slots_after(after):
            if slot > until:
                break
            total += 1
        return total


def _parse(text: str, tz: str | None, dst_gap: str | None, dst_fold: str | None) -> RruleSpec:
    from .cron import load_zone  # cron's zone rules, one place

    if not isinstance(text, str) or not text.strip():
        raise ValidationError("rrule", text, "must be an RFC 5545 rule such as 'FREQ=DAILY'")
    if len(text) > MAX_TEXT:
        raise ValidationError("rrule", text, f"is longer than {MAX_TEXT} characters")
    read_lines = lines(text)
    starts = [line for line in read_lines if line[0] == "DTSTART"]
    if len(starts) > 1:
        raise ValidationError("rrule", text, "has more than one DTSTART")
    zone_name = tz
    start_wall: datetime | None = None
    if starts:
        _, params, value = starts[0]
        start_zone, start_wall = stamp(text, "DTSTART", params, value)
        if start_zone is not None:
            if tz not in (None, "UTC", start_zone):
                raise ValidationError(
                    "rrule",
                    text,
                    f"DTSTART is in {start_zone} but the schedule's time zone is {tz}: "
                    "give one zone",
                )
            zone_name = start_zone
    zone = load_zone(zone_name or "UTC")
    dtstart_given = start_wall is not None
    start_wall = start_wall or DEFAULT_DTSTART
    gap = one_of("dst_gap", dst_gap, DstGap) if dst_gap else DstGap.GAP_END
    fold = one_of("dst_fold", dst_fold, DstFold) if dst_fold else DstFold.FIRST
    rules: list[_Rule] = []
    dates: list[datetime] = []
    instants: list[datetime] = []
    excluded: set[datetime] = set()
    for name, params, value in read_lines:
        if name == "RRULE":
            read = rule_parts(text, value, start_wall, dtstart_given)
            rules.append(_Rule(read.parts, read.freq, read.interval, start_wall, read.until))
        elif name in ("RDATE", "EXDATE"):
            for item in value.split(","):
                stamp_zone, wall = stamp(text, name, params, item)
                if name == "EXDATE":
                    excluded.add(_wall_in(wall, stamp_zone, zone, load_zone))
                elif stamp_zone in (None, zone.key):
                    dates.append(wall)
                else:
                    instants.append(_instant(wall, stamp_zone, load_zone))
        elif name != "DTSTART":
            raise ValidationError("rrule", text, unsupported(name))
    if not rules and not dates and not instants:
        raise ValidationError("rrule", text, "has no RRULE and no RDATE")
    return RruleSpec(
        text.strip(),
        zone,
        gap,
        fold,
        tuple(rules),
        tuple(sorted(dates)),
        tuple(sorted(instants)),
        frozenset(excluded),
    )


def _wall_in(wall: datetime, stamp_zone: str | None, zone: Any, load_zone: Any) -> datetime:
    """An EXDATE's wall time in the schedule's zone."""
    if stamp_zone in (None, zone.key):
        return wall
    instant = _instant(wall, stamp_zone, load_zone)
    return instant.astimezone(zone).replace(tzinfo=None)


def _instant(wall: datetime, stamp_zone: str, load_zone: Any) -> datetime:
    return wall.replace(tzinfo=load_zone(stamp_zone, "rrule")).astimezone(UTC)


def _period_start(start: datetime, freq: int, parts: Any) -> datetime:
    """The beginning of the period (of the rule's FREQ) that holds ``start``."""
    midnight = datetime.combine(start.date(), time.min)
    if freq == 0:
        return midnight.replace(month=1, day=1)
    if freq == 1:
        return midnight.replace(day=1)
    if freq == 2:
        week_start = WEEKDAYS.index(dict(parts).get("WKST", "MO"))
        return midnight - timedelta(days=(start.weekday() - week_start) % 7)
    if freq == 3:
        return midnight
    if freq == 4:
        return start.replace(minute=0, second=0, microsecond=0)
    if freq == 5:
        return start.replace(second=0, microsecond=0)
    return start.replace(microsecond=0)


_UNIT_SECONDS = {3: 86_400, 4: 3_600, 5: 60, 6: 1}


def _periods_between(unit: datetime, before: datetime, freq: int) -> int:
    """Whole periods from ``unit`` (a period's beginning) to ``before`` (at least 0)."""
    if before <= unit:
        return 0
    if freq == 0:
        return before.year - unit.year
    if freq == 1:
        return (before.year - unit.year) * 12 + before.month - unit.month
    if freq == 2:
        return (before - unit).days // 7
    return int((before - unit).total_seconds()) // _UNIT_SECONDS[freq]


def _add_periods(unit: datetime, freq: int, periods: int) -> datetime:
    if freq == 0:
        return unit + relativedelta(years=periods)
    if freq == 1:
        return unit + relativedelta(months=periods)
    if freq == 2:
        return unit + timedelta(weeks=periods)
    return unit + timedelta(seconds=_UNIT_SECONDS[freq] * periods)


#: :func:`_parse` of well-typed arguments, remembered (a spec is immutable; errors are not).
_parsed = functools.lru_cache(maxsize=4096)(_parse)
