"""Fires after they are recorded: publishing bookkeeping (sent, failed, taken over by another
beat), "run now" fires and the history of a schedule. Run tracking (what the worker reported)
is :mod:`.runs`'s."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from celery.utils.log import get_logger
from sqlalchemy.engine import Connection, Engine, Row

from ..core.fires import FireStatus, PublishRequest, fire_task_id
from .clock import DatabaseClock
from .engine import skips_locked
from .failures import driver_message
from .isolation import all_or_each, isolated, set_fire_aside, set_schedule_aside, storable
from .models import F, S
from .reading import IN_CHUNK, among, chunked, read_rows
from .schedules import ensure_uid, load_schedule
from .slot_arguments import with_previous_slots

__all__ = [
    "PUBLISH_COLUMNS",
    "claim_stale_pending",
    "extend_leases",
    "fire_history",
    "lease_each",
    "mark_publish_failed",
    "mark_sent",
    "record_manual_fire",
    "recorded_slots",
    "set_refused_fire_aside",
    "set_unreadable_fire_aside",
    "set_unreadable_fires_aside",
    "slot_records",
]

logger = get_logger(__name__)

T = TypeVar("T")

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
    S.c.slot_kwarg,
    S.c.previous_slot_kwarg,
]


def mark_sent(engine: Engine, task_ids: Sequence[str], now: datetime, beat: str) -> list[str]:
    if not task_ids:
        return []

    def mark(ids: Sequence[str]) -> None:
        for chunk in chunked(ids):
            conn.execute(
                sa.update(F)
                .where(among(conn, F.c.task_id, chunk), F.c.status == FireStatus.PENDING.value)
                .values(status=FireStatus.SENT.value, sent_at=now, beat=beat, error=None)
            )

    with engine.begin() as conn:
        _, refused = isolated(conn, list(task_ids), mark)
        names = [
            set_refused_fire_aside(conn, task_id, "mark it sent", exc, sent=True)
            for task_id, exc in refused
        ]
    return [name for name in names if name is not None]


def mark_publish_failed(
    engine: Engine, task_id: str, error: str, retry_at: datetime, *, give_up: bool
) -> list[str]:
    values: dict[str, Any] = {"error": storable(error, 2000), "lease_until": retry_at}
    if give_up:
        values["status"] = FireStatus.FAILED.value

    def mark(ids: Sequence[str]) -> None:
        conn.execute(
            sa.update(F)
            .where(F.c.task_id.in_(ids), F.c.status == FireStatus.PENDING.value)
            .values(attempts=F.c.attempts + 1, **values)
        )

    with engine.begin() as conn:
        _, refused = isolated(conn, [task_id], mark)
        names = [
            set_refused_fire_aside(conn, task_id, "record its failed publish", exc, keep_fire=True)
            for _, exc in refused
        ]
    return [name for name in names if name is not None]


def set_refused_fire_aside(
    conn: Connection,
    fire: str | int,
    what: str,
    exc: sa.exc.StatementError,
    *,
    sent: bool = False,
    keep_fire: bool = False,
) -> str | None:
    """Set aside the fire ``fire`` (a task id or a row id) whose write ``what`` the database
    refused, and its schedule. The fire is recorded ``failed`` with the error (unless
    ``keep_fire``), so that no beat takes it up again: if it was ``sent``, it must not be
    published twice; if not, it is recorded with the reason it was not. Returns the schedule's
    name (``None``: the fire is gone)."""
    row = conn.execute(
        sa.select(F.c.id, F.c.schedule_id, S.c.name)
        .join(S, S.c.id == F.c.schedule_id)
        .where(F.c.task_id == fire if isinstance(fire, str) else F.c.id == fire)
    ).first()
    if row is None:
        return None
    why = driver_message(exc)
    if not keep_fire:
        done = "sent to the broker, but" if sent else "not sent:"
        set_fire_aside(conn, row.id, f"{done} the database refused to {what}: {why}")
    error = (
        f"the database refused to {what} for fire {fire} ({why}); correct the schedule"
        " and give its timing again ('celery dbeat update'), or remove it"
    )
    set_schedule_aside(conn, row.schedule_id, error, name=row.name)
    logger.error("dbeat: schedule %r set aside: %s", row.name, error)
    return str(row.name)


def claim_stale_pending(
    engine: Engine, clock: DatabaseClock, now: datetime, lease_until: datetime, limit: int
) -> list[PublishRequest]:
    with engine.begin() as conn:
        now, lease_until = clock.moved(conn, now, lease_until)
        query = (
            sa.select(*PUBLISH_COLUMNS)
            .join(S, S.c.id == F.c.schedule_id)
            .where(F.c.status == FireStatus.PENDING.value, F.c.lease_until <= now)
            .order_by(F.c.lease_until)
            .limit(limit)
        )
        if skips_locked(engine):
            query = query.with_for_update(of=F, skip_locked=True)
        rows = set_unreadable_fires_aside(conn, query)

        def one(r: Row[Any]) -> bool:
            held = sa.and_(
                F.c.id == r.id,
                F.c.status == FireStatus.PENDING.value,
                F.c.lease_until == r.lease_until,
            )
            return (
                conn.execute(sa.update(F).where(held).values(lease_until=lease_until)).rowcount == 1
            )

        def every(part: Sequence[Row[Any]]) -> int:
            # The rows were read locked (FOR UPDATE; SQLite's BEGIN IMMEDIATE): each still holds
            # the expired lease read.
            expired = sa.and_(F.c.status == FireStatus.PENDING.value, F.c.lease_until <= now)
            return sum(
                conn.execute(
                    sa.update(F)
                    .where(among(conn, F.c.id, chunk), expired)
                    .values(lease_until=lease_until)
                ).rowcount
                for chunk in chunked([r.id for r in part])
            )

        def take(part: Sequence[Row[Any]]) -> list[PublishRequest]:
            taken = all_or_each(conn, part, every, one)
            return [PublishRequest.from_row(r, lease_until) for r in taken]

        return lease_each(conn, rows, take, "take it over", lambda row: int(row.id))


def lease_each(
    conn: Connection,
    items: Sequence[T],
    lease: Callable[[Sequence[T]], list[PublishRequest]],
    what: str,
    fire_id: Callable[[T], int],
) -> list[PublishRequest]:
    """``lease`` (which leases some of ``items``, recorded fires, to this beat and returns the
    fires to publish) over ``items``, :func:`.isolation.isolated`: an item whose write the
    database refuses is set aside (:func:`set_refused_fire_aside`, ``what`` saying which write;
    ``fire_id`` giving the item's fire row) and the others are leased, each with its previous
    slot if its schedule asks for it (:func:`.slot_arguments.with_previous_slots`)."""
    leased, refused = isolated(conn, items, lease)
    for item, exc in refused:
        set_refused_fire_aside(conn, fire_id(item), what, exc)
    return with_previous_slots(conn, [request for part in leased for request in part])


def set_unreadable_fire_aside(conn: Connection, fire_id: int, problem: str) -> None:
    """Record fire ``fire_id``, which holds ``problem``: a value that cannot be read, ``failed``
    with it."""
    logger.error("dbeat: recorded fire %d set aside: %s", fire_id, problem)
    set_fire_aside(conn, fire_id, problem)


def set_unreadable_fires_aside(conn: Connection, query: sa.Select[Any]) -> list[Row[Any]]:
    """The rows of ``query`` (fires joined with their schedules); a fire that holds a value the
    driver cannot read is set aside (:func:`set_unreadable_fire_aside`) and left out."""
    rows, problems = read_rows(conn, query, key=F.c.id)
    for fire_id, problem in problems.items():
        set_unreadable_fire_aside(conn, fire_id, problem)
    return [r for r in rows if r.id not in problems]


def extend_leases(
    engine: Engine,
    clock: DatabaseClock,
    task_ids: Sequence[str],
    held_until: datetime,
    now: datetime,
    lease_until: datetime,
) -> tuple[set[str], datetime]:
    kept: set[str] = set()
    with engine.begin() as conn:
        _, lease_until = clock.moved(conn, now, lease_until)
        for chunk in chunked(task_ids):
            held = sa.and_(among(conn, F.c.task_id, chunk), F.c.status == FireStatus.PENDING.value)
            conn.execute(
                sa.update(F)
                .where(held, F.c.lease_until == held_until)
                .values(lease_until=lease_until)
            )
            kept.update(
                conn.execute(
                    sa.select(F.c.task_id).where(held, F.c.lease_until == lease_until)
                ).scalars()
            )
    return kept, lease_until


def recorded_slots(
    conn: Connection, wanted: Iterable[tuple[int, datetime]]
) -> set[tuple[int, datetime]]:
    """Which of the ``(schedule id, slot)`` pairs ``wanted`` have a (non-manual) fire row already
    (with, maybe, other pairs of the same schedules and slots)."""
    found: set[tuple[int, datetime]] = set()
    for chunk in chunked(sorted(set(wanted)), IN_CHUNK // 2):
        ids = sorted({schedule_id for schedule_id, _ in chunk})
        slots = sorted({slot for _, slot in chunk})
        rows = conn.execute(
            sa.select(F.c.schedule_id, F.c.slot).where(
                among(conn, F.c.schedule_id, ids),
                among(conn, F.c.slot, slots),
                F.c.manual.is_(False),
            )
        )
        found.update((r.schedule_id, r.slot) for r in rows)
    return found


def record_manual_fire(conn: Connection, name: str, now: datetime) -> str:
    """Record a "run now" fire for any beat to publish; returns its task id.

    It is its own fire (``manual``), not a slot: ``next_run_at`` and ``run_count`` do not move.
    Its lease is already over, so the next beat to look for unpublished fires sends it.
    """
    row = load_schedule(conn, name)
    task_id = fire_task_id(ensure_uid(conn, row.id, row.uid), now, manual=True)
    conn.execute(
        sa.insert(F),
        [
            {
                "schedule_id": row.id,
                "slot": now,
                "manual": True,
                "status": FireStatus.PENDING.value,
                "slot_count": 1,
                "task_id": task_id,
                "recorded_at": now,
                "lease_until": now,
                "attempts": 0,
            }
        ],
    )
    return task_id


def fire_history(conn: Connection, name: str, limit: int = 50) -> list[Row[Any]]:
    row = load_schedule(conn, name)
    query = (
        sa.select(F)
        .where(F.c.schedule_id == row.id)
        .order_by(F.c.slot.desc(), F.c.id.desc())
        .limit(limit)
    )
    return list(conn.execute(query))


def slot_records(
    conn: Connection, schedule_id: int, slot: datetime
) -> tuple[list[Row[Any]], Row[Any] | None]:
    """The records of ``slot`` (not run-now ones): the row of that slot and any row standing
    for several slots (skipped, dropped, a queued run) whose range holds it; and the newest
    record before them (where an outage that missed the slot began), or ``None``."""
    covering = sa.or_(
        F.c.slot == slot,
        sa.and_(F.c.slot_count > 1, F.c.first_slot <= slot, F.c.slot > slot),
    )
    own = sa.and_(F.c.schedule_id == schedule_id, F.c.manual == sa.false())
    rows = list(conn.execute(sa.select(F).where(own, covering).order_by(F.c.slot)))
    oldest = min([slot, *(r.first_slot or r.slot for r in rows)])
    previous = conn.execute(
        sa.select(F).where(own, F.c.slot < oldest).order_by(F.c.slot.desc()).limit(1)
    ).first()
    return rows, previous
