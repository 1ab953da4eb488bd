"""One refused write costs its own row, never the tick.

A write the database refuses for what it writes (:func:`.failures.is_refusal`: a constraint, a
value it or its driver will not take) is the fault of one row's data. Every write of a tick is
made through :func:`isolated`: the rows go in one savepoint, and when it is refused its halves
are tried in theirs until the refused rows are found (a few statements per bad row; nothing
extra while no write is refused). The caller then sets each refused row aside:

* a schedule (:func:`set_schedule_aside`): ``next_run_at`` NULL and ``last_error`` set, so it
  shows "in error" on every surface and is neither due nor recomputed until someone corrects it;
* a recorded fire (:func:`set_fire_aside`): ``failed`` with the error, so no beat takes it over
  and publishes it again, and its history says why.

Anything else (lost connectivity, a conflict, a server error that is no refusal) is raised as it
is: it is the tick's, not one row's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import sqlalchemy as sa
from celery.utils.log import get_logger
from sqlalchemy.engine import Connection

from ..core.fires import FireStatus
from .failures import driver_message, is_refusal
from .models import F, S

__all__ = [
    "Refused",
    "all_or_each",
    "aside_values",
    "isolated",
    "set_fire_aside",
    "set_schedule_aside",
    "storable",
]

logger = get_logger(__name__)

T = TypeVar("T")
R = TypeVar("R")

#: The rows a write refused, each with the database's error.
Refused = list[tuple[T, sa.exc.StatementError]]


def isolated(
    conn: Connection, items: Sequence[T], write: Callable[[Sequence[T]], R]
) -> tuple[list[R], Refused[T]]:
    """Apply ``write`` to ``items`` in a savepoint of ``conn``'s transaction; when the database
    refuses it, to each half in its own, down to single items. Returns what each accepted
    ``write`` returned, and the items refused with their errors."""
    if not items:
        return [], []
    try:
        with conn.begin_nested():
            return [write(items)], []
    except sa.exc.StatementError as exc:
        if not is_refusal(exc):
            raise
        if len(items) == 1:
            return [], [(items[0], exc)]
    half = len(items) // 2
    first, refused = isolated(conn, items[:half], write)
    second, refused_too = isolated(conn, items[half:], write)
    return first + second, refused + refused_too


def all_or_each(
    conn: Connection,
    items: Sequence[T],
    write_all: Callable[[Sequence[T]], int],
    write_one: Callable[[T], bool],
) -> list[T]:
    """The items written: by ``write_all`` (one statement for them all, returning how many rows
    it wrote) when it wrote every one; otherwise that is undone (a savepoint of ``conn``'s
    transaction) and each is written by ``write_one``, which says whether it was. For a write
    the database can only count, to rows the caller holds locked, so all normally succeed."""
    with conn.begin_nested() as savepoint:
        if write_all(items) == len(items):
            return list(items)
        savepoint.rollback()
    return [item for item in items if write_one(item)]


def storable(text: str | None, limit: int) -> str | None:
    """``text`` as every backend can store it, the same on each: PostgreSQL refuses NUL in text,
    and no driver encodes a lone surrogate (an undecodable file name in an ``OSError``)."""
    if text is None:
        return None
    text = text.replace("\x00", "").encode("utf-8", "backslashreplace").decode("utf-8")
    return text[:limit]


def aside_values(error: object) -> dict[str, object]:
    """The columns of a schedule set aside with ``error`` (a message, or a bind parameter)."""
    return {"next_run_at": None, "due_at": None, "last_error": error}


def set_schedule_aside(
    conn: Connection,
    schedule_id: int,
    error: str,
    *,
    version: int | None = None,
    name: str | None = None,
) -> bool:
    """Set schedule ``schedule_id`` aside with ``error`` (only at ``version``, if given: an
    edit since is left to take effect). False if not even that could be written: the row is
    then left as it is, and the others go on."""
    where = [S.c.id == schedule_id]
    if version is not None:
        where.append(S.c.version == version)
    return _try(
        conn,
        sa.update(S).where(*where).values(aside_values(error)),
        f"schedule {schedule_id}" if name is None else f"schedule {name!r}",
    )


def set_fire_aside(conn: Connection, fire_id: int, error: str) -> bool:
    """Record fire ``fire_id`` as ``failed`` with ``error`` (its lease cleared: it is nobody's
    to publish). False if not even that could be written."""
    return _try(
        conn,
        sa.update(F)
        .where(F.c.id == fire_id)
        .values(status=FireStatus.FAILED.value, error=storable(error, 2000), lease_until=None),
        f"fire {fire_id}",
    )


def _try(conn: Connection, statement: sa.Update, what: str) -> bool:
    try:
        with conn.begin_nested():
            conn.execute(statement)
    except sa.exc.StatementError as again:
        if not is_refusal(again):
            raise
        logger.error("dbeat: %s cannot be set aside: %s", what, driver_message(again))
        return False
    return True
