"""Fires after they are recorded: publishing bookkeeping (sent, failed, taken over by another
beat), "run now" fires and the history of a schedule. Run tracking (what the worker reported)
is :mod:`.runs`'s."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, Row

from ..core.fires import FireStatus, PublishRequest, fire_task_id
from .clock import DatabaseClock
from .due import skips_locked
from .models import F, S
from .reading import chunked
from .schedules import ensure_uid, load_schedule

__all__ = [
    "PUBLISH_COLUMNS",
    "claim_stale_pending",
    "extend_leases",
    "fire_history",
    "mark_publish_failed",
    "mark_sent",
    "record_manual_fire",
]

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


def mark_sent(engine: Engine, task_ids: Sequence[str], now: datetime, beat: str) -> None:
    if not task_ids:
        return
    with engine.begin() as conn:
        for chunk in chunked(task_ids):
            conn.execute(
                sa.update(F)
                .where(F.c.task_id.in_(chunk), F.c.status == FireStatus.PENDING.value)
                .values(status=FireStatus.SENT.value, sent_at=now, beat=beat, error=None)
            )


def mark_publish_failed(
    engine: Engine, task_id: str, error: str, retry_at: datetime, *, give_up: bool
) -> None:
    values: dict[str, Any] = {"error": error[:2000], "lease_until": retry_at}
    if give_up:
        values["status"] = FireStatus.FAILED.value
    with engine.begin() as conn:
        conn.execute(
            sa.update(F)
            .where(F.c.task_id == task_id, F.c.status == FireStatus.PENDING.value)
            .values(attempts=F.c.attempts + 1, **values)
        )


def claim_stale_pending(
    engine: Engine, clock: DatabaseClock, now: datetime, lease_until: datetime, limit: int
) -> list[PublishRequest]:
    """Take over recorded fires whose recording beat did not publish them in time.

    ``now`` and ``lease_until`` are on this beat's clock; on a database server they are
    moved onto the database clock (:mod:`.clock`) before they are compared with
    leases other beats wrote.
    """
    claimed: list[PublishRequest] = []
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
                claimed.append(PublishRequest.from_row(r, lease_until))
    return claimed


def extend_leases(
    engine: Engine,
    clock: DatabaseClock,
    task_ids: Sequence[str],
    held_until: datetime,
    now: datetime,
    lease_until: datetime,
) -> tuple[set[str], datetime]:
    """Extend the leases of fires this beat holds until ``held_until`` (as recorded) to
    ``lease_until`` (this beat's clock, moved onto the database's). Returns the task ids still
    held, and their new lease: a fire another beat took over meanwhile (its lease ran out), or
    that was sent, is not among them."""
    kept: set[str] = set()
    with engine.begin() as conn:
        _, lease_until = clock.moved(conn, now, lease_until)
        for chunk in chunked(task_ids):
            held = sa.and_(F.c.task_id.in_(chunk), F.c.status == FireStatus.PENDING.value)
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
