"""The slots of one spec in the load forecast's 24-hour window (:mod:`celery_dbeat.core.load`),
per minute bucket: enumerated slot by slot, or counted per minute when denser than
:data:`SLOT_CAP`, or placed by arithmetic for an interval; without the slots on the days a
calendar excludes, or after a schedule's last run. Pure.

A calendar's days are judged with :meth:`Calendar.excludes
<celery_dbeat.core.calendars.Calendar.excludes>`, as planning judges each slot as it comes due:
slot by slot where the slots are enumerated, and once per piece of the window between the
calendar's local midnights where they are counted.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, time, timedelta, timezone
from itertools import pairwise
from typing import Any

from .calendars import Calendar
from .timing import Timing
from .timing.cron import load_zone

__all__ = [
    "BUCKETS",
    "HORIZON",
    "MINUTE",
    "MINUTE_US",
    "SLOT_CAP",
    "US",
    "WINDOW_US",
    "Group",
    "SpecWindow",
    "bucket",
    "day_pieces",
    "enumerated",
    "interval_window",
    "micros",
]

#: How far ahead the forecast looks, in one-minute buckets.
HORIZON = timedelta(hours=24)
MINUTE = timedelta(minutes=1)
BUCKETS = HORIZON // MINUTE
#: Slots of one spec enumerated one by one; a denser spec is counted per minute.
SLOT_CAP = 2_000

#: Microseconds in a second and in a minute.
US = 1_000_000
MINUTE_US = 60 * US
_ONE_MICROSECOND = timedelta(microseconds=1)

#: A piece of the window: ``(after, until, excluded)``, microseconds from its start.
Piece = tuple[int, int, bool]


def micros(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * US + delta.microseconds


#: The window's length in microseconds: its instants are offsets in ``(-1, WINDOW_US]``.
WINDOW_US = micros(HORIZON)


def bucket(start: datetime, instant: datetime) -> int:
    """Minute ``b`` holds ``[start + b, start + b + 1)``; the window's last instant, the last."""
    return min(max(micros(instant - start) // MINUTE_US, 0), BUCKETS - 1)


@dataclass
class SpecWindow:
    """The slots in the window of one spec, shared by every row that has it (and a calendar)."""

    label: str
    #: Fires per minute bucket of one row with this spec.
    pattern: dict[int, int]
    #: The slots (and the first after the window, for jitter's cap); ``None`` when dense.
    slots: list[datetime] | None
    after: datetime | None
    #: The shortest gap between two slots (caps a suggested jitter).
    gap: timedelta | None
    #: An interval's slots as microseconds from the window's start (turned into ``slots`` only
    #: when jitter or ``max_runs`` needs them), and its period.
    offsets: range | None = None
    #: A dense spec's timing, to count it again between a calendar's midnights.
    timing: Timing | None = None
    #: The window's start (the instants of ``slots`` and ``timing`` are counted from it).
    origin: datetime | None = None
    #: Positions (in ``slots`` or ``offsets``) of the slots not sent: a calendar excludes them.
    unsent: frozenset[int] = frozenset()
    skipped: frozenset[int] = frozenset()
    #: Slots a calendar removes from one row's window.
    excluded: int = 0
    #: The pieces of the window a calendar keeps, ``(after, until]`` in microseconds from its
    #: start; ``None``: no calendar.
    kept: tuple[tuple[int, int], ...] | None = None
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def sent_between(self, after: int, until: int, first: int | None = None) -> int:
        """Its slots sent in ``(after, until]`` (microseconds from the window's start), without
        walking them: by arithmetic for an interval (from ``first``, a row's own first slot,
        when its rows share the spec by the minute or second their first slot falls in), by
        bisection of the slots, or counted (:meth:`Timing.count`) for a dense spec."""
        if until <= after:
            return 0
        if self.offsets is not None:
            start = self.offsets.start if first is None else first
            step = self.offsets.step
            return sum(_arithmetic(start, step, a, u) for a, u in _within(self.kept, after, until))
        if self.slots is not None:
            at = self.slot_offsets()
            lo, hi = bisect_right(at, after), bisect_right(at, until)
            return hi - lo - self._unsent_in(lo, hi)
        assert self.timing is not None
        origin = self._start()
        return sum(
            self.timing.count(
                origin + timedelta(microseconds=a), origin + timedelta(microseconds=u)
            )
            for a, u in _within(self.kept, after, until)
        )

    def all_between(self, after: int, until: int, first: int | None = None) -> int:
        """Its slots in ``(after, until]``, sent or not (a calendar's days included)."""
        if self.kept is None and not self.unsent:
            return self.sent_between(after, until, first)
        every = self._cache.get("all")
        if every is None:
            every = self._cache["all"] = replace(self, kept=None, unsent=frozenset())
        count: int = every.sent_between(after, until, first)
        return count

    def nth_after(self, after: int, n: int, first: int | None = None) -> int | None:
        """The offset of the ``n``-th slot sent after ``after`` (``n >= 1``), or ``None`` when
        fewer are sent in the window: a prefix sum of :attr:`pattern` finds its minute, a
        bisection of the microseconds in it (:meth:`sent_between`) its instant."""
        prefix = self._cache.get("prefix")
        if prefix is None:
            prefix = [0] * (BUCKETS + 1)
            for b in range(BUCKETS):
                prefix[b + 1] = prefix[b] + self.pattern.get(b, 0)
            self._cache["prefix"] = prefix
        after = max(after, -1)
        home = min(max(after, 0) // MINUTE_US, BUCKETS - 1)
        target = prefix[home] + self.sent_between(home * MINUTE_US - 1, after, first) + n
        if target > prefix[BUCKETS]:
            return None
        b = bisect_left(prefix, target) - 1
        needed = target - prefix[b]
        floor = b * MINUTE_US - 1
        lo, hi = floor + 1, _bucket_end(b)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.sent_between(floor, mid, first) >= needed:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def slot_offsets(self) -> list[int]:
        """Its enumerated slots as microseconds from the window's start."""
        at = self._cache.get("slots")
        if at is None:
            start = self._start()
            at = self._cache["slots"] = [micros(s - start) for s in self.slots or ()]
        return at

    def _unsent_in(self, lo: int, hi: int) -> int:
        if not self.unsent:
            return 0
        ordered = self._cache.get("unsent")
        if ordered is None:
            ordered = self._cache["unsent"] = sorted(self.unsent)
        return bisect_left(ordered, hi) - bisect_left(ordered, lo)

    def _start(self) -> datetime:
        assert self.origin is not None
        return self.origin

    def instants(self, start: datetime) -> list[datetime] | None:
        if self.offsets is not None and self.slots is None:
            self.slots = [start + timedelta(microseconds=o) for o in self.offsets]
            following = self.offsets.start + len(self.offsets) * self.offsets.step
            self.after = start + timedelta(microseconds=following)
        return self.slots

    @property
    def size(self) -> int | None:
        """Its slots sent in the window; ``None`` when dense."""
        if self.offsets is not None:
            return len(self.offsets) - len(self.unsent)
        return None if self.slots is None else len(self.slots) - len(self.unsent)

    def excluding(self, calendar: Calendar, start: datetime, pieces: list[Piece]) -> SpecWindow:
        """Without the slots on the days ``calendar`` excludes (``pieces``: its
        :func:`day_pieces` of the window from ``start``)."""
        if self.offsets is not None:
            offsets = self.offsets
            skipped = frozenset(i for lo, hi, out in pieces if out for i in _at(offsets, lo, hi))
            last = BUCKETS - 1
            pattern = Counter(
                min(o // MINUTE_US, last) for i, o in enumerate(offsets) if i not in skipped
            )
        elif self.slots is not None:
            skipped = frozenset(i for i, s in enumerate(self.slots) if calendar.excludes(s))
            pattern = Counter(
                bucket(start, s) for i, s in enumerate(self.slots) if i not in skipped
            )
        else:
            assert self.timing is not None
            kept = [(lo, hi) for lo, hi, out in pieces if not out]
            dense = counted(self.timing, start, start + HORIZON, self.label, kept)
            removed = sum(self.pattern.values()) - sum(dense.pattern.values())
            return replace(dense, excluded=removed, kept=tuple(kept))
        return replace(
            self,
            pattern=dict(pattern),
            unsent=skipped,
            skipped=skipped,
            excluded=len(skipped),
            kept=tuple((lo, hi) for lo, hi, out in pieces if not out),
        )


def enumerated(timing: Timing, start: datetime, end: datetime, label: str) -> SpecWindow:
    """The slots of ``timing`` in ``(start, end]``, per minute bucket; a spec denser than
    :data:`SLOT_CAP` is counted per minute instead of walked."""
    slots: list[datetime] = []
    after = None
    for slot in timing.slots_after(start):
        if slot > end:
            after = slot
            break
        if len(slots) == SLOT_CAP:
            return counted(timing, start, end, label)
        slots.append(slot)
    gaps = [b - a for a, b in pairwise(slots)]
    pattern = Counter(bucket(start, s) for s in slots)
    return SpecWindow(label, dict(pattern), slots, after, min(gaps, default=None), origin=start)


def interval_window(first: int, every: int, on_grid: bool, label: str) -> SpecWindow:
    """An interval's slots from ``first`` on, every ``every``, in microseconds from the window's
    start (IntervalSpec's arithmetic, without a datetime per slot); ``on_grid``: whether the
    window's last instant may hold one."""
    offsets = range(first, micros(HORIZON) + int(on_grid), every)
    last = BUCKETS - 1
    pattern = Counter(min(o // MINUTE_US, last) for o in offsets)
    gap = timedelta(microseconds=every)
    return SpecWindow(label, dict(pattern), None, None, gap, offsets)


def counted(
    timing: Timing,
    start: datetime,
    end: datetime,
    label: str,
    kept: Sequence[tuple[int, int]] | None = None,
) -> SpecWindow:
    """Slots per minute bucket, counted (:meth:`Timing.count`); only those in the ``kept``
    pieces, ``(after, until]`` in microseconds from ``start``, if given."""
    pattern: dict[int, int] = {}
    for b in range(BUCKETS):
        lo = start + b * MINUTE
        until = end if b == BUCKETS - 1 else lo + MINUTE - _ONE_MICROSECOND
        after = max(start, lo - _ONE_MICROSECOND)
        if kept is None:
            count = timing.count(after, until)
        else:
            a, u = micros(after - start), micros(until - start)
            count = sum(
                timing.count(
                    start + timedelta(microseconds=max(a, piece_after)),
                    start + timedelta(microseconds=min(u, piece_until)),
                )
                for piece_after, piece_until in kept
                if max(a, piece_after) < min(u, piece_until)
            )
        if count:
            pattern[b] = count
    busiest = max(pattern.values(), default=1)
    return SpecWindow(label, pattern, None, None, MINUTE / busiest, timing=timing, origin=start)


def day_pieces(calendar: Calendar, start: datetime, end: datetime) -> list[Piece]:
    """The window ``(start, end]`` cut at the calendar's local midnights, as ``(after, until,
    excluded)`` in microseconds from ``start``: every instant of a piece is on one date in the
    calendar's zone, which :meth:`Calendar.excludes` (asked of the piece's last instant) judges
    for the whole piece."""
    zone = load_zone(calendar.timezone)
    cuts = [0]
    day = start.astimezone(zone).date()
    while True:
        day += timedelta(days=1)
        midnight = datetime.combine(day, time(), tzinfo=zone).astimezone(timezone.utc)
        if midnight > end:
            break
        if midnight > start:  # the piece before holds up to the microsecond before midnight
            cuts.append(micros(midnight - start) - 1)
    cuts.append(micros(end - start))
    return [
        (lo, hi, calendar.excludes(start + timedelta(microseconds=hi)))
        for lo, hi in pairwise(cuts)
        if hi > lo
    ]


def _at(offsets: range, after: int, until: int) -> range:
    """The positions in ``offsets`` of the values in ``(after, until]``."""
    first = max(0, (after - offsets.start) // offsets.step + 1)
    last = min(len(offsets) - 1, (until - offsets.start) // offsets.step)
    return range(first, last + 1)


def _bucket_end(b: int) -> int:
    """The last microsecond of minute bucket ``b`` (the last holds the window's end)."""
    return micros(HORIZON) if b == BUCKETS - 1 else (b + 1) * MINUTE_US - 1


def _arithmetic(first: int, step: int, after: int, until: int) -> int:
    """How many of ``first + n * step`` (``n >= 0``) lie in ``(after, until]``."""

    def upto(x: int) -> int:
        return 0 if x < first else (x - first) // step + 1

    return max(0, upto(until) - upto(after))


def _within(
    kept: Sequence[tuple[int, int]] | None, after: int, until: int
) -> list[tuple[int, int]]:
    """``(after, until]`` cut to the pieces a calendar keeps (all of it without a calendar)."""
    if kept is None:
        return [(after, until)]
    return [(max(after, lo), min(until, hi)) for lo, hi in kept if max(after, lo) < min(until, hi)]


@dataclass
class Group:
    """The rows of one spec (and calendar) and one jitter. Rows whose bounds (``start_at``,
    ``end_at``) or last run (``max_runs``) fall in the window are clipped to a span of it: the
    minutes the span covers whole are counted from the spec's :attr:`~SpecWindow.pattern`
    (``cover``, a difference array: +members where a span starts, -members where it ends), the
    minutes at its two ends by :meth:`SpecWindow.sent_between` (``edges``)."""

    spec: SpecWindow
    jitter: float | None
    #: Rows over the whole window, and rows clipped to a span of it.
    members: int = 0
    clipped: int = 0
    names: list[str] = field(default_factory=list)
    #: Jittered rows, hashed one by one: ``(uid, after, until, first, bounded)``, their span
    #: (microseconds from the start) and first slot (an interval's own, else ``None``);
    #: ``bounded``: an ``end_at`` ends the span (no slot after the last caps its jitter).
    uids: list[tuple[str, int, int, int | None, bool]] = field(default_factory=list)
    #: Slots the clipped rows send in their spans, and those a calendar removes from them.
    clipped_slots: int = 0
    clipped_excluded: int = 0
    cover: list[int] | None = None
    edges: dict[int, int] = field(default_factory=dict)
    fires: dict[int, float] = field(default_factory=dict)

    @property
    def slots(self) -> int:
        """Slots these rows send in the window (how much jitter there is to hash)."""
        return self.members * (self.spec.size or 0) + self.clipped_slots

    @property
    def excluded(self) -> int:
        """Slots a calendar removes from the rows' windows."""
        return self.members * self.spec.excluded + self.clipped_excluded

    def clip(self, members: int, after: int, until: int, first: int | None) -> None:
        """Count ``members`` rows whose slots are those of the spec in ``(after, until]``."""
        after = max(after, -1)  # no slot at the start itself: the window is (start, end]
        until = min(until, WINDOW_US)
        if until <= after:
            return
        lo_full = (after + MINUTE_US) // MINUTE_US
        hi_full = BUCKETS if until >= WINDOW_US else min((until + 1) // MINUTE_US, BUCKETS - 1)
        if lo_full < hi_full:
            if self.cover is None:
                self.cover = [0] * (BUCKETS + 1)
            self.cover[lo_full] += members
            self.cover[hi_full] -= members
        for edge in {lo_full - 1, hi_full}:
            if 0 <= edge < BUCKETS and not lo_full <= edge < hi_full:
                lo = max(after, edge * MINUTE_US - 1)
                hi = min(until, WINDOW_US if edge == BUCKETS - 1 else (edge + 1) * MINUTE_US - 1)
                count = self.spec.sent_between(lo, hi, first)
                if count:
                    self.edges[edge] = self.edges.get(edge, 0) + members * count

    def slot_counts(self) -> dict[int, float]:
        """Slots per minute bucket of all its rows, before jitter."""
        counts = {b: float(c * self.members) for b, c in self.spec.pattern.items()}
        if self.cover is not None:
            running = 0
            for b in range(BUCKETS):
                running += self.cover[b]
                if running and b in self.spec.pattern:
                    counts[b] = counts.get(b, 0.0) + running * self.spec.pattern[b]
        for b, count in self.edges.items():
            counts[b] = counts.get(b, 0.0) + count
        return {b: c for b, c in counts.items() if c}
