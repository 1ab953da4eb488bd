"""The next 24 hours, counted: fires per minute, the herds in them and who makes them (the last
day, :mod:`~celery_dbeat.core.lastday`, rides along). Pure: the store reads the rows
(:mod:`celery_dbeat.store.load`).

Slots come from the timing code beat uses (:func:`~celery_dbeat.core.timing.build_timing`), and
a jittered fire is counted at its due instant (:func:`~celery_dbeat.core.planning.due_times`,
hashed on the schedule's ``uid``, as beat does). Only the slots beat sends count: not those on a
day the schedule's calendar excludes, nor those after its last run (:mod:`~celery_dbeat.core.window`
says how each spec's window is drawn); a row whose calendar is missing or cannot be read is set
aside, as beat sets it aside. Bounded work, whatever the number of rows:

- rows sharing a spec (and a calendar) share its slots: cron and solar specs are keyed by their
  fields (so the thousands of rows on ``0 * * * *`` are enumerated once), interval specs by
  their period and phase (``anchor`` modulo ``every``, which is all that places their slots in
  the window);
- a spec is enumerated slot by slot up to :data:`SLOT_CAP` slots; a denser one is counted per
  minute (:meth:`Timing.count`, arithmetic for intervals);
- jitter is hashed for at most :data:`JITTER_BUDGET` fires; beyond, each jittered fire is
  spread evenly over its jitter window (the expected count), and the result says so.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from .calendars import Calendar
from .definitions import TIMING_COLUMNS
from .errors import ValidationError
from .formats import seconds_text
from .herds import SAMPLE_NAMES, Herd, Load, find_herds, herd_threshold
from .planning import due_times, timing_of
from .specs import Rrule
from .timing import build_timing
from .window import (
    BUCKETS,
    HORIZON,
    MINUTE_US,
    SLOT_CAP,
    US,
    WINDOW_US,
    Group,
    Piece,
    SpecWindow,
    bucket,
    day_pieces,
    enumerated,
    interval_window,
    micros,
)

__all__ = [
    "BUCKETS",
    "HORIZON",
    "JITTER_BUDGET",
    "ROW_COLUMNS",
    "SLOT_CAP",
    "Herd",
    "Load",
    "LoadCounter",
]

#: The columns of a schedule row that :meth:`LoadCounter.add` reads: its name, uid and calendar,
#: its timing (spec, bounds, jitter), what anchors an interval and what ends its runs.
_ANCHOR_AND_RUNS = ("anchor_at", "created_at", "max_runs", "run_count")
ROW_COLUMNS = ("name", "uid", "calendar", *TIMING_COLUMNS, *_ANCHOR_AND_RUNS)

#: Jittered fires whose due instant is hashed; beyond, jitter is spread evenly (expected counts).
JITTER_BUDGET = 100_000


class LoadCounter:
    """Counts rows fed in chunks (:meth:`add`), then :meth:`result`. ``start`` is now."""

    def __init__(
        self,
        start: datetime,
        *,
        herd_at: float | None = None,
        calendars: Mapping[str, Calendar | str] | None = None,
    ) -> None:
        """``calendars``: the calendars the rows name, as the store reads them for beat
        (:class:`~celery_dbeat.store.calendars.CalendarCache`): a :class:`Calendar`, or why it
        cannot be read; a name left out is a calendar that does not exist. More may be added to
        :attr:`calendars` before each :meth:`add`."""
        self.start = start
        self.end = start + HORIZON
        self.herd_at = herd_at
        self.calendars: dict[str, Calendar | str] = dict(calendars or {})
        self.schedules = 0
        self.unreadable = 0
        self._pieces: dict[str, list[Piece]] = {}
        self._specs: dict[Hashable, SpecWindow | None] = {}
        self._periods: set[int] = set()
        self._groups: dict[tuple[Hashable, float | None], Group] = {}

    def add(self, rows: Iterable[Any]) -> None:
        """Count rows with the :data:`ROW_COLUMNS`: enabled, unfinished rows without an
        error."""
        for row in rows:
            self.add_shared(row, 1, (row.name,))

    def add_shared(self, row: Any, members: int, names: Sequence[str]) -> None:
        """Count ``members`` schedules that share ``row``'s timing and calendar and have no
        jitter, bounds or run limit (the store groups them in SQL); ``names``: a few of them.
        The same count as :meth:`add` of each."""
        self.schedules += members
        calendar = None
        if row.calendar is not None:
            named = self.calendars.get(row.calendar)
            if not isinstance(named, Calendar):  # beat sets the row aside with an error
                self.unreadable += members
                return
            calendar = named
        try:
            placed = self._place(row)
            if placed is None:
                return
            key, after, until, first = placed
            if key in self._specs:
                spec = self._specs[key]
            else:
                spec = self._specs[key] = self._spec(key, row)
            if spec is not None and calendar is not None:
                key = ("calendar", key, calendar.name)
                if key in self._specs:
                    spec = self._specs[key]
                else:
                    spec = self._specs[key] = self._excluding(spec, calendar)
        except (ValidationError, ArithmeticError, ValueError, TypeError):
            self.unreadable += members
            return
        if spec is None:
            return
        ended = until < WINDOW_US  # by end_at
        if row.max_runs is not None:
            left = row.max_runs - (row.run_count or 0)
            last = spec.nth_after(after, left, first) if left > 0 else after
            if last is not None and last < until:  # the last run falls in the window
                until, ended = last, False
        jitter = row.jitter or None
        group = self._groups.get((key, jitter))
        if group is None:
            group = self._groups[key, jitter] = Group(spec, jitter)
        group.names.extend(names[: SAMPLE_NAMES - len(group.names)])
        if after < 0 and until >= WINDOW_US:
            group.members += members
            if jitter:
                group.uids.append((row.uid, -1, WINDOW_US, first, False))
            return
        group.clipped += members
        group.clip(members, after, until, first)
        if until > after:
            sent = spec.sent_between(after, until, first)
            group.clipped_slots += members * sent if spec.size is not None else 0
            if spec.excluded:
                group.clipped_excluded += members * (spec.all_between(after, until, first) - sent)
        if jitter:
            group.uids.append((row.uid, after, until, first, ended))

    def _place(self, row: Any) -> tuple[Hashable, int, int, int | None] | None:
        """What places the row's slots in the window (a key rows share), the span of the window
        its bounds leave it, ``(after, until]`` in microseconds from the start (``after < 0``
        and ``until`` at the window's end: all of it), and an interval's own first slot;
        ``None``: no slot in the window."""
        if row.end_at is not None and row.end_at <= self.start:
            return None
        after, until = -1, WINDOW_US
        if row.start_at is not None and row.start_at > self.start:
            after = micros(row.start_at - self.start) - 1  # start_at <= slot
        if row.end_at is not None and row.end_at < self.end:
            until = micros(row.end_at - self.start)  # slot <= end_at
        if row.kind == "once":
            if row.run_at is None or not self.start < row.run_at <= self.end:
                return None if row.run_at is not None else (("row", row.uid), after, until, None)
            return ("once", row.run_at), after, until, None
        if row.kind == "cron":
            key = ("cron", row.cron, row.timezone, row.dst_gap, row.dst_fold, row.cron_days)
            return key, after, until, None
        if row.kind == "interval":
            anchor = row.start_at or row.anchor_at or row.created_at
            every = micros(timedelta(seconds=row.every))
            if anchor is None or every <= 0:
                return ("row", row.uid), after, until, None
            if anchor > self.start:  # anchor + n * every, n >= 1: none at the anchor itself
                after = max(after, micros(anchor - self.start))
            # The first slot after the start, as microseconds from it, is all that places the
            # others. Only the minute it falls in matters to the per-minute counts when the
            # period is whole minutes, only the second when whole seconds: rows differing by
            # less share one key. Each row's own first slot places its span's ends and its
            # jittered fires exactly.
            first = every - micros(self.start - anchor) % every
            unit = MINUTE_US if every % MINUTE_US == 0 else US if every % US == 0 else 1
            # A first slot off the unit's grid must stay before the window's end (itself on it).
            grid = ("every", every, first // unit * unit, first % unit == 0)
            return grid, after, until, first
        if row.kind == "solar":
            return ("solar", row.solar_event, row.latitude, row.longitude), after, until, None
        return ("row", row.uid), after, until, None

    def _spec(self, key: Hashable, row: Any) -> SpecWindow | None:
        if isinstance(key, tuple) and key[0] == "every":
            # Every phase of a period has the same spec but for its anchor: validate the period
            # once, then place the slots from the first (``anchor + n * every``, n >= 1).
            _, every, first, on_grid = key
            if every not in self._periods:
                build_timing(kind="interval", every=row.every, anchor_at=self.start)
                self._periods.add(every)
            return interval_window(first, every, on_grid, _label(row))
        timing = timing_of(row, bounds=False)  # the row's span clips it (``_place``)
        if row.start_at is not None and row.end_at is not None and row.end_at < row.start_at:
            timing_of(row)  # refused as beat refuses it
        return enumerated(timing, self.start, self.end, _label(row))

    def _excluding(self, spec: SpecWindow, calendar: Calendar) -> SpecWindow:
        pieces = self._pieces.get(calendar.name)
        if pieces is None:
            pieces = self._pieces[calendar.name] = day_pieces(calendar, self.start, self.end)
        return spec.excluding(calendar, self.start, pieces)

    def result(self, *, top: int = 5) -> Load:
        jittered = sum(g.slots for g in self._groups.values() if g.jitter)
        exact = jittered <= JITTER_BUDGET
        totals = [0.0] * BUCKETS
        for group in self._groups.values():
            group.fires = self._fires(group, exact)
            for minute, count in group.fires.items():
                totals[minute] += count
        excluded = sum(g.excluded for g in self._groups.values())
        threshold = herd_threshold(totals, self.herd_at)
        herds = find_herds(self.start, totals, list(self._groups.values()), threshold, top)
        return Load(
            self.start,
            tuple(totals),
            self.schedules,
            self.unreadable,
            exact,
            threshold,
            herds,
            excluded=float(excluded),
        )

    def _fires(self, group: Group, exact: bool) -> dict[int, float]:
        spec = group.spec
        if not group.jitter or (spec.slots is None and spec.offsets is None):
            # A dense spec's fires are less than a minute apart: jitter, capped at the gap to
            # the next slot, moves each by less than that, and the minute counts hardly change.
            return group.slot_counts()
        window = timedelta(seconds=group.jitter)
        fires: dict[int, float] = {}
        if exact:
            # Due instants over each row's slots, as beat computes them (a jittered fire stays
            # before the spec's next slot, excluded or not); then only the slots it sends.
            for uid, after, until, first, bounded in group.uids:
                slots, sent, following = self._row_slots(spec, after, until, first)
                ahead = [*slots, *([following] if following and not bounded else [])]
                for i, (_, due) in enumerate(list(due_times(uid, ahead, window))[: len(slots)]):
                    if sent[i] and due <= self.end:
                        b = bucket(self.start, due)
                        fires[b] = fires.get(b, 0.0) + 1
            return fires
        # Beyond the budget: each minute's slots spread evenly over the jitter window (capped
        # at the gap between slots), from the minute's middle.
        width = micros(min(window, spec.gap) if spec.gap else window)
        for b, count in group.slot_counts().items():
            lo = b * MINUTE_US + MINUTE_US // 2
            hi = min(lo + max(width, 1), WINDOW_US)
            for m in range(lo // MINUTE_US, (hi - 1) // MINUTE_US + 1):
                part = min(hi, (m + 1) * MINUTE_US) - max(lo, m * MINUTE_US)
                if part > 0 and m < BUCKETS:
                    fires[m] = fires.get(m, 0.0) + count * part / max(width, 1)
        return fires

    def _row_slots(
        self, spec: SpecWindow, after: int, until: int, first: int | None
    ) -> tuple[list[datetime], list[bool], datetime | None]:
        """A jittered row's slots in its span, whether each is sent, and the slot after."""
        if spec.offsets is not None:
            step = spec.offsets.step
            start = spec.offsets.start if first is None else first
            n = 0 if after < start else (after - start) // step + 1
            at = list(range(start + n * step, min(until, WINDOW_US) + 1, step))
            kept = spec.kept
            sent = [kept is None or any(lo < o <= hi for lo, hi in kept) for o in at]
            beyond = start + (n + len(at)) * step
            instants = [self.start + timedelta(microseconds=o) for o in at]
            return instants, sent, self.start + timedelta(microseconds=beyond)
        slots = spec.instants(self.start) or []
        offsets = spec.slot_offsets()
        lo, hi = bisect_right(offsets, after), bisect_right(offsets, until)
        following = slots[hi] if hi < len(slots) else spec.after
        return slots[lo:hi], [i not in spec.unsent for i in range(lo, hi)], following


def _label(row: Any) -> str:
    if row.kind == "cron":
        zone = row.timezone or "UTC"
        return f"cron '{row.cron}' {zone}"
    if row.kind == "interval":
        return f"every {seconds_text(row.every)}"
    if row.kind == "solar":
        return f"solar {row.solar_event} ({row.latitude:g}, {row.longitude:g})"
    if row.kind == "rrule":
        return Rrule(row.rrule or "", row.timezone).text()
    return str(row.kind)
