"""Queued fires: the slots of a catch-up (policy ``all``) or a backfill, waiting for the capacity
on-time fires leave.

Pausing a schedule holds its queued rows where they are: none is claimed while it is paused, and
they go out once it is resumed (they were asked for before the pause, by a catch-up or a backfill;
SEMANTICS, "Pause, resume, edits"). Removing the schedule removes them.

A queued row is either a fire (its ``task_id`` set) or a *queued run* standing for several slots
of one schedule (:func:`celery_dbeat.core.fires.queued_fires`): ``slot`` its newest, ``first_slot``
its oldest, ``slot_count`` how many, ``slots`` each of them. Its ``lease_until`` is its oldest
slot: queued rows go out in that order, each schedule's slots oldest first, none before its time.

:func:`claim_queued` leases queued slots to a beat to publish them. A fire becomes PENDING as it
is; a run gives up its oldest slots as new PENDING fires, each with its usual task id, and keeps
the rest (once only its own slot is left, it is that slot's fire). A slot that already has a fire
of its own (an edit moved ``next_run_at`` back onto it and a beat recorded it) is left to that
fire. So each slot is published once, with the task id every beat derives.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, Row

from ..core.fires import (
    FireStatus,
    PublishRequest,
    decode_slots,
    encode_slots,
    fire_task_id,
    queued_fires,
)
from .clock import DatabaseClock
from .engine import skips_locked
from .fires import (
    PUBLISH_COLUMNS,
    lease_each,
    recorded_slots,
    set_unreadable_fire_aside,
    set_unreadable_fires_aside,
)
from .models import F, S
from .reading import chunked, unreadable_message
from .schedules import paused_expression

__all__ = ["claim_queued", "queue_slots", "queued_backlog", "queued_slots"]

_QUEUED = F.c.status == FireStatus.QUEUED.value
#: Queued rows a claim locks first; it locks more only if these hold fewer slots than it takes.
_FIRST_ROWS = 8
_COLUMNS = [*PUBLISH_COLUMNS, F.c.slots, F.c.slot_count, F.c.origin, F.c.recorded_at, S.c.uid]


def _slots_of(row: Any) -> list[datetime]:
    return [row.slot] if row.slots is None else decode_slots(row.slots)


def _take(
    rows: Sequence[Any], limit: int, now: datetime
) -> tuple[list[tuple[int, datetime]], dict[int, list[datetime]], dict[int, str]]:
    """Up to ``limit`` queued slots of ``rows`` (in the order of their oldest slot) whose time has
    come, each row's oldest first, as ``(index of the row, slot)``; and the slots of each row
    that gave any (a run's JSON is read only then). A run gives as many as it can before the
    next row is taken from: its remaining slots are written back once per claim, not once per
    slot (taken oldest first across all runs, a week's catch-up of every-minute schedules
    interleaves, and every slot cost a rewrite of its run). Last, the runs whose stored slots
    cannot be read (hand-edited JSON), with why: none of their slots is taken."""
    slots: dict[int, list[datetime]] = {}
    unreadable: dict[int, str] = {}
    taken: list[tuple[int, datetime]] = []
    for i, row in enumerate(rows):
        if len(taken) >= limit:
            break
        try:
            slots[i] = _slots_of(row)
        except (ValueError, TypeError) as exc:
            unreadable[i] = str(exc)
            continue
        for slot in slots[i][: limit - len(taken)]:
            if slot > now:
                break
            taken.append((i, slot))
    return taken, slots, unreadable


def claim_queued(
    engine: Engine,
    clock: DatabaseClock,
    now: datetime,
    lease_until: datetime,
    limit: int,
    beat: str,
) -> list[PublishRequest]:
    with engine.begin() as conn:
        now, lease_until = clock.moved(conn, now, lease_until)
        rows = _queued_rows(conn, engine, now, limit)
        taken, runs, unreadable = _take(rows, limit, now)
        for i, why in unreadable.items():
            set_unreadable_fire_aside(conn, rows[i].id, unreadable_message(("slots",), why, F.name))
        slots: dict[int, list[datetime]] = {}
        for i, slot in taken:
            slots.setdefault(i, []).append(slot)
        return lease_each(
            conn,
            [(rows[i], chosen, runs[i]) for i, chosen in slots.items()],
            lambda part: _lease(conn, part, lease_until, beat),
            "lease its queued slots",
            lambda item: int(item[0].id),
        )


def _lease(
    conn: Connection,
    taken: Sequence[tuple[Row[Any], list[datetime], list[datetime]]],
    lease_until: datetime,
    beat: str,
) -> list[PublishRequest]:
    """Lease to ``beat`` the slots taken from each queued row (``(row, slots taken, the row's
    slots)``), as the module docstring says; returns the fires to publish."""
    new = [(r, slot) for r, chosen, _ in taken for slot in chosen if slot != r.slot]
    already = recorded_slots(conn, ((r.schedule_id, slot) for r, slot in new))
    whole = [r.id for r, _, _ in taken if r.slots is None]
    for chunk in chunked(whole):
        conn.execute(
            sa.update(F)
            .where(F.c.id.in_(chunk), _QUEUED)
            .values(status=FireStatus.PENDING.value, lease_until=lease_until, beat=beat)
        )
    for r, chosen, run in taken:
        if r.slots is not None:
            conn.execute(
                sa.update(F)
                .where(F.c.id == r.id)
                .values(**_rest(r, run[len(chosen) :], lease_until, beat))
            )
    inserts = [
        _fire(r, slot, lease_until, beat) for r, slot in new if (r.schedule_id, slot) not in already
    ]
    if inserts:
        conn.execute(sa.insert(F), inserts)
    return [
        PublishRequest(
            r.task_id or fire_task_id(r.uid, slot),
            r.schedule_id,
            r.name,
            slot,
            r.task,
            r.args,
            r.kwargs,
            r.options,
            lease_until=lease_until,
            slot_kwarg=r.slot_kwarg,
            previous_slot_kwarg=r.previous_slot_kwarg,
        )
        for r, chosen, _ in taken
        for slot in chosen
        if slot == r.slot or (r.schedule_id, slot) not in already
    ]


def _queued_rows(conn: Connection, engine: Engine, now: datetime, limit: int) -> list[Any]:
    """The queued rows that hold the (up to) ``limit`` oldest slots whose time has come, locked:
    a few rows first (a run holds up to 500 slots), more only if they hold fewer slots. The rows
    of a paused schedule wait for its resume."""
    query = (
        sa.select(*_COLUMNS)
        .join(S, S.c.id == F.c.schedule_id)
        .where(_QUEUED, F.c.lease_until <= now, ~paused_expression())
        .order_by(F.c.lease_until, F.c.id)
    )
    if skips_locked(engine):
        query = query.with_for_update(of=F, skip_locked=True)
    first = min(limit, _FIRST_ROWS)
    rows = set_unreadable_fires_aside(conn, query.limit(first))
    if len(rows) == first and sum(r.slot_count for r in rows) < limit:
        held = [r.id for r in rows]
        rows += set_unreadable_fires_aside(
            conn, query.where(F.c.id.not_in(held)).limit(limit - first)
        )
    return rows


def _rest(run: Row[Any], rest: list[datetime], lease_until: datetime, beat: str) -> dict[str, Any]:
    """The columns of a queued run once its oldest slots were taken and ``rest`` is left: still a
    run, or (one slot left, its own) that slot's queued fire, or (none left: its own slot is
    taken too) that slot's fire leased to ``beat``."""
    if len(rest) > 1:
        return {
            "slots": encode_slots(rest),
            "slot_count": len(rest),
            "first_slot": rest[0],
            "lease_until": rest[0],
        }
    single: dict[str, Any] = {
        "slots": None,
        "slot_count": 1,
        "first_slot": None,
        "task_id": fire_task_id(run.uid, run.slot),
    }
    if rest:
        return {**single, "lease_until": rest[0]}
    return {**single, "status": FireStatus.PENDING.value, "lease_until": lease_until, "beat": beat}


