"""Reading rows: IN lists in chunks, and schedule rows that may hold values the driver cannot
convert.

Every IN list goes through :func:`chunked`: a statement's parameters are bounded on every
backend (65,535 for psycopg and MySQL's protocol, 32,766 for SQLite), and 100,000 entries in
``beat_schedule`` must not make one statement of them.

A hand-edited row can hold what no validation allowed: PostgreSQL's ``'-infinity'`` or
``'infinity'`` in a timestamp column (psycopg refuses to load them), or text that is no
timestamp in SQLite (SQLAlchemy's processor raises ``ValueError``). One such row must not make
every read of the table fail: :func:`read_rows` reads the others as usual and gives the bad one
with its unreadable columns as NULL, together with what could not be read.

The cost is paid only when a read fails: the failing rows are then found by halving the set of
ids (a few queries per bad row), and each bad row's columns are tried one by one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from .models import Schedule

__all__ = ["IN_CHUNK", "UNREADABLE", "chunked", "read_rows", "unreadable_message"]

S = cast(sa.Table, Schedule.__table__)
T = TypeVar("T")

#: Most values in one IN list (or rows in one bulk statement's list of keys).
IN_CHUNK = 1000


def chunked(items: Sequence[T], size: int = IN_CHUNK) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


#: What converting a stored value raises while its row is read: psycopg's ``DataError``
#: (wrapped by SQLAlchemy), SQLAlchemy's own processors' ``ValueError`` and ``OverflowError``.
UNREADABLE = (sa.exc.DataError, ValueError, OverflowError)


def unreadable_message(columns: Sequence[str], error: BaseException) -> str:
    reason = error.orig if isinstance(error, sa.exc.DBAPIError) else error
    names = ", ".join(columns)
    return (
        f"stored value of {names} cannot be read ({reason}); correct it in SQL, or give the "
        "schedule's timing again ('celery dbeat update')"
    )


def read_rows(conn: Connection, query: sa.Select[Any]) -> tuple[list[Row[Any]], dict[int, str]]:
    """The rows of ``query`` (a select of schedule columns that includes ``id``), and for each
    row that holds an unreadable value, why: ``{id: message}``. Such a row is returned with the
    unreadable columns as NULL (and ``last_error``, if selected, as the message)."""
    try:
        return list(conn.execute(query)), {}
    except UNREADABLE:
        pass
    ids = list(conn.execute(query.with_only_columns(S.c.id)).scalars())
    found: dict[int, Row[Any]] = {}
    problems: dict[int, str] = {}
    for chunk in chunked(ids):
        _read(conn, query, list(chunk), found, problems)
    return [found[i] for i in ids if i in found], problems


def _read(
    conn: Connection,
    query: sa.Select[Any],
    ids: list[int],
    found: dict[int, Row[Any]],
    problems: dict[int, str],
) -> None:
    try:
        found.update((row.id, row) for row in conn.execute(query.where(S.c.id.in_(ids))))
        return
    except UNREADABLE as exc:
        if len(ids) > 1:
            half = len(ids) // 2
            _read(conn, query, ids[:half], found, problems)
            _read(conn, query, ids[half:], found, problems)
            return
        error: BaseException = exc
    (schedule_id,) = ids
    columns = list(query.selected_columns)
    bad = []
    for column in columns:
        try:
            conn.execute(sa.select(column).where(S.c.id == schedule_id)).all()
        except UNREADABLE as exc:
            bad.append(column.name)
            error = exc
    if not bad:
        raise error  # the row fails as a whole only: not a value of its own
    message = unreadable_message(bad, error)
    readable = [
        sa.null().label(c.name)
        if c.name in bad
        else sa.literal(message, sa.Text).label(c.name)
        if c.name == "last_error"
        else c
        for c in columns
    ]
    row = conn.execute(query.with_only_columns(*readable).where(S.c.id == schedule_id)).first()
    if row is not None:
        found[schedule_id] = row
        problems[schedule_id] = message
