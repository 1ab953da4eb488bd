"""Runs behind :class:`.database.Store` (whose docstrings state the contract): the worker hook's
events applied to fire rows (:func:`record_runs`), what the overlap policy needs
(:func:`run_states`, :func:`release_buffered`) and the pruning of history.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection, Engine, Row

from ..core.fires import FINAL_RUN_STATUSES, FireStatus, PublishRequest, RunStatus, ScheduleRow
from ..core.overlap import OverlapPolicy, RunState
from .alerts import RaisedAlert
from .clock import DatabaseClock
from .fires import PUBLISH_COLUMNS, lease_each, set_unreadable_fires_aside
from .isolation import storable
from .models import F, S
from .outcomes import FailurePause, count_outcomes, lock_outcomes
from .pruning import FIRE_COLUMNS, HOST_MONOTONIC, delete_in_batches, forget_fires, prune_over
from .schedules import paused_expression

__all__ = [
    "FailurePause",
    "RecordedRuns",
    "RejectedRun",
    "RunEvent",
    "prune_history",
    "prune_history_limits",
    "recent_successes",
    "record_runs",
    "release_buffered",
    "run_states",
]

#: Fire states that are (or will be) a run on a worker.
_IN_FLIGHT = (FireStatus.PENDING.value, FireStatus.SENT.value)
_LIVE = (*_IN_FLIGHT, FireStatus.BUFFERED.value)
#: History rows that are never pruned: they still have to be published.
_UNPUBLISHED = (FireStatus.PENDING.value, FireStatus.QUEUED.value, FireStatus.BUFFERED.value)


@dataclass(frozen=True)
class RunEvent:
    """One thing the worker hook saw happen to a beat-fired task."""

    task_id: str
    status: RunStatus
    at: datetime
    worker: str | None = None
    #: Seconds the task ran, on a final event.
    runtime: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class RejectedRun:
    """A run the database refused for a value of its own; it was not written."""

    task_id: str
    error: BaseException


#: What :func:`_fold` knows of a run before its first event.
_NOTHING_SEEN = dict.fromkeys(("t_started", "t_finished", "t_runtime", "t_error", "t_worker"))


def _fold(events: Iterable[RunEvent]) -> list[dict[str, Any]]:
    """One update per task id: its first start, its latest status, and its end if it ended."""
    runs: dict[str, dict[str, Any]] = {}
    for event in events:
        run = runs.setdefault(event.task_id, {"t_id": event.task_id, **_NOTHING_SEEN})
        run["t_status"] = event.status.value
        run["t_worker"] = storable(event.worker, 255) or run["t_worker"]
        if event.status is RunStatus.STARTED and run["t_started"] is None:
            run["t_started"] = event.at
        if event.error is not None:
            run["t_error"] = storable(event.error, 2000)
        if event.status.value in FINAL_RUN_STATUSES:
            run["t_finished"] = event.at
            # MySQL refuses NaN and infinities; PostgreSQL and SQLite would keep them.
            finite = event.runtime is not None and math.isfinite(event.runtime)
            run["t_runtime"] = event.runtime if finite else None
    return list(runs.values())


def _refused_value(exc: BaseException) -> bool:
    """Whether ``exc`` is the database or its driver refusing a value of the statement, which
    retrying cannot cure, rather than the database being unreachable or not ready."""
    if isinstance(exc, (sa.exc.DataError, sa.exc.IntegrityError)):
        return True
    if isinstance(exc, sa.exc.DBAPIError):
        return False
    # A bind parameter that could not be converted (StatementError), or a driver's encoding
    # error, raised before the statement was sent.
    return isinstance(exc, (sa.exc.StatementError, ValueError, TypeError, OverflowError))


@dataclass(frozen=True)
class RecordedRuns:
    """What :func:`record_runs` did besides writing: the runs refused, the schedules paused."""

    rejected: list[RejectedRun] = field(default_factory=list)
    paused: list[FailurePause] = field(default_factory=list)
    #: The alerts the runs raised (``alert_after_failures``: failing, recovered).
    alerts: list[RaisedAlert] = field(default_factory=list)


def record_runs(engine: Engine, events: Sequence[RunEvent]) -> RecordedRuns:
    """:meth:`.database.Store.record_runs`."""
    updates = _fold(events)
    if not updates:
        return RecordedRuns()
    final = sa.bindparam("t_finished", type_=F.c.finished_at.type)
    statement = (
        sa.update(F)
        .where(
            F.c.task_id == sa.bindparam("t_id"),
            sa.or_(F.c.finished_at.is_(None), final.is_not(None)),
        )
        .values(
            run_status=sa.bindparam("t_status"),
            started_at=sa.func.coalesce(
                F.c.started_at, sa.bindparam("t_started", type_=F.c.started_at.type)
            ),
            finished_at=sa.func.coalesce(final, F.c.finished_at),
            runtime=sa.func.coalesce(sa.bindparam("t_runtime", type_=sa.Double()), F.c.runtime),
            run_error=sa.func.coalesce(sa.bindparam("t_error", type_=sa.Text()), F.c.run_error),
            worker=sa.func.coalesce(sa.bindparam("t_worker", type_=sa.String()), F.c.worker),
        )
    )
    try:
        return _write_runs(engine, statement, updates)
    except Exception as exc:
        if not _refused_value(exc):
            raise
    # Which runs the database refuses, each tried in a savepoint of a transaction rolled back
    # (the outcomes are counted under locks taken before the runs are written), then the rest.
    rejected: list[RejectedRun] = []
    with engine.connect() as conn:
        trying = conn.begin()
        try:
            for update in updates:
                try:
                    with conn.begin_nested():
                        conn.execute(statement, [update])
                except Exception as exc:
                    if not _refused_value(exc):
                        raise
                    rejected.append(RejectedRun(update["t_id"], exc))
        finally:
            trying.rollback()
    refused = {r.task_id for r in rejected}
    written = _write_runs(engine, statement, [u for u in updates if u["t_id"] not in refused])
    return RecordedRuns(rejected, written.paused, written.alerts)


def _write_runs(
    engine: Engine, statement: sa.Update, updates: Sequence[dict[str, Any]]
) -> RecordedRuns:
    """Write ``updates`` in one statement and count their outcomes, in one transaction."""
    if not updates:
        return RecordedRuns()
    with engine.begin() as conn:
        outcomes = lock_outcomes(conn, updates)
        conn.execute(statement, updates)
        counted = count_outcomes(conn, outcomes, updates)
        return RecordedRuns(paused=counted.paused, alerts=counted.alerts)


#: The newest live fires that show a schedule's run state: with an overlap policy it has at most
#: one run and one buffered fire that matter.
_NEWEST = 3
_STATE_COLUMNS = (
    F.c.schedule_id,
    F.c.id,
    F.c.status,
    F.c.finished_at,
    F.c.started_at,
    F.c.sent_at,
    F.c.recorded_at,
)


def _newest_live(schedule_id: int | sa.ColumnElement[int]) -> sa.Select[Any]:
    """A schedule's :data:`_NEWEST` live fires by the (schedule_id, slot) key."""
    return (
        sa.select(*_STATE_COLUMNS)
        .where(F.c.schedule_id == schedule_id, F.c.status.in_(_LIVE))
        .order_by(F.c.slot.desc())
        .limit(_NEWEST)
    )


