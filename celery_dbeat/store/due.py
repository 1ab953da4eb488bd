"""Beat's due path behind :class:`.database.Store` (whose docstrings state the contract): what is
due (:func:`peek`), the batch of due schedules a beat claims (:func:`claim_due`) and how it
records what it planned (:meth:`DueBatch.record`). The unique key on ``(schedule_id, slot,
manual)`` makes a second recording of a slot impossible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import sqlalchemy as sa
from celery.utils.log import get_logger
from sqlalchemy.engine import Connection, Engine, Row

from ..core.calendars import Calendar
from ..core.fires import (
    FireStatus,
    NewFire,
    PublishRequest,
    ScheduleRow,
    Transition,
    encode_slots,
)
from ..core.overlap import RunState
from .calendars import CalendarCache
from .clock import DatabaseClock
from .compare_and_set import compare_and_set
from .engine import skips_locked
from .failures import driver_message
from .fires import recorded_slots
from .isolation import aside_values, isolated, set_schedule_aside
from .models import F, S
from .reading import PLAN_COLUMNS, UNREADABLE, read_rows
from .runs import run_states
from .schedules import ensure_uid, paused_expression
from .slot_arguments import with_previous_slots

__all__ = ["DueBatch", "Peek", "claim_due", "peek"]

logger = get_logger(__name__)

#: Rows looked at when the earliest instant :func:`peek` finds cannot be read.
_PEEK_HEADS = 10

#: An enabled schedule asking for a recompute: no next slot, and not set aside with an error.
_NEEDS_COMPUTE = sa.and_(
    S.c.enabled == sa.true(),
    S.c.due_at.is_(None),
    S.c.next_run_at.is_(None),
    S.c.last_error.is_(None),
)


class Peek(NamedTuple):
    """What :func:`peek` saw: when the earliest schedule is due, whether some need a
    recompute, the database clock (``None`` when there is none: see :mod:`.clock`), and when
    the first queued fire (catch-up, backfill) may go (``None``: none is queued but those of
    paused schedules, which wait for a resume)."""

    earliest: datetime | None
    needs_compute: bool
    database_now: datetime | None = None
    queued_at: datetime | None = None
    #: Schedules set aside because a stored instant could not be read.
    set_aside: int = 0


def _set_aside(conn: Connection, rows: Sequence[Row[Any]], problems: Mapping[int, str]) -> int:
    """Set aside (:mod:`.isolation`) the schedules whose stored values cannot be read
    (``problems``, from :func:`read_rows`); returns how many."""
    if not problems:
        return 0
    conn.execute(
        sa.update(S)
        .where(S.c.id == sa.bindparam("row_id"))
        .values(aside_values(sa.bindparam("error"))),
        [{"row_id": i, "error": e} for i, e in problems.items()],
    )
    for row in rows:
        if row.id in problems:
            logger.error("dbeat: schedule %r set aside: %s", row.name, problems[row.id])
    return len(problems)


def _identified(conn: Connection, row: ScheduleRow) -> ScheduleRow:
    """``row``, with a ``uid`` given now if it was inserted by hand without one."""
    uid = ensure_uid(conn, row.id, row.uid)
    return row if uid == row.uid else replace(row, uid=uid)


def _lease_of(fire: NewFire, lease_until: datetime) -> datetime | None:
    """A PENDING fire is leased to the recording beat; a QUEUED one waits in slot order (a
    queued run, in the order of its oldest slot)."""
    if fire.status is FireStatus.PENDING:
        return lease_until
    if fire.status is FireStatus.QUEUED:
        return fire.first_slot or fire.slot
    return None


class DueBatch:
    """Due schedules claimed in one open transaction (:meth:`.database.Store.claim_due`)."""

    def __init__(
        self,
        connection: Connection,
        schedules: list[ScheduleRow],
        beat: str,
        now: datetime,
        lease_clock: Callable[[Connection, datetime], datetime],
        set_aside: int = 0,
    ):
        self._lease_clock = lease_clock
        self._conn = connection
        self.schedules = schedules
        self._beat = beat
        self._now = now
        #: The transitions the last ``record`` applied (the others lost their compare-and-set
        #: to another beat or an edit).
        self.applied: list[Transition] = []
        #: Schedules set aside while claiming: a stored value could not be read.
        self.set_aside = set_aside

    def run_states(self, default_max_run_time: timedelta) -> dict[int, RunState]:
        """The run state of each claimed schedule whose overlap policy needs it, read in the
        batch's transaction (:func:`.runs.run_states`)."""
        return run_states(self._conn, self.schedules, self._now, default_max_run_time)

    def calendars(self, cache: CalendarCache) -> dict[str, Calendar | str]:
        """The calendars the claimed schedules name, read through ``cache`` in the batch's
        transaction (:meth:`.calendars.CalendarCache.read`)."""
        return cache.read(self._conn, [row.calendar for row in self.schedules])

    def lease_until(self, now: datetime, lease: timedelta) -> datetime:
        """When a lease taken now ends, on the clock every beat compares leases with."""
        return self._lease_clock(self._conn, now) + lease

    def record(
        self, transitions: Sequence[Transition], lease_until: datetime
    ) -> list[PublishRequest]:
        """Apply ``transitions``; return the PENDING fires now recorded, to be published. A
        schedule whose write the database refuses is set aside (:mod:`.isolation`) and appears
        in :attr:`applied` as a transition with that error."""
        self.applied = []
        recorded, refused = isolated(
            self._conn, list(transitions), lambda part: self._record(part, lease_until)
        )
        requests: list[PublishRequest] = []
        for applied, published in recorded:
            self.applied += applied
            requests += published
        for transition, exc in refused:
            self._set_aside_refused(transition, exc)
        return requests

    def _set_aside_refused(self, transition: Transition, exc: sa.exc.StatementError) -> None:
        row = transition.schedule
        error = (
            f"the database refused to record its fires ({driver_message(exc)}); correct the"
            " schedule and give its timing again ('celery dbeat update'), or remove it"
        )
        # Not even the error can be written: the row is left as it is (it is tried again on
        # the next tick) rather than stop the others.
        if set_schedule_aside(self._conn, row.id, error, version=row.version, name=row.name):
            self.applied.append(Transition(row, next_run_at=None, error=error))

    def _record(
        self, transitions: Sequence[Transition], lease_until: datetime
    ) -> tuple[list[Transition], list[PublishRequest]]:
        conn, now = self._conn, self._now
        applied = compare_and_set(conn, transitions, now)

        # A slot can already be recorded when an edit moved next_run_at back onto it; such
        # slots are left as they are (published, or being published, by whoever recorded them).
        existing = recorded_slots(conn, ((t.schedule.id, f.slot) for t in applied for f in t.fires))

        inserts: list[dict[str, Any]] = []
        published: list[PublishRequest] = []
        for t in applied:
            row = t.schedule
            for f in t.fires:
                if (row.id, f.slot) in existing:
                    continue
                inserts.append(
                    {
                        "schedule_id": row.id,
                        "slot": f.slot,
                        "manual": False,
                        "status": f.status.value,
                        "slot_count": f.slot_count,
                        "first_slot": f.first_slot,
                        "calendar": f.calendar,
                        "slots": encode_slots(f.slots) if f.slots else None,
                        "task_id": f.task_id,
                        "beat": self._beat,
                        "recorded_at": now,
                        "lease_until": _lease_of(f, lease_until),
                        "attempts": 0,
                    }
                )
                if f.status is FireStatus.PENDING:
                    assert f.task_id is not None
                    published.append(
                        PublishRequest(
                            f.task_id,
                            row.id,
                            row.name,
                            f.slot,
                            row.task,
                            row.args,
                            row.kwargs,
                            row.options,
                            lease_until=lease_until,
                            slot_kwarg=row.slot_kwarg,
                            previous_slot_kwarg=row.previous_slot_kwarg,
                        )
                    )
        if inserts:
            conn.execute(sa.insert(F), inserts)
        rows = {t.schedule.id: t.schedule for t in applied}
        return applied, with_previous_slots(conn, published, rows)


