"""What a local wall-clock time means in UTC, by the DST rules a schedule chose.

Shared by the specs that are read in an IANA zone (``cron`` and ``rrule``): each finds the wall
times it matches, and :class:`WallClock` resolves them. A wall time in a spring-forward gap fires
at the gap's end, shifted, or not at all (:class:`DstGap`); one that happens twice fires at its
first, its second or both occurrences (:class:`DstFold`). Several wall times that resolve to one
instant fire once.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

__all__ = ["DstFold", "DstGap", "WallClock"]

UTC = timezone.utc

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


class WallClock:
    """The DST rules of a spec read in :attr:`zone` (a mixin: the spec declares the three)."""

    zone: ZoneInfo
    gap: DstGap
    fold: DstFold

    def resolved(self, walls: Iterable[datetime], after: datetime) -> Iterator[datetime]:
        """The instants strictly after ``after`` (aware UTC) of ``walls`` (naive local times,
        ascending), ascending and each once. The walls must start early enough
        (:meth:`lookback`): an earlier wall time can resolve to a later instant near a change."""
        pending: list[datetime] = []
        last: datetime | None = None
        for wall in walls:
            floor = self._floor(wall)
            for instant in self.resolve(wall):
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

    def lookback(self, after: datetime) -> timedelta:
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

    def resolve(self, wall: datetime) -> list[datetime]:
        """The instants (aware UTC) a naive local wall time fires at, by the DST rules."""
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

    def _floor(self, wall: datetime) -> datetime:
        """A lower bound of what this and every later wall time resolve to (monotone in wall)."""
        first = wall.replace(tzinfo=self.zone, fold=0)
        if self._exists(first):
            return first.astimezone(UTC)
        return self._gap_end(wall)

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
