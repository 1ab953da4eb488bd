"""What a local wall-clock time means in UTC, for the specs read in an IANA zone (``cron`` and
``rrule``): each finds the wall times it matches, and :class:`WallClock` resolves them by the
schedule's DST rules (:mod:`.dst`), in order, each instant once, and gives its DST notes.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from . import dst
from .dst import DstFold, DstGap, DstNote

__all__ = ["WallClock"]

UTC = timezone.utc

# Offset changes are looked for this far on either side of the instant a walk starts from.
_TRANSITION_REACH = timedelta(days=1)


class WallClock:
    """The DST rules of a spec read in :attr:`zone`. A mixin: the spec declares ``zone``,
    ``gap`` and ``fold``, and lists its wall times in a stretch (:meth:`_walls`)."""

    zone: ZoneInfo
    gap: DstGap
    fold: DstFold

    def _walls(self, low: datetime, high: datetime) -> Iterable[datetime]:
        """The naive wall times the spec matches in ``[low, high)``, ascending."""
        raise NotImplementedError

    def dst_notes(self, after: datetime, until: datetime) -> list[DstNote]:
        """The wall times the spec matches that an offset change moved (a gap) or repeated (a
        fold), whose note lies in ``(after, until]`` (:func:`.dst.notes`)."""
        return dst.notes(self.zone, self._walls, self.gap, self.fold, after, until)

    def resolved(self, walls: Iterable[datetime], after: datetime) -> Iterator[datetime]:
        """The instants strictly after ``after`` (aware UTC) of ``walls`` (naive local times,
        ascending), ascending and each once. The walls must start early enough
        (:meth:`lookback`): an earlier wall time can resolve to a later instant near a change."""
        pending: list[datetime] = []
        last: datetime | None = None
        for wall in walls:
            floor = self._floor(wall)
            for instant in dst.resolve(self.zone, wall, self.gap, self.fold):
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

    def _floor(self, wall: datetime) -> datetime:
        """A lower bound of what this and every later wall time resolve to (monotone in wall)."""
        if dst.exists(self.zone, wall):
            return wall.replace(tzinfo=self.zone, fold=0).astimezone(UTC)
        return dst.gap_end(self.zone, wall)
