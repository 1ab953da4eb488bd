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

Beat and the management API read schedules this way; the Flask admin reads schedules and fires
this way too (:func:`read_rows_detailed`, which says which columns), and ``dbeat export`` asks
:func:`unreadable_values` (through the API) which rows it cannot write out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Row

from ..core.definitions import FORM_FIELDS
from ..core.fires import ScheduleRow
from .models import Schedule

__all__ = [
    "IN_CHUNK",
    "PLAN_COLUMNS",
    "UNREADABLE",
    "Unreadable",
    "among",
    "chunked",
    "named_rows",
    "read_rows",
    "read_rows_detailed",
    "unreadable_message",
    "unreadable_values",
]

S = cast(sa.Table, Schedule.__table__)

#: The columns of a :class:`~celery_dbeat.core.fires.ScheduleRow`, in its fields' order (what
#: :meth:`~celery_dbeat.core.fires.ScheduleRow.from_row` reads).
PLAN_COLUMNS = [S.c[f.name] for f in fields(ScheduleRow) if f.name != "next_run_at_text"]
T = TypeVar("T")

#: Most values in one IN list (or rows in one bulk statement's list of keys).
IN_CHUNK = 1000


def among(
    conn: Connection, column: sa.ColumnElement[T], values: Sequence[T]
) -> sa.ColumnElement[bool]:
    """``column IN (values)``. On PostgreSQL ``column = ANY(:values)``, one array: an IN list is
    a parameter per value, which SQLAlchemy and the driver process one at a time (a beat's
    batch of 500 task ids cost 7-10 µs of CPU each that way, 1.3 µs as an array)."""
    if conn.dialect.name == "postgresql":
        # Strings as text: cast to varchar(n), a longer value would be cut, and could match.
        item = sa.Text() if isinstance(column.type, sa.String) else column.type
        array = postgresql.ARRAY(item)
        return column == sa.any_(sa.bindparam(None, list(values), type_=array))
    return column.in_(values)


def chunked(items: Sequence[T], size: int = IN_CHUNK) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


#: What converting a stored value raises while its row is read: psycopg's ``DataError``
#: (wrapped by SQLAlchemy), SQLAlchemy's own processors' ``ValueError`` and ``OverflowError``.
UNREADABLE = (sa.exc.DataError, ValueError, OverflowError)


def unreadable_message(
    columns: Sequence[str], error: BaseException | str, table: str = S.name
) -> str:
    """What ``last_error`` says of a schedule whose ``columns`` cannot be read, and why (of a
    row of another ``table``: what the admin shows)."""
    reason = error.orig if isinstance(error, sa.exc.DBAPIError) else error
    names = ", ".join(columns)
    if table != S.name:  # beat writes fires and heartbeats: SQL is the only way to correct them
        return f"stored value of {names} cannot be read ({reason}); correct it in SQL"
    return (
        f"stored value of {names} cannot be read ({reason}); correct it in SQL, or give the "
        "schedule's timing again ('celery dbeat update')"
    )


@dataclass(frozen=True)
class Unreadable:
    """What of one row cannot be read: its ``columns`` (read as NULL) and why (``reason``,
    each column named when there are several); as a string, the message ``last_error``
    shows."""

    columns: tuple[str, ...]
    reason: str
    #: The row's table (``dbeat_schedules``, ``dbeat_fires``, ``dbeat_beats``).
    table: str = S.name

    def __str__(self) -> str:
        return unreadable_message(self.columns, self.reason, self.table)

    @property
    def detail(self) -> str:
        """The reason with each column named (``end_at: day is out of range for month: ...``);
        ``reason`` names them only when there are several."""
        return self.reason if len(self.columns) > 1 else f"{self.columns[0]}: {self.reason}"

    def form_note(self) -> str:
        """What an admin's edit page says of the schedule: which columns its form shows empty,
        and how saving it replaces them."""
        shown = [name for name in self.columns if name in FORM_FIELDS]
        empty = f"; the form shows {', '.join(shown)} empty" if shown else ""
        return (
            f"The stored value of {', '.join(self.columns)} cannot be read ({self.reason}){empty}. "
            "Saving the form stores the schedule again as the form shows it, which replaces what "
            "cannot be read (an empty field has no value; the next run is computed from now); "
            "or correct the row in SQL."
        )


