"""The compare-and-set that records what a tick decided for a schedule (a :class:`.Transition`):
its row is written only if it still holds the ``version`` and ``next_run_at`` read when the
schedule was claimed, so a row an edit or another beat changed meanwhile is left alone.

A batch goes in one statement whose text does not grow with it (compiled once): PostgreSQL
returns the rows that won; MySQL/MariaDB and SQLite only count them, which is enough, as the claim
locked the rows (``FOR UPDATE``; SQLite's ``BEGIN IMMEDIATE``), and a batch that does not win
whole is applied row by row instead (:func:`.isolation.all_or_each`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.fires import Transition
from .isolation import all_or_each
from .models import S
from .types import UTCDateTime, naive_utc

__all__ = ["compare_and_set"]

#: What a compare-and-set writes on a schedule's row, and the values it compares
#: (:func:`_values`).
_CAS_COLUMNS = (
    "id",
    "version",
    "old_next",
    "next_run_at",
    "due_at",
    "last_error",
    "last_slot",
    "runs_added",
    "finished",
)
#: Their names as parameters of :func:`_cas_row` (a bind parameter cannot take the name of a
#: column the statement sets).
_CAS_PARAMETERS = tuple(f"b_{name}" for name in _CAS_COLUMNS)

#: PostgreSQL: one array per column, unnested; ``RETURNING`` names the rows that won.
_CAS_BATCH_PG = sa.text(
    """
    UPDATE dbeat_schedules AS s SET
        next_run_at = v.next_run_at,
        due_at = v.due_at,
        last_error = v.last_error,
        last_slot = COALESCE(v.last_slot, s.last_slot),
        run_count = s.run_count + v.runs_added,
        finished_at = CASE WHEN v.finished THEN CAST(:now AS timestamptz) ELSE s.finished_at END,
        enabled = CASE WHEN v.finished THEN false ELSE s.enabled END
    FROM unnest(
        CAST(:id AS bigint[]), CAST(:version AS integer[]), CAST(:old_next AS timestamptz[]),
        CAST(:next_run_at AS timestamptz[]), CAST(:due_at AS timestamptz[]),
        CAST(:last_error AS text[]), CAST(:last_slot AS timestamptz[]),
        CAST(:runs_added AS integer[]), CAST(:finished AS boolean[])
    ) AS v(id, version, old_next, next_run_at, due_at, last_error, last_slot, runs_added, finished)
    WHERE s.id = v.id AND s.version = v.version
        AND s.next_run_at IS NOT DISTINCT FROM v.old_next
    RETURNING s.id
    """
)

#: MySQL 8 / MariaDB 10.6+: the rows as one JSON array (a key left out is NULL), joined through
#: ``JSON_TABLE``. There is no ``RETURNING`` for an ``UPDATE``: the row count says whether every
#: row won (the driver counts matched rows, SQLAlchemy's ``FOUND_ROWS``).
_CAS_BATCH_MYSQL = sa.text(
    """
    UPDATE dbeat_schedules AS s JOIN JSON_TABLE(:rows, '$[*]' COLUMNS (
        id BIGINT PATH '$.id' ERROR ON EMPTY ERROR ON ERROR,
        version INT PATH '$.version' ERROR ON EMPTY ERROR ON ERROR,
        old_next DATETIME(6) PATH '$.old_next' ERROR ON ERROR,
        next_run_at DATETIME(6) PATH '$.next_run_at' ERROR ON ERROR,
        due_at DATETIME(6) PATH '$.due_at' ERROR ON ERROR,
        last_error LONGTEXT CHARACTER SET utf8mb4 PATH '$.last_error' ERROR ON ERROR,
        last_slot DATETIME(6) PATH '$.last_slot' ERROR ON ERROR,
        runs_added INT PATH '$.runs_added' ERROR ON EMPTY ERROR ON ERROR,
        finished INT PATH '$.finished' ERROR ON EMPTY ERROR ON ERROR
    )) AS v ON s.id = v.id AND s.version = v.version AND s.next_run_at <=> v.old_next
    SET s.next_run_at = v.next_run_at,
        s.due_at = v.due_at,
        s.last_error = v.last_error,
        s.last_slot = COALESCE(v.last_slot, s.last_slot),
        s.run_count = s.run_count + v.runs_added,
        s.finished_at = CASE WHEN v.finished = 1 THEN :now ELSE s.finished_at END,
        s.enabled = CASE WHEN v.finished = 1 THEN 0 ELSE s.enabled END
    """
).bindparams(sa.bindparam("now", type_=UTCDateTime()))


def _json_rows(rows: Sequence[tuple[Any, ...]]) -> str:
    """:data:`_CAS_BATCH_MYSQL`'s rows: an object per row, keyed by :data:`_CAS_COLUMNS`."""
    return json.dumps(
        [
            {
                name: _utc_text(value) if isinstance(value, datetime) else value
                for name, value in zip(_CAS_COLUMNS, row, strict=True)
                if value is not None
            }
            for row in rows
        ]
    )


