"""Deleting old rows without a long transaction: the fire history, the audit trail.

A fire record is also what a backfill reads to leave alone what was sent: the transaction that
deletes fire records first raises their schedules' ``pruned_until`` to the newest slot it
deletes (:func:`forget_fires`), so that what a prune deleted is known to have maybe been sent.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from .models import F, S
from .reading import chunked

__all__ = ["FIRE_COLUMNS", "delete_in_batches", "forget_fires"]

#: The columns of a fire record :func:`forget_fires` needs (its id first).
FIRE_COLUMNS = (F.c.id, F.c.schedule_id, F.c.slot, F.c.manual)


def delete_in_batches(
    engine: Engine,
    table: sa.Table,
    where: Any,
    order_by: Any,
    *,
    batch: int,
    budget: float,
    columns: Sequence[sa.ColumnElement[Any]] = (),
    delete: Callable[[Connection, Sequence[Any]], None] | None = None,
) -> int:
    """Delete the rows of ``table`` matching ``where``, ``order_by`` first, ``batch`` rows per
    transaction, for at most ``budget`` seconds (the next prune goes on); return how many.
    ``delete``: deletes the rows of a batch (read with ``columns``, their id first) instead of a
    plain ``DELETE`` by id, in the batch's transaction."""
    deleted = 0
    deadline = time.monotonic() + budget
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
        if len(rows) < batch or time.monotonic() > deadline:
            return deleted


def forget_fires(conn: Connection, fires: Sequence[Any]) -> None:
    """Delete ``fires`` (rows of :data:`FIRE_COLUMNS`), having raised the ``pruned_until`` of
    each of their schedules to the newest slot among them (manual fires are no slots).

    One mark for the whole batch, so that it is one statement however many schedules the batch
    spans (an age prune's batch of 1,000 fires may span 1,000): a schedule's mark may then pass
    its own newest deleted slot, never the batch's, which is older than the retention's cutoff
    (or, for a ``history_limit``, is that schedule's own). A slot at or before the mark without
    a record is one the history can no longer vouch for either way, which is all the mark says.
    The schedule rows are written first, in id order, as beats and edits lock them."""
    slots = [f.slot for f in fires if not f.manual]
    if slots:
        newest = max(slots)
        behind = S.c.pruned_until.is_(None) | (S.c.pruned_until < newest)
        for ids in chunked(sorted({f.schedule_id for f in fires if not f.manual})):
            # The mark only rises, whatever another beat's prune wrote meanwhile; rows it does
            # not move are not written (nor locked: PostgreSQL, and InnoDB at read committed).
            conn.execute(sa.update(S).where(S.c.id.in_(ids), behind).values(pruned_until=newest))
    for ids in chunked([f.id for f in fires]):
        conn.execute(sa.delete(F).where(F.c.id.in_(ids)))