def read_rows(
    conn: Connection, query: sa.Select[Any], *, key: sa.Column[Any] | None = None
) -> tuple[list[Row[Any]], dict[int, str]]:
    """The rows of ``query`` (a select of schedule columns that includes ``id``), and for each
    row that holds an unreadable value, why: ``{id: message}``. Such a row is returned with the
    unreadable columns as NULL (and ``last_error``, if selected, as the message).

    ``key``: the id column of another table whose columns ``query`` selects (default: the
    schedules' ``id``)."""
    rows, problems = read_rows_detailed(conn, query, key=key)
    return rows, {row_id: str(problem) for row_id, problem in problems.items()}


def read_rows_detailed(
    conn: Connection, query: sa.Select[Any], *, key: sa.Column[Any] | None = None
) -> tuple[list[Row[Any]], dict[Any, Unreadable]]:
    """:func:`read_rows`, saying for each row which columns cannot be read (keyed by ``key``'s
    value: the id, or the name of a beat)."""
    key = S.c.id if key is None else key
    try:
        return list(conn.execute(query)), {}
    except UNREADABLE:
        pass
    ids = list(conn.execute(query.with_only_columns(key)).scalars())
    found: dict[Any, Row[Any]] = {}
    problems: dict[Any, Unreadable] = {}
    for chunk in chunked(ids):
        _read(conn, query, key, list(chunk), found, problems)
    return [found[i] for i in ids if i in found], problems


def named_rows(conn: Connection, names: Sequence[str]) -> list[Row[Any]]:
    """The schedules of ``names`` that exist (:func:`read_rows`, in chunks)."""
    rows: list[Row[Any]] = []
    for chunk in chunked(names):
        rows += read_rows(conn, sa.select(S).where(S.c.name.in_(chunk)))[0]
    return rows


def unreadable_values(
    conn: Connection, ids: Sequence[int], columns: Sequence[str]
) -> dict[int, Unreadable]:
    """Of the schedules ``ids``, those whose ``columns`` hold a value that cannot be read, and
    which."""
    query = sa.select(S.c.id, *(S.c[name] for name in columns))
    problems: dict[int, Unreadable] = {}
    for chunk in chunked(ids):
        _, found = read_rows_detailed(conn, query.where(S.c.id.in_(chunk)))
        problems.update(found)
    return problems


def _reason(
    conn: Connection, column: Any, where: sa.ColumnElement[bool], error: BaseException
) -> str:
    """Why ``column`` cannot be read, with its stored value as text when the error does not
    show it (SQLAlchemy's "day is out of range for month" does not; psycopg's does)."""
    reason = str(error.orig if isinstance(error, sa.exc.DBAPIError) else error)
    try:  # every type has a text form, on every backend: the cast itself does not fail
        stored = conn.execute(sa.select(sa.cast(column, sa.Text)).where(where)).scalar()
    except UNREADABLE:
        return reason
    return reason if repr(stored) in reason else f"{reason}: {stored!r}"


def _read(
    conn: Connection,
    query: sa.Select[Any],
    key: sa.Column[Any],
    ids: list[Any],
    found: dict[Any, Row[Any]],
    problems: dict[Any, Unreadable],
) -> None:
    try:
        found.update((row._mapping[key], row) for row in conn.execute(query.where(key.in_(ids))))
        return
    except UNREADABLE as exc:
        if len(ids) > 1:
            half = len(ids) // 2
            _read(conn, query, key, ids[:half], found, problems)
            _read(conn, query, key, ids[half:], found, problems)
            return
        error: BaseException = exc
    (row_id,) = ids
    columns = list(query.selected_columns)
    bad: dict[str, str] = {}
    for column in columns:
        try:
            conn.execute(query.with_only_columns(column).where(key == row_id)).all()
        except UNREADABLE as exc:
            bad[column.name] = _reason(conn, column, key == row_id, exc)
            error = exc
    if not bad:
        raise error  # the row fails as a whole only: not a value of its own
    reasons = [r if len(bad) == 1 else f"{name}: {r}" for name, r in bad.items()]
    problem = Unreadable(tuple(bad), "; ".join(reasons), key.table.name)
    readable = [
        sa.null().label(c.name)
        if c.name in bad
        else sa.literal(str(problem), sa.Text).label(c.name)
        if c.name == "last_error"
        else c
        for c in columns
    ]
    row = conn.execute(query.with_only_columns(*readable).where(key == row_id)).first()
    if row is not None:
        found[row_id] = row
        problems[row_id] = problem
