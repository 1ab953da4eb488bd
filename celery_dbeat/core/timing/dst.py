"""Wall times and DST: what a local wall time means in UTC where a zone's offset changes, and
the notes that show it before it bites.

A spec that matches local wall times (``cron``; an RRULE set) resolves each one here: a wall time
in a spring-forward *gap* did not exist, one in a fall-back *fold* happened twice, and the
schedule's ``dst_gap`` and ``dst_fold`` policies say where (and whether) it fires
(:func:`resolve`; the rules are ``SEMANTICS.md``'s "Time zones and DST").

:func:`notes` lists the wall times a spec matches in each gap and fold between two instants, each
a :class:`DstNote` saying where it fires and why. A spec gives its notes through
``dst_notes(after, until)`` (the :class:`~celery_dbeat.core.timing.Spec` protocol); any spec that
can list its naive wall times in a stretch implements it in one line::

    def dst_notes(self, after, until):
        return dst.notes(self.zone, self._walls, self.gap, self.fold, after, until)

where ``self._walls(low, high)`` yields the naive wall times it matches in ``[low, high)``,
ascending. Specs of elapsed time (interval, once, solar) have no wall times and no notes.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

__all__ = [
    "DstChange",
    "DstFold",
    "DstGap",
    "DstNote",
    "exists",
    "gap_end",
    "notes",
    "offset_changes",
    "resolve",
    "transition",
]

UTC = timezone.utc
# Offset changes between two instants are looked for at this spacing (tzdb's changes of one zone
# lie days apart).
_TRANSITION_PROBE = timedelta(hours=6)
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


class DstChange(str, enum.Enum):
    """What an offset change did to a wall time."""

    GAP = "gap"  #: the wall time did not exist (clocks went forward over it)
    FOLD = "fold"  #: the wall time happened twice (clocks went back over it)


@dataclass(frozen=True)
class DstNote:
    """A wall time a spec matches that an offset change of its zone touched, and where it fires."""

    kind: DstChange
    #: The nominal local wall time (naive), as the spec names it.
    wall: datetime
    zone: str
    #: The instant the offset changed.
    change: datetime
    #: The instants (UTC) it fires at: none (skipped), one, or both copies of a fold.
    fires: tuple[datetime, ...]
    #: A fold's two instants, first then second; a gap's reading with the offset before the
    #: change (where ``shift`` fires it).
    occurrences: tuple[datetime, ...]
    #: The policy that decided (a :class:`DstGap` or :class:`DstFold` value).
    policy: str

    @property
    def at(self) -> datetime:
        """Where the note belongs in time: its first fire, else the change."""
        return self.fires[0] if self.fires else self.change

    def mark(self, slot: datetime) -> str:
        """A short mark for ``slot``, one of :attr:`fires`, in a list of slots (the instant is
        beside it): ``02:30 did not exist: moved to the end of the gap (dst_gap=gap_end)``."""
        wall = f"{self.wall:%H:%M}" + (f":{self.wall:%S}" if self.wall.second else "")
        if self.kind is DstChange.GAP:
            shift = self.policy == DstGap.SHIFT.value
            where = "the same time after the change" if shift else "the end of the gap"
            return f"{wall} did not exist: moved to {where} (dst_gap={self.policy})"
        if len(self.fires) == 2:
            copy = "first" if slot == self.fires[0] else "second"
            return f"{wall} happened twice: fires at both, this is the {copy} (dst_fold=both)"
        which = "first" if slot == self.occurrences[0] else "second"
        return f"{wall} happened twice: fires at the {which} only (dst_fold={self.policy})"

    @property
    def text(self) -> str:
        """One sentence for people: what happened to the wall time and where it fires."""
        zone = ZoneInfo(self.zone)
        wall = f"{self.wall:%H:%M}" + (f":{self.wall:%S}" if self.wall.second else "")
        day = f"{wall} on {self.wall:%Y-%m-%d}"

        def local(instant: datetime) -> str:
            shown = instant.astimezone(zone)
            hms = f"{shown:%H:%M}" + (f":{shown:%S}" if shown.second else "")
            return f"{hms} {shown.tzname()} ({instant.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ})"

        if self.kind is DstChange.GAP:
            head = f"{day} did not exist in {self.zone} (clocks went forward)"
            if not self.fires:
                return f"{head}: not fired (dst_gap={self.policy})"
            if self.policy == DstGap.SHIFT.value:
                where = "the same time after the change"
            else:
                where = "the end of the gap"
            return f"{head}: moved to {where}, {local(self.fires[0])} (dst_gap={self.policy})"
        head = f"{day} happened twice in {self.zone} (clocks went back)"
        first, second = self.occurrences
        if len(self.fires) == 2:
            return f"{head}: fires at both, {local(first)} and {local(second)} (dst_fold=both)"
        which, other = ("first", second) if self.fires[0] == first else ("second", first)
        return (
            f"{head}: fires at the {which} only, {local(self.fires[0])}, not at "
            f"{local(other)} (dst_fold={self.policy})"
        )


def exists(zone: ZoneInfo, wall: datetime) -> bool:
    """Whether the naive wall time ``wall`` happens in ``zone`` (is not in a gap)."""
    aware = wall.replace(tzinfo=zone, fold=0)
    return aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == wall.replace(fold=0)


def transition(zone: ZoneInfo, low: datetime, high: datetime) -> datetime:
    """The first whole second after ``low`` (up to ``high``) with another offset than
    ``low``'s: transitions fall on whole seconds, found by binary search."""
    before = low.astimezone(zone).utcoffset()
    lo, hi = 0, int((high - low).total_seconds())
    while lo < hi:
        mid = (lo + hi) // 2
        if (low + timedelta(seconds=mid)).astimezone(zone).utcoffset() == before:
            lo = mid + 1
        else:
            hi = mid
    return low + timedelta(seconds=lo)


