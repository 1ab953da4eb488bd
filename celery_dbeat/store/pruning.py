"""Deleting old rows without a long transaction: the fire history, the audit trail.

A fire record is also what a backfill reads to leave alone what was sent: the transaction that
deletes fire records first raises their schedules' ``pruned_until`` to the newest slot it
deletes (:func:`forget_fires`), so that what a prune deleted is known to have maybe been sent.

Every prune works for a time budget measured on the clock it is given (``monotonic``; the host's
by default), so a test that gives a clock it controls gets the same rows deleted on any host.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, Row

from ..clock import SystemClock
from .models import F, S
from .reading import IN_CHUNK, chunked

__all__ = ["FIRE_COLUMNS", "HOST_MONOTONIC", "delete_in_batches", "forget_fires", "prune_over"]

#: The columns of a fire record :func:`forget_fires` needs (its id first).
FIRE_COLUMNS = (F.c.id, F.c.schedule_id, F.c.slot, F.c.manual)
#: A prune's clock when its caller gives none: the host's monotonic clock.
HOST_MONOTONIC: Callable[[], float] = SystemClock().monotonic


def delete_in_batches(
    engine: Engine,
    table: sa.Table,
    where: Any,
    order_by: Any,
    *,
    batch: int,
    budget: float,
    monotonic: Callable[[], float] = HOST_MONOTONIC,
    columns: Sequence[sa.ColumnElement[Any]] = (),
    delete: Callable[[Connection, Sequence[Any]], None] | None = None,
) -> int:
    """Delete the rows of ``table`` matching ``where``, ``order_by`` first, ``batch`` rows per
    transaction, until ``budget`` seconds of ``monotonic`` have passed (checked after each batch,
    so at least one batch; the next prune goes on); return how many.
    ``delete``: deletes the rows of a batch (read with ``columns``, their id first) instead of a
    plain ``DELETE`` by id, in the batch's transaction."""
    deleted = 0
    deadline = monotonic() + budget
    while True:
        with engine.begin() as conn:
            rows = conn.execute(
                sa.select(*(columns or (table.c.id,))).where(where).order_by(order_by).limit(batch)
            ).all()
            if delete is not None and rows:
                delete(conn, rows)
            elif rows:
                conn.execute(sa.delete(table).where(table.c.id.in_([r[0] for r in rows])))
        deleted += len(rows)
        if len(rows) < batch or monotonic() >= deadline:
            return deleted


def forget_fires(conn: Connection, fires: Sequence[Any], *, each: bool = False) -> None:
    """Delete ``fires`` (rows of :data:`FIRE_COLUMNS`), having raised the ``pruned_until`` of
    each of their schedules to the newest slot among them (manual fires are no slots).

    One mark for the whole batch, so that it is one statement however many schedules the batch
    spans (an age prune's batch of 1,000 fires may span 1,000): a schedule's mark may then pass
    its own newest deleted slot, never the batch's, which is older than the retention's cutoff.
    With ``each`` (a ``history_limit`` prune, whose batch spans schedules of any age), each
    schedule's own newest deleted slot instead, still one statement per chunk of schedules.
    A slot at or before the mark without a record is one the history can no longer vouch for
    either way, which is all the mark says.
    The schedule rows are written first, in id order, as beats and edits lock them."""
    marks: dict[int, datetime] = {}
    for f in fires:
        if not f.manual and (f.schedule_id not in marks or marks[f.schedule_id] < f.slot):
            marks[f.schedule_id] = f.slot
    if marks and not each:
        newest = max(marks.values())
        marks = dict.fromkeys(marks, newest)
    for ids in chunked(sorted(marks)):
        mark: Any = (
            sa.case({i: sa.literal(marks[i], S.c.pruned_until.type) for i in ids}, value=S.c.id)
            if each
            else sa.literal(marks[ids[0]], S.c.pruned_until.type)
        )
        # The mark only rises, whatever another beat's prune wrote meanwhile; rows it does not
        # move are not written (nor locked: PostgreSQL, and InnoDB at read committed).
        behind = S.c.pruned_until.is_(None) | (S.c.pruned_until < mark)
        conn.execute(sa.update(S).where(S.c.id.in_(ids), behind).values(pruned_until=mark))
    for ids in chunked([f.id for f in fires]):
        conn.execute(sa.delete(F).where(F.c.id.in_(ids)))


# Beyond each schedule's history_limit ------------------------------------------------------------

#: A pass reads the schedules with a ``history_limit`` in windows of consecutive ids, at most
#: this many schedules and (unless one alone has more) this many fires their limits keep, so each
#: statement that looks for the schedules over their limit reads a bounded stretch of history.
WINDOW_SCHEDULES = 2000
WINDOW_FIRES = 50_000