def peek(engine: Engine, clock: DatabaseClock) -> Peek:
    """:meth:`.database.Store.peek`."""
    try:
        return _peek(engine, clock)
    except UNREADABLE:
        set_aside = 0
        with engine.begin() as conn:
            for column in (S.c.next_run_at, S.c.due_at):
                query = (
                    sa.select(S.c.id, S.c.name, column)
                    .where(S.c.enabled == sa.true(), column.is_not(None))
                    .order_by(column)
                    .limit(_PEEK_HEADS)
                )
                set_aside += _set_aside(conn, *read_rows(conn, query))
        return _peek(engine, clock)._replace(set_aside=set_aside)


def _peek(engine: Engine, clock: DatabaseClock) -> Peek:
    plain = sa.select(sa.func.min(S.c.next_run_at)).where(
        S.c.enabled == sa.true(), S.c.due_at.is_(None)
    )
    jittered = sa.select(sa.func.min(S.c.due_at)).where(S.c.enabled == sa.true())
    needs = sa.exists().where(_NEEDS_COMPUTE)
    queued = (
        sa.select(sa.func.min(F.c.lease_until))
        .join(S, S.c.id == F.c.schedule_id)
        .where(F.c.status == FireStatus.QUEUED.value, ~paused_expression())
    )
    columns: list[Any] = [
        plain.scalar_subquery(),
        jittered.scalar_subquery(),
        needs,
        queued.scalar_subquery(),
    ]
    if clock.column is not None:
        columns.append(clock.column)
    with engine.connect() as conn:
        row = conn.execute(sa.select(*columns)).one()
    earliest = min((t for t in row[:2] if t is not None), default=None)
    database_now = clock.read(row[4]) if clock.available else None
    return Peek(earliest, bool(row[2]), database_now, row[3])