def gap_end(zone: ZoneInfo, wall: datetime) -> datetime:
    """The UTC instant at which the gap containing ``wall`` ends (the transition)."""
    # fold=1 reads the wall time with the offset after the transition, fold=0 with the one
    # before; the transition lies between the two readings.
    low = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    high = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if high < low:
        low, high = high, low
    return transition(zone, low, high)


def resolve(zone: ZoneInfo, wall: datetime, gap: DstGap, fold: DstFold) -> list[datetime]:
    """The UTC instants the naive wall time ``wall`` fires at in ``zone`` under the ``gap`` and
    ``fold`` policies: none, one, or (a fold under ``both``) two, ascending."""
    first = wall.replace(tzinfo=zone, fold=0)
    second = wall.replace(tzinfo=zone, fold=1)
    if not exists(zone, wall):  # in a spring-forward gap
        if gap is DstGap.SKIP:
            return []
        if gap is DstGap.SHIFT:
            return [first.astimezone(UTC)]
        return [gap_end(zone, wall)]
    if first.utcoffset() == second.utcoffset():
        return [first.astimezone(UTC)]
    # Ambiguous: the wall time occurs twice.
    if fold is DstFold.FIRST:
        return [first.astimezone(UTC)]
    if fold is DstFold.SECOND:
        return [second.astimezone(UTC)]
    return [first.astimezone(UTC), second.astimezone(UTC)]


def offset_changes(
    zone: ZoneInfo, start: datetime, end: datetime
) -> Iterator[tuple[datetime, timedelta]]:
    """Offset changes of ``zone`` in ``(start, end]``: ``(instant, new offset - old offset)``,
    ascending. Found a calendar month at a time and remembered (:func:`_month_changes`): beat
    asks for the next week of changes of the same few zones for every slot it plans."""
    if zone.key in ("UTC", "Etc/UTC"):
        return
    start, end = start.astimezone(UTC), end.astimezone(UTC)
    year, month = start.year, start.month
    while (year, month) <= (end.year, end.month):
        for change in _month_changes(zone, year, month):
            if start < change[0] <= end:
                yield change
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)


@functools.lru_cache(maxsize=1024)
def _month_changes(zone: ZoneInfo, year: int, month: int) -> tuple[tuple[datetime, timedelta], ...]:
    """The offset changes of ``zone`` after the first instant (UTC) of ``month`` up to the first
    of the next, probed every :data:`_TRANSITION_PROBE`."""
    low = datetime(year, month, 1, tzinfo=UTC)
    try:
        high = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    except ValueError:  # December 9999
        high = datetime.max.replace(tzinfo=UTC)
    found = []
    probe, offset = low, low.astimezone(zone).utcoffset() or timedelta(0)
    while probe < high:
        nxt = min(probe + _TRANSITION_PROBE, high)
        following = nxt.astimezone(zone).utcoffset() or timedelta(0)
        if following != offset:
            found.append((transition(zone, probe, nxt), following - offset))
        probe, offset = nxt, following
    return tuple(found)


def notes(
    zone: ZoneInfo,
    walls: Callable[[datetime, datetime], Iterable[datetime]],
    gap: DstGap,
    fold: DstFold,
    after: datetime,
    until: datetime,
) -> list[DstNote]:
    """The notes of the wall times ``walls(low, high)`` yields (naive, in ``[low, high)``,
    ascending) in each gap and fold of ``zone`` whose note (:attr:`DstNote.at`) lies in
    ``(after, until]``, in order."""
    after, until = after.astimezone(UTC), until.astimezone(UTC)
    found: list[DstNote] = []
    for change, size in offset_changes(zone, after - _DAY, until + _DAY):
        before = (change - timedelta(microseconds=1)).astimezone(zone).utcoffset()
        old = before or timedelta(0)
        new = old + size
        naive = change.replace(tzinfo=None)
        low, high = sorted((naive + old, naive + new))
        kind = DstChange.GAP if size > timedelta(0) else DstChange.FOLD
        for wall in walls(low, high):
            first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
            second = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
            fires = tuple(resolve(zone, wall, gap, fold))
            note = DstNote(
                kind=kind,
                wall=wall,
                zone=zone.key,
                change=change,
                fires=fires,
                occurrences=(first,) if kind is DstChange.GAP else (first, second),
                policy=(gap if kind is DstChange.GAP else fold).value,
            )
            if after < note.at <= until:
                found.append(note)
    return found