def _fire(run: Row[Any], slot: datetime, lease_until: datetime, beat: str) -> dict[str, Any]:
    """The row of a slot a queued run gave up, leased to ``beat`` to publish it now."""
    return {
        "schedule_id": run.schedule_id,
        "slot": slot,
        "manual": False,
        "origin": run.origin,
        "status": FireStatus.PENDING.value,
        "slot_count": 1,
        "task_id": fire_task_id(run.uid, slot),
        "beat": beat,
        "recorded_at": run.recorded_at,
        "lease_until": lease_until,
        "attempts": 0,
    }


def queue_slots(
    conn: Connection,
    schedule_id: int,
    uid: str,
    slots: Sequence[datetime],
    *,
    now: datetime,
    origin: str | None,
) -> None:
    """Record ``slots`` (ascending) of a schedule as queued: a row per queued run
    (:func:`~celery_dbeat.core.fires.queued_fires`), each going out in the order of its oldest
    slot."""
    conn.execute(
        sa.insert(F),
        [
            {
                "schedule_id": schedule_id,
                "slot": fire.slot,
                "manual": False,
                "origin": origin,
                "status": FireStatus.QUEUED.value,
                "slot_count": fire.slot_count,
                "first_slot": fire.first_slot,
                "slots": encode_slots(fire.slots) if fire.slots else None,
                "task_id": fire.task_id,
                "recorded_at": now,
                "lease_until": fire.first_slot or fire.slot,
                "attempts": 0,
            }
            for fire in queued_fires(uid, slots)
        ],
    )


def queued_backlog(conn: Connection) -> tuple[int, datetime | None]:
    """How many slots are queued (catch-up, backfill), and the oldest."""
    row = conn.execute(
        sa.select(
            sa.func.coalesce(sa.func.sum(F.c.slot_count), 0),
            sa.func.min(sa.func.coalesce(F.c.first_slot, F.c.slot)),
        ).where(_QUEUED)
    ).one()
    return int(row[0]), row[1]


def queued_slots(
    conn: Connection, schedule_id: int, start: datetime, end: datetime
) -> set[datetime]:
    """The slots of schedule ``schedule_id`` in ``[start, end]`` that are queued, those of its
    queued runs included."""
    rows = conn.execute(
        sa.select(F.c.slot, F.c.slots).where(
            F.c.schedule_id == schedule_id,
            _QUEUED,
            F.c.slot >= start,
            sa.func.coalesce(F.c.first_slot, F.c.slot) <= end,
        )
    )
    return {slot for row in rows for slot in _slots_of(row) if start <= slot <= end}