@contextmanager
def claim_due(
    engine: Engine,
    clock: DatabaseClock,
    now: datetime,
    limit: int,
    beat: str,
    late_since: datetime | None = None,
) -> Iterator[DueBatch]:
    """:meth:`.database.Store.claim_due`."""
    columns: list[sa.ColumnElement[Any]] = list(PLAN_COLUMNS)
    if engine.dialect.name == "sqlite":
        columns.append(sa.type_coerce(S.c.next_run_at, sa.String).label("next_run_at_text"))
    with engine.begin() as conn:
        enabled = S.c.enabled == sa.true()
        # Due without jitter, by next_run_at; due with jitter, by due_at; asking for a recompute.
        # Each is a range of the one index.
        plain = (S.c.next_run_at, sa.and_(enabled, S.c.due_at.is_(None)))
        jittered = (S.c.due_at, enabled)
        ranges: list[tuple[sa.ColumnElement[Any], sa.ColumnElement[bool]]] = []
        for column, where in (plain, jittered):
            if late_since is None:
                ranges.append((column, sa.and_(where, column <= now)))
            else:
                ranges.append((column, sa.and_(where, column >= late_since, column <= now)))
        if late_since is not None:
            for column, where in (plain, jittered):
                ranges.append((column, sa.and_(where, column < late_since)))
        queries = [sa.select(*columns).where(where).order_by(column) for column, where in ranges]
        queries.append(sa.select(*columns).where(_NEEDS_COMPUTE))
        rows: list[ScheduleRow] = []
        set_aside = 0
        for query in queries:
            if len(rows) >= limit:
                break
            query = query.limit(limit - len(rows))
            if skips_locked(engine):
                query = query.with_for_update(skip_locked=True)
            found, problems = read_rows(conn, query)
            set_aside += _set_aside(conn, found, problems)
            rows += [
                _identified(conn, ScheduleRow.from_row(r)) for r in found if r.id not in problems
            ]
        yield DueBatch(conn, rows, beat, now, clock.now, set_aside)
