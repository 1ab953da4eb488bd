"""The health query behind ``dbeat status`` and :meth:`celery_dbeat.api.Schedules.unhealthy`:
per schedule, what its newest fires say about its runs (the last one that ended, the newest
success), in one statement whose cost does not grow with the length of the history.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.fires import FireStatus, RunStatus
from ..core.health import HealthCandidate
from .models import F, S
from .reading import chunked

__all__ = ["HEALTH_WINDOW", "unhealthy_candidates"]

#: How many of a schedule's newest fires the health query looks at.
HEALTH_WINDOW = 20
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def unhealthy_candidates(conn: Connection, window: int = HEALTH_WINDOW) -> list[HealthCandidate]:
    """Schedules whose last run failed, and those that may be overdue, by name; see
    :meth:`celery_dbeat.api.Schedules.unhealthy` for the definition (the period test of
    "overdue" is left to the caller: it needs date arithmetic no SQL dialect shares).

    Each schedule is judged on its newest ``window`` fires only, found through the
    ``(schedule_id, slot, manual)`` key: a few short index range scans per schedule whatever the
    size of the history, and a schedule whose runs are not tracked costs no more than one that
    is. The fires found are then read by primary key, never by scanning the fires table.
    """
    # Without a single finished run in the table (no worker hook), nothing can be overdue: skip
    # that half of the query (an index lookup on ``finished_at`` says so).
    tracking = (
        conn.execute(sa.select(F.c.id).where(F.c.finished_at.is_not(None)).limit(1)).first()
        is not None
    )
    low = sa.literal(_EPOCH, F.c.slot.type)

    # Step 1, per schedule: the slot of its window-th newest fire, the window's lower bound.
    # ``OFFSET 0`` keeps each step a derived table of its own, so the database computes each
    # subquery once per schedule rather than once per use.
    edge = F.alias("edge")
    bound = (
        sa.select(edge.c.slot)
        .where(edge.c.schedule_id == S.c.id)
        .order_by(edge.c.slot.desc())
        .limit(1)
        .offset(window - 1)
        .scalar_subquery()
    )
    columns = ("id", "name", "task", "enabled", "finished_at", "last_error", "next_run_at")
    first = (
        sa.select(*(S.c[c] for c in columns), S.c.last_slot, bound.label("bound"))
        .offset(0)
        .subquery("windows")
    )
    w = first.c

    def in_window(fires: Any, schedule: Any) -> sa.ColumnElement[bool]:
        return sa.and_(
            fires.c.schedule_id == schedule.id,
            fires.c.slot >= sa.func.coalesce(schedule.bound, low),
        )

    # Step 2: the newest fire in the window that ended (its run finished, or it was never
    # published), what it says, and the finish of the newest success.
    ended, said, won = F.alias("ended"), F.alias("said"), F.alias("won")
    has_ended = sa.or_(ended.c.finished_at.is_not(None), ended.c.status == FireStatus.FAILED.value)
    last_id = (
        sa.select(ended.c.id)
        .where(in_window(ended, w), has_ended)
        .order_by(ended.c.slot.desc(), ended.c.manual.desc())
        .limit(1)
        .scalar_subquery()
    )
    failure = sa.case(
        (said.c.status == FireStatus.FAILED.value, "not published"),
        (
            said.c.run_status.in_((RunStatus.FAILED.value, RunStatus.REVOKED.value)),
            said.c.run_status,
        ),
        else_="",
    )
    success_at = (
        sa.select(won.c.finished_at)
        .where(in_window(won, w), won.c.run_status == RunStatus.SUCCEEDED.value)
        .order_by(won.c.slot.desc())
        .limit(1)
        .scalar_subquery()
    )
    second = (
        sa.select(*first.c, last_id.label("last_id"), success_at.label("success_at"))
        .offset(0)
        .subquery("health")
    )
    h = second.c
    failure_of_last = sa.select(failure).where(said.c.id == h.last_id).scalar_subquery()

    # Step 3: keep the failed, and those that may be overdue.
    third = sa.select(*second.c, failure_of_last.label("failure")).offset(0).subquery("verdicts")
    v = third.c
    seen, oldest = F.alias("seen"), F.alias("oldest")
    tracked = sa.exists().where(in_window(seen, v), seen.c.run_status.is_not(None))
    tracked_since = sa.select(sa.func.min(oldest.c.slot)).where(
        in_window(oldest, v), oldest.c.run_status.is_not(None)
    )
    # A success at or after the last slot is recent enough: only beats being behind (the
    # backlog's business) could make it older than two periods.
    maybe_overdue = sa.and_(
        v.enabled == sa.true(),
        v.next_run_at.is_not(None),
        v.last_slot.is_not(None),
        sa.or_(v.success_at < v.last_slot, sa.and_(v.success_at.is_(None), tracked)),
    )
    failed = sa.and_(v.failure.is_not(None), v.failure != "")
    query = (
        sa.select(
            *(v[c] for c in (*columns, "last_slot", "success_at", "last_id", "failure")),
            sa.case((v.success_at.is_(None), tracked_since.scalar_subquery())).label(
                "tracked_since"
            ),
        )
        .where(sa.or_(failed, maybe_overdue) if tracking else failed)
        .order_by(v.name)
    )
    found = list(conn.execute(query))
    # The last ended fires, by primary key.
    ids = [row.last_id for row in found if row.last_id is not None]
    fires: dict[int, dict[str, Any]] = {}
    for chunk in chunked(ids):
        for fire in conn.execute(
            sa.select(
                F.c.id,
                F.c.slot.label("last_fire_slot"),
                F.c.finished_at.label("last_finished_at"),
                sa.func.coalesce(F.c.run_error, F.c.error).label("last_fire_error"),
                F.c.task_id.label("last_task_id"),
            ).where(F.c.id.in_(chunk))
        ):
            fires[int(fire.id)] = {k: v for k, v in fire._mapping.items() if k != "id"}
    return [
        HealthCandidate(
            name=row.name,
            task=row.task,
            enabled=row.enabled,
            finished_at=row.finished_at,
            last_error=row.last_error,
            next_run_at=row.next_run_at,
            last_slot=row.last_slot,
            failure=row.failure or None,
            success_at=row.success_at,
            tracked_since=row.tracked_since,
            **fires.get(row.last_id, {}),
        )
        for row in found
    ]