def prune_over(
    engine: Engine,
    counted: sa.ColumnElement[bool],
    after: int = 0,
    *,
    batch: int,
    budget: float,
    monotonic: Callable[[], float] = HOST_MONOTONIC,
) -> tuple[int, int]:
    """Delete the fires (those ``counted``) of each schedule beyond its ``history_limit`` newest
    (by slot, then id), ``batch`` rows per transaction, until ``budget`` seconds of
    ``monotonic`` have passed. Returns how many fires were deleted and the ``after`` of the next
    call: the schedules up to it are within their limits (``0``: all were; start again).

    The cost follows the rows over the limits, not the number of schedules: one grouped
    statement per window of schedules finds those over their limit; their excess is deleted
    set-wise, a ``row_number()`` per schedule over a group of them with together fewer than
    ``batch`` rows to delete, or, for a schedule with more, ``batch`` rows of its own at a time.
    What is kept is decided in the deleting transaction, against the schedule's limit then."""
    deleted = 0
    deadline = monotonic() + budget
    while True:
        with engine.connect() as conn:
            window = _window(conn, after)
            if window is None:
                return deleted, 0
            upto, last = window
            groups = list(_groups(conn.execute(_over(counted, after, upto)).all(), batch))
        for n, group in enumerate(groups):
            while True:
                with engine.begin() as conn:
                    fires = _excess(conn, counted, group, batch)
                    forget_fires(conn, fires, each=True)
                deleted += len(fires)
                if len(fires) < batch:
                    break
                if monotonic() >= deadline:
                    # The schedules before the batch's last are done: its rows come in id order.
                    return deleted, fires[-1].schedule_id - 1
            if monotonic() >= deadline and n + 1 < len(groups):
                return deleted, groups[n + 1][0] - 1
        if last:
            return deleted, 0
        after = upto
        if monotonic() >= deadline:
            return deleted, after


def _window(conn: Connection, after: int) -> tuple[int, bool] | None:
    """The last schedule id of the window after ``after``, and whether it is the pass's last;
    ``None`` when no schedule after ``after`` has a limit."""
    limits = conn.execute(
        sa.select(S.c.id, S.c.history_limit)
        .where(S.c.id > after, S.c.history_limit.is_not(None))
        .order_by(S.c.id)
        .limit(WINDOW_SCHEDULES)
    ).all()
    if not limits:
        return None
    kept = 0
    for n, row in enumerate(limits):
        if n and kept + row.history_limit > WINDOW_FIRES:
            return limits[n - 1].id, False
        kept += row.history_limit
    return limits[-1].id, len(limits) < WINDOW_SCHEDULES


def _over(counted: sa.ColumnElement[bool], after: int, upto: int) -> sa.Select[Any]:
    """``(schedule id, history_limit, fires counted)`` of the schedules in ``(after, upto]``
    over their limit, in id order."""
    count = sa.func.count()
    return (
        sa.select(F.c.schedule_id, S.c.history_limit, count)
        .join(S, S.c.id == F.c.schedule_id)
        .where(
            F.c.schedule_id > after,
            F.c.schedule_id <= upto,
            S.c.history_limit.is_not(None),
            counted,
        )
        .group_by(F.c.schedule_id, S.c.history_limit)
        .having(count > S.c.history_limit)
        .order_by(F.c.schedule_id)
    )


def _groups(over: Sequence[Row[int, int, int]], batch: int) -> Iterator[list[int]]:
    """Schedule ids in groups whose excess, together, is one batch of deletes at most (so their
    history is read once); a schedule with a batch or more to delete is a group of its own."""
    group: list[int] = []
    excess = 0
    for schedule_id, limit, count in over:
        more = count - limit
        if group and (excess + more >= batch or len(group) >= IN_CHUNK):
            yield group
            group, excess = [], 0
        group.append(schedule_id)
        excess += more
    if group:
        yield group


def _excess(
    conn: Connection, counted: sa.ColumnElement[bool], group: list[int], batch: int
) -> Sequence[Row[int, int, datetime, bool]]:
    """At most ``batch`` fires of ``group`` beyond their schedules' limits (as the schedule rows
    say now), in schedule id order."""
    if len(group) == 1:
        # Alone: its newest ``limit`` skipped on the (schedule_id, slot) index, however long
        # its history, rather than all of it ranked at every batch.
        (schedule_id,) = group
        limit = conn.execute(sa.select(S.c.history_limit).where(S.c.id == schedule_id)).scalar()
        if limit is None:
            return []
        return conn.execute(
            sa.select(*FIRE_COLUMNS)
            .where(F.c.schedule_id == schedule_id, counted)
            .order_by(F.c.slot.desc(), F.c.id.desc())
            .limit(batch)
            .offset(limit)
        ).all()
    newest_first = sa.func.row_number().over(
        partition_by=F.c.schedule_id, order_by=(F.c.slot.desc(), F.c.id.desc())
    )
    ranked = (
        sa.select(*FIRE_COLUMNS, newest_first.label("rank"), S.c.history_limit.label("keep"))
        .join(S, S.c.id == F.c.schedule_id)
        .where(F.c.schedule_id.in_(group), counted)
        .subquery()
    )
    return conn.execute(
        sa.select(ranked.c.id, ranked.c.schedule_id, ranked.c.slot, ranked.c.manual)
        .where(ranked.c.rank > ranked.c.keep)
        .order_by(ranked.c.schedule_id, ranked.c.slot)
        .limit(batch)
    ).all()
