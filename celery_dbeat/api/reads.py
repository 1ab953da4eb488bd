"""The management API's reads: schedules, their fires, beats, the audit trail, previews and
the load picture, each in one read-only connection of its own."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

from ..core.calendars import PreviewSlot, preview
from ..core.counts import require_count
from ..core.definitions import Definition
from ..core.errors import ValidationError
from ..core.explain import Explanation, Verdict, explain
from ..core.formats import seconds_text
from ..core.health import ScheduleHealth, judge
from ..core.load import Load
from ..core.timing import DstNote, Timing, require_aware
from ..results import BeatInfo, FireInfo, ScheduleInfo
from ..store import alerts, audit, beats, fires, queue, schedules
from ..store import load as load_store
from ..store.audit import Entry
from ..store.calendars import load_calendar
from ..store.health import unhealthy_candidates
from ..store.reading import Unreadable, named_rows, unreadable_values
from .session import Session

__all__ = ["Reads"]


class Reads(Session):
    """What :class:`~celery_dbeat.api.Schedules` reads (:class:`~.session.Session`: its
    arguments)."""

    def get(self, name: str) -> ScheduleInfo:
        """The schedule ``name``; raises :class:`~celery_dbeat.core.errors.ScheduleNotFound`."""
        with self.store.engine.connect() as conn:
            return ScheduleInfo.from_row(schedules.load_schedule(conn, name))

    def list(
        self,
        *,
        enabled: bool | None = None,
        search: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> builtins.list[ScheduleInfo]:
        """Schedules by name: only enabled ones (``enabled=True``) or paused ones (``False``),
        those whose name or task holds ``search``, ``limit`` of them from ``offset``."""
        with self.store.engine.connect() as conn:
            rows = schedules.list_schedules(
                conn, enabled=enabled, search=search, limit=limit, offset=offset
            )
        return [ScheduleInfo.from_row(row) for row in rows]

    def due(
        self, *, now: datetime | None = None, limit: int | None = None
    ) -> builtins.list[ScheduleInfo]:
        """Enabled schedules whose fire is due (a backlog, if beats are down or behind)."""
        with self.store.engine.connect() as conn:
            rows = schedules.due_schedules(conn, now or self.clock.now(), limit)
        return [ScheduleInfo.from_row(row) for row in rows]

    def count_due(self, *, now: datetime | None = None) -> int:
        """How many enabled schedules are due at ``now`` (default: now): :meth:`due` counted."""
        with self.store.engine.connect() as conn:
            return schedules.count_due(conn, now or self.clock.now())

    def queued(self) -> tuple[int, datetime | None]:
        """Slots queued for spare capacity (catch-up of policy ``all``, backfill): how many, and
        the oldest. Beats publish them, oldest first, once no on-time fire is due."""
        with self.store.engine.connect() as conn:
            return queue.queued_backlog(conn)

    def upcoming(
        self, count: int = 5, *, now: datetime | None = None
    ) -> builtins.list[ScheduleInfo]:
        """The next ``count`` enabled schedules to fire after ``now``."""
        with self.store.engine.connect() as conn:
            rows = schedules.upcoming_schedules(conn, now or self.clock.now(), count)
        return [ScheduleInfo.from_row(row) for row in rows]

    def failing(self) -> builtins.list[ScheduleInfo]:
        """Schedules marked with an error, by name."""
        with self.store.engine.connect() as conn:
            return [ScheduleInfo.from_row(row) for row in schedules.failing_schedules(conn)]

    def in_alert(self) -> builtins.list[ScheduleInfo]:
        """Schedules in alert (``alert_kind``: ``failing`` or ``missed``; ``alert_episode``:
        the slot that opened it), by name."""
        with self.store.engine.connect() as conn:
            return [ScheduleInfo.from_row(row) for row in alerts.alerting_schedules(conn)]

    def counts(self) -> dict[str, int]:
        """How many schedules are ``active``, ``paused``, ``finished`` and in ``error``."""
        with self.store.engine.connect() as conn:
            return schedules.state_counts(conn)

    def paused_counts(self) -> dict[str, int]:
        """How many schedules are paused, by what paused them (``person``, ``config``,
        ``failures``; ``unknown`` for pauses made before celery-dbeat recorded it)."""
        with self.store.engine.connect() as conn:
            return schedules.paused_counts(conn)

    def beats(self) -> builtins.list[BeatInfo]:
        """Every beat's heartbeat, by name."""
        with self.store.engine.connect() as conn:
            return [BeatInfo(**row._asdict()) for row in beats.beat_heartbeats(conn)]

    def live_beats(self) -> builtins.list[BeatInfo]:
        """The beats seen within ``live_within``, on the database's clock: those that would send
        a fire recorded now (a trigger, a new schedule) without waiting for a beat to start."""
        with self.store.engine.connect() as conn:
            now = self.now(conn)
            rows = beats.beat_heartbeats(conn)
        return [
            BeatInfo(**row._asdict()) for row in rows if now - row.last_seen_at <= self.live_within
        ]

    def no_beat_running(self, waiting: str) -> str:
        """What every surface says when fires it recorded (a run now, a backfill) wait for a
        beat because none is running (:meth:`live_beats` is empty); ``waiting`` says what waits
        (``"'report' is"``, ``"the fires are"``)."""
        within = seconds_text(self.live_within.total_seconds())
        return f"no beat is running (none seen within {within}): {waiting} sent when a beat starts"

    def history(self, name: str, *, limit: int = 50) -> builtins.list[FireInfo]:
        """The schedule's ``limit`` newest fires (what each slot became), newest first."""
        with self.store.engine.connect() as conn:
            return [FireInfo.from_row(r) for r in fires.fire_history(conn, name, limit)]

    def audit(
        self, name: str | None = None, *, since: datetime | None = None, limit: int = 100
    ) -> builtins.list[Entry]:
        """The audit trail, newest first: who changed what (``{field: [old, new]}``), when (the
        database's clock) and from where; of the schedule ``name`` (under every name it had),
        from ``since`` on, at most ``limit`` (1 to 10000) entries."""
        require_aware("since", since)
        with self.store.engine.connect() as conn:
            return audit.entries(conn, name=name, since=since, limit=require_count(limit))

    def unhealthy(self, *, now: datetime | None = None) -> builtins.list[ScheduleHealth]:
        """Schedules whose last run failed or that have not succeeded within their expected
        period, by name; see :mod:`celery_dbeat.core.health` for the exact rules."""
        now = now or self.clock.now()
        with self.store.engine.connect() as conn:
            candidates = unhealthy_candidates(conn)
        return judge(candidates, now)

    def preview(
        self, name: str, *, count: int = 5, after: datetime | None = None
    ) -> builtins.list[PreviewSlot]:
        """The next ``count`` slots a stored schedule fires after ``after`` (default: now), and
        the slots its calendar removes among them (``excluded_by``: the calendar's name; at
        most ``count`` of those listed), looking at most at 100,000 slots; each with the DST
        changes that moved it or repeated its wall time (``dst``)."""
        require_aware("after", after)
        count = require_count(count)
        with self.store.engine.connect() as conn:
            row = schedules.load_schedule(conn, name)
            calendar = None if row.calendar is None else load_calendar(conn, row.calendar)
        timing = _timing(row)
        start = after or self.clock.now()
        return marked(timing, preview(timing.slots_after(start), calendar, count))

    def dst_notes(
        self, name: str, *, after: datetime | None = None, until: datetime | None = None
    ) -> builtins.list[DstNote]:
        """Every wall time of the schedule ``name`` that a DST change moves (a gap) or repeats
        (a fold) in ``(after, until]`` (default: the year from now), each saying where it fires
        (:class:`~celery_dbeat.core.timing.DstNote`); none for a schedule of elapsed time."""
        require_aware("after", after)
        require_aware("until", until)
        with self.store.engine.connect() as conn:
            row = schedules.load_schedule(conn, name)
        start = after or self.clock.now()
        return _timing(row).dst_notes(start, until or start + _YEAR)

    def explain(self, name: str, *, slot: datetime | None = None) -> Explanation:
        """Why ``slot`` of the schedule ``name`` did or did not fire, from its record and its
        definition (:func:`celery_dbeat.core.explain.explain`): without ``slot``, its latest
        slot up to now, or its next one if none passed yet (``chosen`` says which); a schedule
        whose stored definition cannot be read is ``error``. Raises
        :class:`~celery_dbeat.core.errors.ScheduleNotFound`."""
        require_aware("slot", slot)
        slot = None if slot is None else slot.astimezone(timezone.utc)
        now = self.clock.now()
        with self.store.engine.connect() as conn:
            row = schedules.load_schedule(conn, name)
            info = ScheduleInfo.from_row(row)
            try:
                timing = _timing(row)
            except ValidationError as exc:  # beat sets such a row aside: say so
                return Explanation(
                    name,
                    slot or now,
                    Verdict.ERROR,
                    f"Not fired: the stored definition cannot be read ({exc}); beat sets the "
                    "schedule aside until it is fixed.",
                    "asked" if slot else "now",
                    {"error": str(exc)},
                )
            chosen = "asked"
            if slot is None:
                floor = min(row.created_at, row.start_at or row.created_at) - _YEAR
                slot = timing.last_before(now + _TICK, floor)
                chosen = "latest"
                if slot is None:
                    slot, chosen = timing.first_after(now) or now, "next"
            records, previous = fires.slot_records(conn, row.id, slot)
            trail = audit.entries(conn, name=name, limit=10_000)
            calendar = None if row.calendar is None else load_calendar(conn, row.calendar)
        return explain(
            info,
            timing,
            slot,
            now=now,
            fires=[FireInfo.from_row(r) for r in records],
            previous=None if previous is None else FireInfo.from_row(previous),
            audit=trail,
            calendar=calendar,
            chosen=chosen,
        )

    def load(
        self, *, start: datetime | None = None, top: int = 5, herd_at: float | None = None
    ) -> Load:
        """Fires per minute over the 24 hours from ``start`` (default: the start of the current
        minute) of every enabled schedule, each at its due instant (jitter included, as beat
        computes it); the ``top`` busiest minutes that are herds (at least ``herd_at`` fires;
        default: twice the day's median minute and at least 10), with the schedules that make
        them and a hint; and the day before: lag (``sent_at - slot``) p50/p99 and failed runs
        per hour. See :mod:`celery_dbeat.core.load` for how the work stays bounded."""
        require_aware("start", start)
        if isinstance(top, bool) or not isinstance(top, int) or not 0 <= top <= 100:
            raise ValidationError("top", top, "must be a whole number from 0 to 100")
        if herd_at is not None and (
            isinstance(herd_at, bool)
            or not isinstance(herd_at, (int, float))
            or not 1 <= herd_at < float("inf")
        ):
            raise ValidationError("herd_at", herd_at, "must be a number of fires >= 1")
        if start is None:
            now = self.clock.now()
            start = now.replace(second=0, microsecond=0)
        with self.store.engine.connect() as conn:
            return load_store.load(conn, start, top=top, herd_at=herd_at)

    def find(self, names: Iterable[str]) -> dict[str, ScheduleInfo]:
        """The schedules of ``names`` that exist, by name (not every schedule, as :meth:`list`)."""
        with self.store.engine.connect() as conn:
            rows = named_rows(conn, builtins.list(names))
        return {row.name: ScheduleInfo.from_row(row) for row in rows}

    def unreadable(self, ids: Iterable[int], columns: Sequence[str]) -> dict[int, Unreadable]:
        """Of the schedules ``ids``, those whose ``columns`` hold a stored value that cannot be
        read, and which (such a schedule reads with them empty, ``last_error`` saying why)."""
        with self.store.engine.connect() as conn:
            return unreadable_values(conn, builtins.list(ids), columns)


_YEAR = timedelta(days=365)
_TICK = timedelta(microseconds=1)


def _timing(row: Any) -> Timing:
    """A stored schedule's timing, its bounds included (as beat plans it)."""
    definition = Definition.from_columns(row._mapping)
    return definition.timing(row.start_at or row.anchor_at or row.created_at)


def marked(timing: Timing, shown: Sequence[PreviewSlot]) -> builtins.list[PreviewSlot]:
    """``shown`` with the DST notes of each slot (:attr:`PreviewSlot.dst`)."""
    marks = timing.dst_marks([p.slot for p in shown])
    return [replace(p, dst=dst) for p, dst in zip(shown, marks, strict=True)]
