"""``history_limit`` at scale, in-process on PostgreSQL (no beat processes).

N schedules with ``history_limit=5``, each with 15 sent fires (10 over its limit) and every tenth
with an older pending fire (never pruned). The beat's prune (0.2 s of work) is called back to back
until every schedule is within its limit; the figures are the prunes it took, the database time
they spent, and the time a beat takes to get there at its cadence: a prune a minute before, and
after, a prune every 5 s while a pass over the limited schedules is not over
(``beat/upkeep.py``). "Before" is the prune of the previous commit (every limited schedule
visited, one transaction each), kept here as it was. Then the cost of a whole pass with nothing
to delete, which a beat pays every minute once the limits hold.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from bench.services import Run
from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.beat import upkeep
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.store import Store, migrate
from celery_dbeat.store.models import F, S
from celery_dbeat.store.pruning import FIRE_COLUMNS, forget_fires
from celery_dbeat.store.runs import prune_history_limits

NOW = datetime(2026, 1, 31, tzinfo=timezone.utc)
LIMIT, HISTORY = 5, 15
_UNPUBLISHED = ("pending", "queued", "buffered")
Prune = Callable[[Engine, int], tuple[int, int]]


def _before(engine: Engine, after: int) -> tuple[int, int]:
    """``prune_history_limits`` as it was before this bench (0.2 s of wall time)."""
    deleted = 0
    deadline = time.monotonic() + 0.2
    while True:
        with engine.connect() as conn:
            limited = conn.execute(
                sa.select(S.c.id, S.c.history_limit)
                .where(S.c.id > after, S.c.history_limit.is_not(None))
                .order_by(S.c.id)
                .limit(100)
            ).all()
        if not limited:
            return deleted, 0
        for schedule_id, limit in limited:
            while True:
                with engine.begin() as conn:
                    fires = conn.execute(
                        sa.select(*FIRE_COLUMNS)
                        .where(F.c.schedule_id == schedule_id, F.c.status.not_in(_UNPUBLISHED))
                        .order_by(F.c.slot.desc(), F.c.id.desc())
                        .limit(1000)
                        .offset(limit)
                    ).all()
                    forget_fires(conn, fires)
                deleted += len(fires)
                done = len(fires) < 1000
                if time.monotonic() > deadline:
                    return deleted, schedule_id if done else schedule_id - 1
                if done:
                    break
            after = schedule_id


def _after(engine: Engine, after: int) -> tuple[int, int]:
    return prune_history_limits(engine, after)


def _history(store: Store, ids: list[int]) -> int:
    """Write the fires again: 15 sent a minute apart per schedule, a pending one per tenth."""
    with store.engine.begin() as conn:
        conn.execute(sa.delete(F))
        conn.execute(sa.update(S).values(pruned_until=None))
    rows: list[dict[str, Any]] = []
    over = 0
    for i in ids:
        for k in range(HISTORY):
            rows.append(_fire(i, NOW - (k + 1) * timedelta(minutes=1), "sent"))
        over += HISTORY - LIMIT
        if i % 10 == 0:
            rows.append(_fire(i, NOW - timedelta(days=1), "pending"))
    with store.engine.begin() as conn:
        for start in range(0, len(rows), 20_000):
            conn.execute(sa.insert(F), rows[start : start + 20_000])
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("VACUUM ANALYZE dbeat_fires")
        conn.exec_driver_sql("VACUUM ANALYZE dbeat_schedules")
    return over


def _fire(schedule_id: int, slot: datetime, status: str) -> dict[str, Any]:
    return {
        "schedule_id": schedule_id, "slot": slot, "manual": False, "status": status,
        "slot_count": 1, "recorded_at": NOW, "attempts": 0,
    }  # fmt: skip


def _until_within(engine: Engine, prune: Prune, over: int, going_on: float) -> dict[str, Any]:
    """Prunes back to back until ``over`` fires are deleted; the beat's time to get there with a
    prune every ``going_on`` s while a pass is not over and one a minute otherwise."""
    deleted, after, prunes, work, wall = 0, 0, 0, 0.0, 0.0
    while deleted < over:
        if prunes:
            wall += going_on if after else upkeep._PRUNE_EVERY
        started = time.perf_counter()
        more, after = prune(engine, after)
        work += time.perf_counter() - started
        deleted, prunes = deleted + more, prunes + 1
    return {"prunes": prunes, "work_s": work, "beat_s": wall}


def limits(workdir: Path, n: int) -> dict[str, Any]:
    run = Run(workdir, "limits")
    try:
        store = Store(run.database_url, server_clock=False)
        migrate(store.engine)
        api = Schedules(store, clock=FixedClock(NOW))
        for first in range(0, n, 2000):
            api.add_many(
                Definition.create(name=f"s{i}", task="t", schedule=Every(86_400), history_limit=5)
                for i in range(first, min(first + 2000, n))
            )
        with store.engine.connect() as conn:
            ids = list(conn.execute(sa.select(S.c.id).order_by(S.c.id)).scalars())
        row: dict[str, Any] = {"scenario": "limits", "n": n, "over": 0}
        for label, prune, going_on in (
            ("before", _before, upkeep._PRUNE_EVERY),
            ("after", _after, upkeep._PRUNE_GOING_ON),
        ):
            row["over"] = _history(store, ids)
            pending = sum(1 for i in ids if i % 10 == 0)
            for key, value in _until_within(store.engine, prune, row["over"], going_on).items():
                row[f"{label}_{key}"] = value
            with store.engine.connect() as conn:
                counts: dict[str, int] = dict(
                    conn.execute(sa.select(F.c.status, sa.func.count()).group_by(F.c.status)).all()
                )
            assert counts == {"sent": n * LIMIT, "pending": pending}, (label, counts)
            # A whole pass with nothing to delete (what a beat does every minute from now on).
            started, after, prunes = time.perf_counter(), -1, 0
            while after:
                _, after = prune(store.engine, max(after, 0))
                prunes += 1
            row[f"{label}_idle_pass_s"] = time.perf_counter() - started
            row[f"{label}_idle_pass_prunes"] = prunes
        store.close()
    finally:
        run.close()
    print(row)
    return row