def _utc_text(value: datetime | None) -> str | None:
    """An instant as :class:`.UTCDateTime` stores it on MySQL/MariaDB (``DATETIME(6)``) and
    SQLite (text): UTC without a zone, to the microsecond."""
    return None if value is None else naive_utc(value).isoformat(" ", "microseconds")


def _cas_row(conn: Connection) -> sa.Update:
    """One transition's compare-and-set: the row is updated only if it still holds the
    ``version`` and ``next_run_at`` read (on SQLite: the stored text, see
    :attr:`.ScheduleRow.next_run_at_text`). One statement with parameters for every value, so
    it is compiled once per backend."""
    return _CAS_ROW_TEXT if conn.dialect.name == "sqlite" else _CAS_ROW


def _cas_row_statement(stored_as_text: bool) -> sa.Update:
    finished = sa.bindparam("b_finished", type_=sa.Boolean())
    stored: sa.ColumnElement[Any] = S.c.next_run_at
    old: sa.BindParameter[Any] = sa.bindparam("b_old_next", type_=UTCDateTime())
    if stored_as_text:
        stored = sa.type_coerce(S.c.next_run_at, sa.String)
        old = sa.bindparam("b_old_next", type_=sa.String())
    return (
        sa.update(S)
        .where(
            S.c.id == sa.bindparam("b_id"),
            S.c.version == sa.bindparam("b_version"),
            stored.is_not_distinct_from(old),
        )
        .values(
            next_run_at=sa.bindparam("b_next_run_at", type_=UTCDateTime()),
            due_at=sa.bindparam("b_due_at", type_=UTCDateTime()),
            last_error=sa.bindparam("b_last_error", type_=sa.Text()),
            last_slot=sa.func.coalesce(
                sa.bindparam("b_last_slot", type_=UTCDateTime()), S.c.last_slot
            ),
            run_count=S.c.run_count + sa.bindparam("b_runs_added", type_=sa.Integer()),
            finished_at=sa.case(
                (finished, sa.bindparam("b_now", type_=UTCDateTime())), else_=S.c.finished_at
            ),
            enabled=sa.case((finished, sa.false()), else_=S.c.enabled),
        )
    )


_CAS_ROW = _cas_row_statement(stored_as_text=False)
_CAS_ROW_TEXT = _cas_row_statement(stored_as_text=True)


def compare_and_set(
    conn: Connection, transitions: Sequence[Transition], now: datetime
) -> list[Transition]:
    """Apply each transition whose row still holds what was read (``now``: a finished
    schedule's ``finished_at``); returns those applied."""
    dialect = conn.dialect.name

    def one(t: Transition) -> bool:
        return conn.execute(_cas_row(conn), _parameters(conn, t, now)).rowcount == 1

    if len(transitions) < 2:
        return [t for t in transitions if one(t)]
    if dialect == "postgresql":
        rows = [_values(conn, t) for t in transitions]
        columns = dict(zip(_CAS_COLUMNS, map(list, zip(*rows, strict=True)), strict=True))
        won = set(conn.execute(_CAS_BATCH_PG, {"now": now, **columns}).scalars())
        return [t for t in transitions if t.schedule.id in won]

    def every(batch: Sequence[Transition]) -> int:
        if dialect == "sqlite":
            parameters = [_parameters(conn, t, now) for t in batch]
            return conn.execute(_CAS_ROW_TEXT, parameters).rowcount
        rows = _json_rows([_values(conn, t) for t in batch])
        return conn.execute(_CAS_BATCH_MYSQL, {"rows": rows, "now": now}).rowcount

    return all_or_each(conn, transitions, every, one)


def _values(conn: Connection, t: Transition) -> tuple[Any, ...]:
    """``t``'s compare-and-set: a value for each of :data:`_CAS_COLUMNS`."""
    row = t.schedule
    old: datetime | str | None = row.next_run_at
    if conn.dialect.name == "sqlite":
        old = row.next_run_at_text or _utc_text(row.next_run_at)
    return (
        row.id,
        row.version,
        old,
        t.next_run_at,
        t.due_at,
        t.error,
        t.last_slot,
        t.runs_added,
        t.finished,
    )


def _parameters(conn: Connection, t: Transition, now: datetime) -> dict[str, Any]:
    """The parameters of :func:`_cas_row` for ``t``."""
    return dict(zip(_CAS_PARAMETERS, _values(conn, t), strict=True), b_now=now)
