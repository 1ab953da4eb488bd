"""Schedules: the management API's writes of definitions, and its reads.

Every write validates through :class:`~celery_dbeat.core.definitions.Definition` and moves
``next_run_at`` by one rule: a timing change recomputes it from the edit time (never before a
slot already recorded), a payload change keeps it. Every write bumps the row's ``version``, so a
beat that read the row before the edit cannot record a fire from the old definition. The config
sync (:mod:`.sync`) writes by the same rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from ..core.definitions import PAYLOAD_COLUMNS, SPEC_COLUMNS, TIMING_COLUMNS, Definition
from ..core.errors import ScheduleChanged, ScheduleExists, ScheduleNotFound, ValidationError
from ..core.fires import new_uid
from ..core.origins import API_ORIGIN, CONFIG_ORIGIN
from ..core.planning import due_times
from ..core.states import OTHERWISE, RULE, STATES, PauseSource
from .calendars import require_calendars
from .models import F, S
from .reading import chunked, read_rows

__all__ = [
    "RESUMED",
    "changed",
    "count_due",
    "create_schedules",
    "delete_schedule",
    "due_schedules",
    "ensure_uid",
    "failing_schedules",
    "find_schedule",
    "list_schedules",
    "load_schedule",
    "lock_schedules",
    "new_row",
    "pause_values",
    "paused_counts",
    "retimed",
    "set_enabled",
    "state_counts",
    "state_expression",
    "upcoming_schedules",
    "update_schedule",
    "update_schedules",
]


def _upcoming(
    definition: Definition, uid: str, anchor: datetime, after: datetime
) -> dict[str, Any]:
    """``next_run_at`` (first slot after ``after``) and its ``due_at`` (jitter hashes ``uid``)."""
    jitter = None if definition.jitter is None else timedelta(seconds=definition.jitter)
    slots = definition.timing(anchor).slots_after(after)
    try:
        first = next(due_times(uid, slots, jitter), None)
    except (ArithmeticError, ValueError) as exc:
        # Validation bounds every instant; a spec whose next slot still leaves the calendar
        # (year 9999) is refused here rather than stored unusable.
        raise ValidationError(
            "schedule", definition.spec, f"cannot compute its next slot: {exc}"
        ) from None
    if first is None:
        return {"next_run_at": None, "due_at": None}
    return {"next_run_at": first[0], "due_at": first[1] if jitter else None}


def new_row(definition: Definition, origin: str, now: datetime) -> dict[str, Any]:
    """The columns of a new schedule: a new identity (``uid``), whatever its name was before."""
    anchor = definition.start_at or now
    uid = new_uid()
    upcoming = _upcoming(definition, uid, anchor, now)
    return dict(
        definition.columns(),
        **upcoming,
        uid=uid,
        name=definition.name,
        origin=origin,
        config_enabled=definition.enabled if origin == CONFIG_ORIGIN else None,
        enabled=definition.enabled and upcoming["next_run_at"] is not None,
        anchor_at=anchor,
        finished_at=None if upcoming["next_run_at"] is not None else now,
        run_count=0,
        version=1,
        created_at=now,
        updated_at=now,
    )


def retimed(definition: Definition, row: Row[Any], now: datetime) -> dict[str, Any]:
    """Columns that restart a schedule's timing at ``now``, never before a recorded slot.

    A new spec anchors an interval at ``now``; otherwise (bounds, jitter, a resume) it stays on
    its grid, ``anchor + n * every``.
    """
    columns = definition.columns()
    spec_changed = any(columns[c] != getattr(row, c) for c in SPEC_COLUMNS)
    kept = row.anchor_at or row.created_at
    anchor = definition.start_at or (now if spec_changed or kept is None else kept)
    after = now if row.last_slot is None else max(now, row.last_slot)
    identity = {} if row.uid is not None else {"uid": new_uid()}  # a row inserted by hand
    upcoming = _upcoming(definition, row.uid or identity["uid"], anchor, after)
    return dict(
        upcoming,
        **identity,
        anchor_at=anchor,
        last_error=None,
        finished_at=None if upcoming["next_run_at"] is not None else now,
    )


def changed(definition: Definition, row: Row[Any]) -> tuple[bool, bool]:
    columns = definition.columns()
    timing = any(columns[c] != getattr(row, c) for c in TIMING_COLUMNS)
    payload = any(columns[c] != getattr(row, c) for c in PAYLOAD_COLUMNS)
    return timing, payload


def ensure_uid(conn: Connection, schedule_id: int, uid: str | None) -> str:
    """The schedule's ``uid`` (``uid``, as read); a row inserted by hand without one is given
    one now."""
    if uid is not None:
        return uid
    conn.execute(sa.update(S).where(S.c.id == schedule_id, S.c.uid.is_(None)).values(uid=new_uid()))
    return str(conn.execute(sa.select(S.c.uid).where(S.c.id == schedule_id)).scalar_one())


def find_schedule(
    conn: Connection, name: str | None, schedule_id: int | None = None
) -> Row[Any] | None:
    """The schedule ``name`` (or, given, of id ``schedule_id``), as this transaction sees it."""
    key = S.c.name == name if schedule_id is None else S.c.id == schedule_id
    rows, _ = read_rows(conn, sa.select(S).where(key))
    return rows[0] if rows else None


def load_schedule(conn: Connection, name: str) -> Row[Any]:
    """:func:`find_schedule`; raises :class:`ScheduleNotFound`."""
    row = find_schedule(conn, name)
    if row is None:
        raise ScheduleNotFound(name)
    return row


def create_schedules(conn: Connection, definitions: Sequence[Definition], now: datetime) -> None:
    """Insert new schedules in one statement; every name must be free."""
    names = [d.name for d in definitions]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValidationError("name", name, "is given twice in one batch")
        seen.add(name)
    for chunk in chunked(names):
        taken = conn.execute(sa.select(S.c.name).where(S.c.name.in_(chunk)).limit(1)).first()
        if taken is not None:
            raise ScheduleExists(taken.name)
    require_calendars(conn, [d.calendar for d in definitions])
    try:
        with conn.begin_nested():
            conn.execute(sa.insert(S), [new_row(d, API_ORIGIN, now) for d in definitions])
    except sa.exc.IntegrityError:
        raise ScheduleExists(names[0]) from None  # a concurrent writer took one of the names


def _write(conn: Connection, row: Row[Any], values: dict[str, Any], now: datetime) -> None:
    result = conn.execute(
        sa.update(S)
        .where(S.c.id == row.id, S.c.version == row.version)
        .values(updated_at=now, version=row.version + 1, **values)
    )
    if result.rowcount != 1:
        # The row's version moved since ``row`` was read: another writer's edit would be lost.
        raise ScheduleChanged(row.name)


def update_schedule(
    conn: Connection, definition: Definition, now: datetime, row: Row[Any]
) -> dict[str, Any] | None:
    """Store ``definition`` over ``row`` (read in this transaction: a writer that changed it
    since raises :class:`ScheduleChanged`). Returns the columns written; ``None``: nothing
    changed."""
    values = _updated_columns(definition, row, now)
    if values is None:
        return None
    if definition.calendar != row.calendar:
        require_calendars(conn, [definition.calendar])
    if definition.name == row.name:
        _write(conn, row, values, now)
        return values
    try:  # the new name may be taken: keep the transaction usable for the error
        with conn.begin_nested():
            _write(conn, row, values, now)
    except sa.exc.IntegrityError:
        raise ScheduleExists(definition.name) from None
    return values


def _updated_columns(definition: Definition, row: Row[Any], now: datetime) -> dict[str, Any] | None:
    """The columns that store ``definition`` over ``row``; ``None`` if nothing changed.

    A row in error is stored again, timing included, even when nothing changed: saving it as it
    is (the CLI's ``update``, an admin form) is how a person clears the error once its cause is
    corrected, or replaces a stored value that cannot be read (``reading.py``: it reads as NULL,
    and is written back as NULL, or as the value given)."""
    timing_changed, payload_changed = changed(definition, row)
    in_error = row.last_error is not None
    if not (timing_changed or payload_changed or in_error or definition.name != row.name):
        return None
    values = dict(definition.columns(), name=definition.name)
    if in_error:
        if row.last_slot is None:
            values["last_slot"] = None
        if row.created_at is None:
            values["created_at"] = now
    if timing_changed or in_error:
        values.update(retimed(definition, row, now))
        if values["next_run_at"] is None:
            values["enabled"] = False
        elif row.finished_at is not None:
            values["enabled"] = True  # a finished schedule given new timing lives again
    return values


def lock_schedules(conn: Connection, names: Sequence[str]) -> list[Row[Any]]:
    """The rows ``names``, locked against other writers until the transaction ends (in id
    order, so that two batches never wait on each other in a cycle)."""
    wanted = sorted(set(names))
    rows: list[Row[Any]] = []
    for chunk in chunked(wanted):
        query = sa.select(S).where(S.c.name.in_(chunk)).order_by(S.c.id)
        if conn.dialect.name != "sqlite":  # SQLite's writer holds the whole database already
            query = query.with_for_update()
        rows += read_rows(conn, query)[0]
    rows.sort(key=lambda row: row.id)
    if len(rows) < len(wanted):
        found = {r.name for r in rows}
        raise ScheduleNotFound(next(n for n in wanted if n not in found))
    return rows


def update_schedules(
    conn: Connection, updates: Sequence[tuple[Row[Any], Definition]], now: datetime
) -> int:
    """Store each definition over its row (rows from :func:`lock_schedules`, no renames), with
    one ``executemany`` per set of changed columns. Returns how many rows changed."""
    require_calendars(conn, [d.calendar for row, d in updates if d.calendar != row.calendar])
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row, definition in updates:
        assert definition.name == row.name, "no renames in a batch (Schedules.update_many)"
        values = _updated_columns(definition, row, now)
        if values is not None:
            groups.setdefault(tuple(sorted(values)), []).append({"_row_id": row.id, **values})
    statement = (
        sa.update(S)
        .where(S.c.id == sa.bindparam("_row_id"))
        .values(updated_at=now, version=S.c.version + 1)
    )
    for params in groups.values():
        conn.execute(statement, params)
    return sum(len(params) for params in groups.values())


#: The columns a resume clears.
RESUMED = {"pause_note": None, "paused_at": None, "pause_source": None}


def pause_values(note: str | None, source: PauseSource, at: datetime) -> dict[str, Any]:
    """The columns a pause sets besides ``enabled`` (a resume clears them: :data:`RESUMED`)."""
    return {"pause_note": note, "paused_at": at, "pause_source": source.value}


def set_enabled(
    conn: Connection,
    row: Row[Any],
    enabled: bool,
    now: datetime,
    *,
    catch_up: bool = False,
    note: str | None = None,
) -> bool:
    """Pause (with ``note``, validated by the caller) or resume. Returns whether the row changed.

    A pause records its note, its time and that a person made it; pausing a paused schedule
    with a note replaces the note only. A resume clears all three. Resuming recomputes
    ``next_run_at`` from now, so the slots that fell inside the pause are not fired, unless
    ``catch_up`` keeps it: then they go through the misfire policy on the next tick. ``row``:
    as read in this transaction.
    """
    if not enabled:
        if not row.enabled:
            if note is None or note == row.pause_note:
                return False
            _write(conn, row, {"pause_note": note}, now)
            return True
        _write(conn, row, {"enabled": False, **pause_values(note, PauseSource.PERSON, now)}, now)
        return True
    if row.enabled:
        return False
    if row.finished_at is not None:
        raise ValidationError(
            "name",
            row.name,
            "has finished (no slot left); update its timing or bounds to revive it",
        )
    values: dict[str, Any] = {"enabled": True, **RESUMED}
    if not catch_up or row.next_run_at is None:
        # From the resume on: the slots of the pause are not fired, the first after it is.
        try:
            values.update(retimed(Definition.from_columns(row._mapping), row, now))
        except ValidationError:
            values.update(next_run_at=None, due_at=None)  # beat marks the row with its error
        if values["next_run_at"] is None and values.get("finished_at") is not None:
            values["enabled"] = False
    _write(conn, row, values, now)
    return True


def delete_schedule(conn: Connection, row: Row[Any]) -> None:
    """Delete the schedule ``row`` and its fire history."""
    conn.execute(sa.delete(F).where(F.c.schedule_id == row.id))
    conn.execute(sa.delete(S).where(S.c.id == row.id))


def list_schedules(
    conn: Connection,
    *,
    enabled: bool | None = None,
    search: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[Row[Any]]:
    query = sa.select(S).order_by(S.c.name)
    if enabled is not None:
        query = query.where(S.c.enabled == sa.true() if enabled else S.c.enabled == sa.false())
    if search:
        pattern = f"%{search}%"
        query = query.where(sa.or_(S.c.name.like(pattern), S.c.task.like(pattern)))
    if limit is not None:
        query = query.limit(limit)
    return read_rows(conn, query.offset(offset))[0]


def _due_condition(now: datetime) -> sa.ColumnElement[bool]:
    return sa.and_(
        S.c.enabled == sa.true(),
        sa.or_(sa.and_(S.c.due_at.is_(None), S.c.next_run_at <= now), S.c.due_at <= now),
    )


def due_schedules(conn: Connection, now: datetime, limit: int | None) -> list[Row[Any]]:
    """Enabled schedules whose fire is due at ``now`` (the backlog), oldest first."""
    query = sa.select(S).where(_due_condition(now)).order_by(S.c.next_run_at, S.c.name)
    return read_rows(conn, query if limit is None else query.limit(limit))[0]


def count_due(conn: Connection, now: datetime) -> int:
    return int(conn.execute(sa.select(sa.func.count()).where(_due_condition(now))).scalar_one())


def upcoming_schedules(conn: Connection, now: datetime, count: int) -> list[Row[Any]]:
    query = (
        sa.select(S)
        .where(S.c.enabled == sa.true(), S.c.next_run_at > now)
        .order_by(S.c.next_run_at, S.c.name)
        .limit(count)
    )
    return read_rows(conn, query)[0]


def failing_schedules(conn: Connection) -> list[Row[Any]]:
    return read_rows(conn, sa.select(S).where(S.c.last_error.is_not(None)).order_by(S.c.name))[0]


def _rule(table: sa.Table) -> list[tuple[str, sa.ColumnElement[bool]]]:
    """:data:`celery_dbeat.core.states.RULE` in SQL: ``(state, condition)`` in order."""
    return [
        (state, table.c[column] == sa.true() if test == "true" else table.c[column].is_not(None))
        for state, column, test in RULE
    ]


def state_expression(table: sa.Table = S) -> sa.ColumnElement[str]:
    """A schedule's state in SQL, from :data:`celery_dbeat.core.states.RULE`."""
    return sa.case(*((condition, state) for state, condition in _rule(table)), else_=OTHERWISE)


def paused_expression(table: sa.Table = S) -> sa.ColumnElement[bool]:
    """Whether a schedule is paused, in SQL: no rule of :data:`celery_dbeat.core.states.RULE`
    holds. Its queued and buffered fires wait while it is (SEMANTICS: pausing stops fires)."""
    return sa.not_(sa.or_(*(condition for _, condition in _rule(table))))


def paused_counts(conn: Connection) -> dict[str, int]:
    """How many schedules are paused, by :class:`PauseSource` (``unknown``: paused before the
    source was recorded); every source is present."""
    source = sa.func.coalesce(S.c.pause_source, "unknown").label("source")
    rows = conn.execute(
        sa.select(source, sa.func.count()).where(paused_expression()).group_by(source)
    )
    counts = dict.fromkeys([*(p.value for p in PauseSource), "unknown"], 0)
    counts.update({name: int(n) for name, n in rows})
    return counts


def state_counts(conn: Connection) -> dict[str, int]:
    """How many schedules are ``active``, ``paused``, ``finished`` and in ``error``."""
    state = state_expression().label("state")
    rows = conn.execute(sa.select(state, sa.func.count()).group_by(state))
    counts = dict.fromkeys(STATES, 0)
    counts.update({name: int(n) for name, n in rows})
    return counts