def _newest_live_of(conn: Connection, ids: Sequence[int]) -> dict[int, list[Row[Any]]]:
    """:func:`_newest_live` of many schedules in one statement. PostgreSQL joins it
    ``LATERAL`` to the ids. MariaDB has no ``LATERAL``: there, and on SQLite, the slot of each
    schedule's :data:`_NEWEST`-th live fire (one descent of the (schedule_id, slot) index) and
    its live fires from that slot on. (PostgreSQL flattens that form into a hash join over every
    live fire: 90 against 14 ms for 500 schedules with an hour of history.)"""
    query: sa.Select[Any]
    if conn.dialect.name == "postgresql":
        unnest = sa.func.unnest(sa.bindparam("ids", list(ids), type_=ARRAY(sa.BigInteger)))
        id_column = unnest.table_valued("id").render_derived()
        newest = _newest_live(id_column.c.id).lateral()
        query = sa.select(newest).select_from(id_column).join(newest, sa.true())
    else:
        newer = F.alias("newer")
        floor = (
            sa.select(newer.c.slot)
            .where(newer.c.schedule_id == S.c.id, newer.c.status.in_(_LIVE))
            .order_by(newer.c.slot.desc())
            .offset(_NEWEST - 1)
            .limit(1)
            .scalar_subquery()
        )
        floors = sa.select(S.c.id, floor.label("floor")).where(S.c.id.in_(ids)).subquery()
        query = (
            sa.select(*_STATE_COLUMNS)
            .select_from(floors)
            .join(
                F,
                sa.and_(
                    F.c.schedule_id == floors.c.id,
                    F.c.status.in_(_LIVE),
                    F.c.slot >= sa.func.coalesce(floors.c.floor, F.c.slot),
                ),
            )
            .order_by(F.c.schedule_id, F.c.slot.desc())
        )
    fires: dict[int, list[Row[Any]]] = {i: [] for i in ids}
    for fire in conn.execute(query):
        newest_fires = fires[fire.schedule_id]
        if len(newest_fires) < _NEWEST:  # two fires of the floor's slot: a slot's manual fire too
            newest_fires.append(fire)
    return fires


