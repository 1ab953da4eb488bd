"""Beat's SQL: the due query, the batch it claims and records, recovery of unpublished fires
and heartbeats (the database clock they are taken on is :mod:`.clock`'s). The management writes
are ``manage.py``'s, run tracking ``runs.py``'s; schema changes live in ``migrations/``.

The scheduler's write path is one transaction per batch of due schedules::

    with store.claim_due(now, limit) as batch:      # rows locked FOR UPDATE SKIP LOCKED
        ...plan each batch.schedules[i]...
        to_publish = batch.record(transitions)      # compare-and-set + fire rows, one commit

``record`` advances each schedule's ``next_run_at`` only if it still holds the value (and
definition ``version``) that was read, and inserts the fire rows in the same transaction; the
unique key on ``(schedule_id, slot, manual)`` makes a second recording of a slot impossible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields
from datetime import datetime, timedelta
from typing import Any, NamedTuple, cast

import sqlalchemy as sa
from celery.utils.log import get_logger
from sqlalchemy.engine import Connection, Engine, Row

from ..core.fires import FireStatus, PublishRequest, ScheduleRow, Transition
from .clock import DatabaseClock
from .database import IDLE_IN_TRANSACTION, create_engine
from .models import Beat, Fire, Schedule
from .reading import IN_CHUNK, UNREADABLE, chunked, read_rows

__all__ = [
    "PUBLISH_COLUMNS",
    "B",
    "DueBatch",
    "F",
    "Peek",
    "S",
    "Store",
]

logger = get_logger(__name__)

S = cast(sa.Table, Schedule.__table__)
F = cast(sa.Table, Fire.__table__)
B = cast(sa.Table, Beat.__table__)
#: Rows looked at when the earliest instant :meth:`Store.peek` finds cannot be read.
_PEEK_HEADS = 10
#: Heartbeat rows older than this are deleted by any beat (a beat killed without a clean stop).
_FORGET_BEATS_AFTER = timedelta(days=1)

#: ``DueBatch._compare_and_set`` of a whole batch on PostgreSQL: one array per column, unnested.
_CAS_COLUMNS = (
    "id",
    "version",
    "old_next",
    "next_run_at",
    "due_at",
    "last_error",
    "last_slot",
    "runs_added",
    "finished",
)
_CAS_BATCH_PG = sa.text(
    """
    UPDATE dbeat_schedules AS s SET
        next_run_at = v.next_run_at,
        due_at = v.due_at,
        last_error = v.last_error,
        last_slot = COALESCE(v.last_slot, s.last_slot),
        run_count = s.run_count + v.runs_added,
        finished_at = CASE WHEN v.finished THEN CAST(:now AS timestamptz) ELSE s.finished_at END,
        enabled = CASE WHEN v.finished THEN false ELSE s.enabled END
    FROM unnest(
        CAST(:id AS bigint[]), CAST(:version AS integer[]), CAST(:old_next AS timestamptz[]),
        CAST(:next_run_at AS timestamptz[]), CAST(:due_at AS timestamptz[]),
        CAST(:last_error AS text[]), CAST(:last_slot AS timestamptz[]),
        CAST(:runs_added AS integer[]), CAST(:finished AS boolean[])
    ) AS v(id, version, old_next, next_run_at, due_at, last_error, last_slot, runs_added, finished)
    WHERE s.id = v.id AND s.version = v.version
        AND s.next_run_at IS NOT DISTINCT FROM v.old_next
    RETURNING s.id
    """
)

#: Columns beat needs to plan a schedule's fires.
#: The columns of a :class:`ScheduleRow` (the SQLite-only exact text of next_run_at aside).
_PLAN_COLUMNS = [S.c[f.name] for f in fields(ScheduleRow) if f.name != "next_run_at_text"]


#: What a recorded fire needs to be published: its row joined with its schedule's payload.
PUBLISH_COLUMNS = [
    F.c.id,
    F.c.task_id,
    F.c.schedule_id,
    F.c.slot,
    F.c.attempts,
    F.c.lease_until,
    F.c.manual,
    S.c.name,
    S.c.task,
    S.c.args,
    S.c.kwargs,
    S.c.options,
]


class Peek(NamedTuple):
    """What :meth:`Store.peek` saw: when the earliest schedule is due, whether some need a
    recompute, and the database clock (``None`` when there is none: see :mod:`.clock`)."""

    earliest: datetime | None
    needs_compute: bool
    database_now: datetime | None = None


def _set_aside(conn: Connection, rows: Sequence[Row[Any]], problems: Mapping[int, str]) -> None:
    """Mark the schedules whose stored values cannot be read (``problems``, from
    :func:`read_rows`) with the error: with ``next_run_at`` NULL and an error a row is neither
    due nor recomputed until someone corrects it, and every other schedule fires as usual."""
    if not problems:
        return
    conn.execute(
        sa.update(S)
        .where(S.c.id == sa.bindparam("row_id"))
        .values(next_run_at=None, due_at=None, last_error=sa.bindparam("error")),
        [{"row_id": i, "error": e} for i, e in problems.items()],
    )
    for row in rows:
        if row.id in problems:
            logger.error("dbeat: schedule %r set aside: %s", row.name, problems[row.id])


class DueBatch:
    """Due schedules claimed in one open transaction (see the module docstring)."""

    def __init__(
        self,
        connection: Connection,
        schedules: list[ScheduleRow],
        beat: str,
        now: datetime,
        lease_clock: Callable[[Connection, datetime], datetime],
    ):
        self._lease_clock = lease_clock
        self._conn = connection
        self.schedules = schedules
        self._beat = beat
        self._now = now
        #: The transitions the last ``record`` applied (the others lost their compare-and-set
        #: to another beat or an edit).
        self.applied: list[Transition] = []

    @property
    def connection(self) -> Connection:
        """The batch's open transaction, for reads that must see the locked rows' state."""
        return self._conn

    def lease_until(self, now: datetime, lease: timedelta) -> datetime:
        """When a lease taken now ends, on the clock every beat compares leases with."""
        return self._lease_clock(self._conn, now) + lease

    def record(
        self, transitions: Sequence[Transition], lease_until: datetime
    ) -> list[PublishRequest]:
        """Apply ``transitions``; return the PENDING fires now recorded, to be published."""
        conn, now = self._conn, self._now
        if conn.dialect.name == "postgresql" and len(transitions) > 1:
            applied = self._compare_and_set_all(transitions)
        else:
            applied = [t for t in transitions if self._compare_and_set(t)]

        # A slot can already be recorded when an edit moved next_run_at back onto it; such
        # slots are left as they are (published, or being published, by whoever recorded them).
        wanted = sorted({(t.schedule.id, f.slot) for t in applied for f in t.fires})
        existing: set[tuple[int, datetime]] = set()
        for chunk in chunked(wanted, IN_CHUNK // 2):
            ids = sorted({sid for sid, _ in chunk})
            slots = sorted({slot for _, slot in chunk})
            rows = conn.execute(
                sa.select(F.c.schedule_id, F.c.slot).where(
                    F.c.schedule_id.in_(ids), F.c.slot.in_(slots), F.c.manual.is_(False)
                )
            )
            existing.update((r.schedule_id, r.slot) for r in rows)

        inserts: list[dict[str, Any]] = []
        published: list[PublishRequest] = []
        for t in applied:
            row = t.schedule
            for f in t.fires:
                if (row.id, f.slot) in existing:
                    continue
                pending = f.status is FireStatus.PENDING
                inserts.append(
                    {
                        "schedule_id": row.id,
                        "slot": f.slot,
                        "manual": False,
                        "status": f.status.value,
                        "slot_count": f.slot_count,
                        "first_slot": f.first_slot,
                        "task_id": f.task_id,
                        "beat": self._beat,
                        "recorded_at": now,
                        "lease_until": lease_until if pending else None,
                        "attempts": 0,
                    }
                )
                if pending:
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
                        )
                    )
        if inserts:
            conn.execute(sa.insert(F), inserts)
        self.applied = applied
        return published

    def _compare_and_set(self, t: Transition) -> bool:
        """Apply one transition if its row still holds the ``next_run_at`` and ``version`` read."""
        row = t.schedule
        old: sa.ColumnElement[bool]
        if row.next_run_at is None:
            old = S.c.next_run_at.is_(None)
        elif row.next_run_at_text is not None:
            old = sa.type_coerce(S.c.next_run_at, sa.String) == row.next_run_at_text
        else:
            old = S.c.next_run_at == row.next_run_at
        values: dict[str, Any] = {
            "next_run_at": t.next_run_at,
            "due_at": t.due_at,
            "last_error": t.error,
        }
        if t.last_slot is not None:
            values["last_slot"] = t.last_slot
        if t.runs_added:
            values["run_count"] = S.c.run_count + t.runs_added
        if t.finished:
            values.update(finished_at=self._now, enabled=False)
        result = self._conn.execute(
            sa.update(S).where(S.c.id == row.id, S.c.version == row.version, old).values(**values)
        )
        return result.rowcount == 1

    def _compare_and_set_all(self, transitions: Sequence[Transition]) -> list[Transition]:
        """:meth:`_compare_and_set` for a whole batch in one statement (PostgreSQL): the same
        condition and values per row, one round trip, and a statement text that does not grow
        with the batch (one array per column), so it is compiled once."""
        columns: dict[str, list[Any]] = {name: [] for name in _CAS_COLUMNS}
        for t in transitions:
            for name, value in zip(
                _CAS_COLUMNS,
                (
                    t.schedule.id,
                    t.schedule.version,
                    t.schedule.next_run_at,
                    t.next_run_at,
                    t.due_at,
                    t.error,
                    t.last_slot,
                    t.runs_added,
                    t.finished,
                ),
                strict=True,
            ):
                columns[name].append(value)
        won = set(self._conn.execute(_CAS_BATCH_PG, {"now": self._now, **columns}).scalars())
        return [t for t in transitions if t.schedule.id in won]


class Store:
    """Schedule storage. Accepts an ``Engine`` (left open) or a URL (owned, closed by ``close``)."""

    def __init__(
        self,
        engine: Engine | str,
        *,
        engine_options: dict[str, Any] | None = None,
        idle_in_transaction: timedelta = IDLE_IN_TRANSACTION,
        server_clock: bool = True,
    ):
        if isinstance(engine, Engine):
            self.engine, self._owns_engine = engine, False
        else:
            self.engine = create_engine(
                engine, engine_options, idle_in_transaction=idle_in_transaction
            )
            self._owns_engine = True
        dialect = self.engine.dialect
        #: The clock leases and writes are taken on (:mod:`.clock`); ``server_clock=False``
        #: turns the database server's off, for tests that move a fake clock past leases.
        self.clock = DatabaseClock(dialect.name, enabled=server_clock)
        # SKIP LOCKED lets beats split a herd instead of queueing on each other's rows. SQLite
        # has no row locks; its writers are serialised by BEGIN IMMEDIATE instead.
        self._skip_locked = dialect.name in ("postgresql", "mysql", "mariadb")

    def close(self) -> None:
        if self._owns_engine:
            self.engine.dispose()

    # The beat's read path -------------------------------------------------------------------

    def peek(self) -> Peek:
        """When the earliest enabled schedule is due, whether some need a recompute, and (in
        the same query) a reading of the database clock (:mod:`.clock`).

        If the earliest instant stored cannot be read, the rows that hold it are set aside
        first (see :func:`_set_aside`)."""
        try:
            return self._peek()
        except UNREADABLE:
            with self.engine.begin() as conn:
                for column in (S.c.next_run_at, S.c.due_at):
                    query = (
                        sa.select(S.c.id, S.c.name, column)
                        .where(S.c.enabled == sa.true(), column.is_not(None))
                        .order_by(column)
                        .limit(_PEEK_HEADS)
                    )
                    _set_aside(conn, *read_rows(conn, query))
            return self._peek()

    def _peek(self) -> Peek:
        plain = sa.select(sa.func.min(S.c.next_run_at)).where(
            S.c.enabled == sa.true(), S.c.due_at.is_(None)
        )
        jittered = sa.select(sa.func.min(S.c.due_at)).where(S.c.enabled == sa.true())
        needs = sa.exists().where(
            S.c.enabled == sa.true(),
            S.c.due_at.is_(None),
            S.c.next_run_at.is_(None),
            S.c.last_error.is_(None),
        )
        columns: list[Any] = [plain.scalar_subquery(), jittered.scalar_subquery(), needs]
        if self.clock.column is not None:
            columns.append(self.clock.column)
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(*columns)).one()
        earliest = min((t for t in row[:2] if t is not None), default=None)
        database_now = self.clock.read(row[3]) if self.clock.available else None
        return Peek(earliest, bool(row[2]), database_now)

    @contextmanager
    def claim_due(self, now: datetime, limit: int, beat: str) -> Iterator[DueBatch]:
        """Lock up to ``limit`` due schedules (and ones asking for a recompute) in a transaction.

        The transaction commits when the block exits normally and rolls back on an exception.
        """
        columns: list[sa.ColumnElement[Any]] = list(_PLAN_COLUMNS)
        if self.engine.dialect.name == "sqlite":
            columns.append(sa.type_coerce(S.c.next_run_at, sa.String).label("next_run_at_text"))
        with self.engine.begin() as conn:
            enabled = S.c.enabled == sa.true()
            queries = [
                # Due without jitter, by next_run_at; due with jitter, by due_at; asking for a
                # recompute. Each is a range of the one index.
                sa.select(*columns)
                .where(enabled, S.c.due_at.is_(None), S.c.next_run_at <= now)
                .order_by(S.c.next_run_at),
                sa.select(*columns).where(enabled, S.c.due_at <= now).order_by(S.c.due_at),
                sa.select(*columns).where(
                    enabled,
                    S.c.due_at.is_(None),
                    S.c.next_run_at.is_(None),
                    S.c.last_error.is_(None),
                ),
            ]
            rows: list[ScheduleRow] = []
            for query in queries:
                if len(rows) >= limit:
                    break
                query = query.limit(limit - len(rows))
                if self._skip_locked:
                    query = query.with_for_update(skip_locked=True)
                found, problems = read_rows(conn, query)
                _set_aside(conn, found, problems)
                rows += [ScheduleRow.from_row(r) for r in found if r.id not in problems]
            yield DueBatch(conn, rows, beat, now, self.clock.now)

    # Heartbeats ------------------------------------------------------------------------------

    def heartbeat(self, beat: Mapping[str, Any], now: datetime) -> list[tuple[datetime, datetime]]:
        """Upsert this beat's heartbeat row (``name``, ``hostname``, ``pid``, ``version``,
        ``started_at``) with ``last_seen_at = now``; return every beat's ``(started_at,
        last_seen_at)``, this one's included."""
        with self.engine.begin() as conn:
            done = conn.execute(
                sa.update(B).where(B.c.name == beat["name"]).values(**beat, last_seen_at=now)
            )
            if done.rowcount == 0:
                try:
                    with conn.begin_nested():
                        conn.execute(sa.insert(B), [dict(beat, last_seen_at=now)])
                except sa.exc.IntegrityError:
                    pass  # a namesake beat inserted it; its next heartbeat and ours will update
            conn.execute(sa.delete(B).where(B.c.last_seen_at < now - _FORGET_BEATS_AFTER))
            lifetimes = conn.execute(sa.select(B.c.started_at, B.c.last_seen_at)).all()
        return [(started, seen) for started, seen in lifetimes]

    def forget_beat(self, name: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.delete(B).where(B.c.name == name))

    # Publishing bookkeeping ----------------------------------------------------------------

    def mark_sent(self, task_ids: Sequence[str], now: datetime, beat: str) -> None:
        if not task_ids:
            return
        with self.engine.begin() as conn:
            for chunk in chunked(task_ids):
                conn.execute(
                    sa.update(F)
                    .where(F.c.task_id.in_(chunk), F.c.status == FireStatus.PENDING.value)
                    .values(status=FireStatus.SENT.value, sent_at=now, beat=beat, error=None)
                )

    def mark_publish_failed(
        self, task_id: str, error: str, retry_at: datetime, *, give_up: bool
    ) -> None:
        values: dict[str, Any] = {"error": error[:2000], "lease_until": retry_at}
        if give_up:
            values["status"] = FireStatus.FAILED.value
        with self.engine.begin() as conn:
            conn.execute(
                sa.update(F)
                .where(F.c.task_id == task_id, F.c.status == FireStatus.PENDING.value)
                .values(attempts=F.c.attempts + 1, **values)
            )

    def claim_stale_pending(
        self, now: datetime, lease_until: datetime, limit: int
    ) -> list[PublishRequest]:
        """Take over recorded fires whose recording beat did not publish them in time.

        ``now`` and ``lease_until`` are on this beat's clock; on a database server they are
        moved onto the database clock (:mod:`.clock`) before they are compared with
        leases other beats wrote.
        """
        claimed: list[PublishRequest] = []
        with self.engine.begin() as conn:
            now, lease_until = self.clock.moved(conn, now, lease_until)
            query = (
                sa.select(*PUBLISH_COLUMNS)
                .join(S, S.c.id == F.c.schedule_id)
                .where(F.c.status == FireStatus.PENDING.value, F.c.lease_until <= now)
                .order_by(F.c.lease_until)
                .limit(limit)
            )
            if self._skip_locked:
                query = query.with_for_update(of=F, skip_locked=True)
            for r in conn.execute(query).all():
                result = conn.execute(
                    sa.update(F)
                    .where(
                        F.c.id == r.id,
                        F.c.status == FireStatus.PENDING.value,
                        F.c.lease_until == r.lease_until,
                    )
                    .values(lease_until=lease_until)
                )
                if result.rowcount == 1:
                    claimed.append(PublishRequest.from_row(r))
        return claimed