def _state(
    conn: Connection,
    schedule_id: int,
    now: datetime,
    max_run_time: timedelta,
    *,
    exclude: int | None = None,
) -> RunState:
    return _state_of(conn.execute(_newest_live(schedule_id)), now, max_run_time, exclude=exclude)


def _state_of(
    fires: Iterable[Row[Any]], now: datetime, max_run_time: timedelta, *, exclude: int | None = None
) -> RunState:
    """The run state shown by a schedule's newest live fires (see :func:`_state`)."""
    running = buffered = False
    for fire in fires:
        if fire.id == exclude:
            continue
        if fire.status == FireStatus.BUFFERED.value:
            buffered = True
        elif fire.finished_at is None:
            since = fire.started_at or fire.sent_at or fire.recorded_at
            running = running or now - since < max_run_time
    return RunState(running=running, buffered=buffered)


def _max_run_time(value: float | None, default: timedelta) -> timedelta:
    return default if value is None else timedelta(seconds=value)


def run_states(
    conn: Connection, rows: Sequence[ScheduleRow], now: datetime, default_max_run_time: timedelta
) -> dict[int, RunState]:
    """The run state of each row whose overlap policy needs it (``skip``, ``buffer_one``), read
    in one statement for them all (:func:`_newest_live_of`)."""
    limits = {
        r.id: _max_run_time(r.max_run_time, default_max_run_time)
        for r in rows
        if r.overlap_policy not in (None, OverlapPolicy.ALLOW.value)
    }
    if not limits:
        return {}
    fires = _newest_live_of(conn, list(limits))
    return {i: _state_of(fires[i], now, limit) for i, limit in limits.items()}


def release_buffered(
    engine: Engine,
    clock: DatabaseClock,
    now: datetime,
    lease_until: datetime,
    default_max_run_time: timedelta,
    beat: str,
    limit: int,
) -> list[PublishRequest]:
    query = (
        sa.select(*PUBLISH_COLUMNS, S.c.max_run_time)
        .join(S, S.c.id == F.c.schedule_id)
        .where(F.c.status == FireStatus.BUFFERED.value, ~paused_expression())
        .order_by(F.c.slot)
        .limit(limit)
    )
    with engine.begin() as conn:
        # Leases are compared on the database's clock; ``now`` stays this beat's, as the
        # runs it is compared with were timed by beats and workers.
        _, lease_until = clock.moved(conn, now, lease_until)

        def release(part: Sequence[Row[Any]]) -> list[PublishRequest]:
            released = []
            for r in part:
                limit_of_run = _max_run_time(r.max_run_time, default_max_run_time)
                if _state(conn, r.schedule_id, now, limit_of_run, exclude=r.id).running:
                    continue
                done = conn.execute(
                    sa.update(F)
                    .where(F.c.id == r.id, F.c.status == FireStatus.BUFFERED.value)
                    .values(status=FireStatus.PENDING.value, lease_until=lease_until, beat=beat)
                )
                if done.rowcount == 1:
                    released.append(PublishRequest.from_row(r, lease_until))
            return released

        rows = set_unreadable_fires_aside(conn, query)
        return lease_each(conn, rows, release, "release it", lambda row: int(row.id))


def prune_history(
    engine: Engine,
    before: datetime,
    *,
    batch: int = 1000,
    budget: float = 0.2,
    monotonic: Callable[[], float] = HOST_MONOTONIC,
) -> int:
    """:meth:`.database.Store.prune_history`, ``batch`` rows per transaction for ``budget`` s."""
    return delete_in_batches(
        engine,
        F,
        sa.and_(F.c.slot < before, F.c.status.not_in(_UNPUBLISHED)),
        F.c.slot,
        batch=batch,
        budget=budget,
        monotonic=monotonic,
        columns=FIRE_COLUMNS,
        delete=forget_fires,
    )


def prune_history_limits(
    engine: Engine,
    after: int = 0,
    *,
    batch: int = 1000,
    budget: float = 0.2,
    monotonic: Callable[[], float] = HOST_MONOTONIC,
) -> tuple[int, int]:
    """:meth:`.database.Store.prune_history_limits`, as :func:`prune_history`."""
    return prune_over(
        engine,
        F.c.status.not_in(_UNPUBLISHED),
        after,
        batch=batch,
        budget=budget,
        monotonic=monotonic,
    )


def recent_successes(engine: Engine, since: datetime) -> list[tuple[str, datetime]]:
    newest = sa.func.max(F.c.finished_at)
    query = (
        sa.select(S.c.name, newest)
        .join(S, S.c.id == F.c.schedule_id)
        .where(F.c.finished_at > since, F.c.run_status == RunStatus.SUCCEEDED.value)
        .group_by(S.c.name)
    )
    with engine.connect() as conn:
        return [(name, at) for name, at in conn.execute(query)]
