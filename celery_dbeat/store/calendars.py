"""Exclusion calendars in SQL: the management API's writes and reads of ``dbeat_calendars``, the
check that a schedule names a calendar that exists, and what beat reads per claimed batch.

A calendar's row is versioned like a schedule's: every edit bumps ``version``, and its ``uid``,
given at creation, tells a calendar from one removed and created again under its name (which
starts again at version 1). Beat reads the ``(name, uid, version)`` of the calendars a batch
names (one small indexed query per batch) and the dates only of those it has not cached at that
identity and version (:class:`CalendarCache`), so an edit or a re-creation takes effect on the
next batch of every beat, and a batch costs one query when nothing changed.

A schedule that names a calendar holds its calendar's row with a shared lock until its write
commits, and a removal locks the row for update before it looks for schedules naming it: so on
PostgreSQL and MariaDB a calendar is never removed from under a schedule being saved with it
(SQLite has one writer at a time anyway).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from ..core.calendars import Calendar, unknown_calendar
from ..core.errors import CalendarExists, CalendarInUse, CalendarNotFound, ValidationError
from ..core.fires import new_uid
from .models import C, S
from .reading import chunked

__all__ = [
    "CalendarCache",
    "calendar_of",
    "create_calendar",
    "delete_calendar",
    "list_calendars",
    "load_calendar",
    "require_calendars",
    "update_calendar",
]

#: Most schedule names an :class:`CalendarInUse` error lists.
_NAMES_SHOWN = 10


def calendar_of(row: Row[Any]) -> Calendar:
    """The :class:`Calendar` a ``dbeat_calendars`` row holds; raises :class:`ValidationError`
    for a row edited by hand into something no surface allows (its description aside)."""
    try:
        dates = json.loads(row.dates)
    except (TypeError, ValueError):
        dates = None
    if not isinstance(dates, list):
        raise ValidationError("dates", row.dates, "is not a JSON list of dates")
    calendar = Calendar.create(row.name, timezone=row.timezone, dates=dates, version=row.version)
    # Not checked: a description written before control characters were refused in one is
    # still the calendar's (the CLI shows it escaped), and its dates still apply.
    return replace(calendar, description=row.description or "")


def _values(calendar: Calendar) -> dict[str, Any]:
    return {
        "name": calendar.name,
        "timezone": calendar.timezone,
        "dates": json.dumps(calendar.dates),
        "description": calendar.description or None,
    }


def load_calendar(conn: Connection, name: str, *, lock: bool = False) -> Calendar:
    query = sa.select(C).where(C.c.name == name)
    if lock and conn.dialect.name != "sqlite":
        query = query.with_for_update()
    row = conn.execute(query).first()
    if row is None:
        raise CalendarNotFound(name, conn.execute(sa.select(C.c.name)).scalars())
    return calendar_of(row)


def list_calendars(conn: Connection) -> list[Calendar]:
    return [calendar_of(row) for row in conn.execute(sa.select(C).order_by(C.c.name))]


def create_calendar(conn: Connection, calendar: Calendar, now: datetime) -> None:
    if conn.execute(sa.select(C.c.id).where(C.c.name == calendar.name)).first() is not None:
        raise CalendarExists(calendar.name)
    try:
        with conn.begin_nested():
            conn.execute(
                sa.insert(C).values(
                    **_values(calendar), uid=new_uid(), version=1, created_at=now, updated_at=now
                )
            )
    except sa.exc.IntegrityError:
        raise CalendarExists(calendar.name) from None


def update_calendar(conn: Connection, calendar: Calendar, now: datetime) -> Calendar:
    """Store ``calendar`` over the row of its name; bump its version if anything changed."""
    old = load_calendar(conn, calendar.name, lock=True)
    values = _values(calendar)
    if values == _values(old):
        return old
    conn.execute(
        sa.update(C)
        .where(C.c.name == calendar.name)
        .values(**values, version=C.c.version + 1, updated_at=now)
    )
    return load_calendar(conn, calendar.name)


def delete_calendar(conn: Connection, name: str) -> Calendar:
    """Remove the calendar ``name`` and return it as it was; refused while a schedule names
    it."""
    old = load_calendar(conn, name, lock=True)
    names = conn.execute(
        sa.select(S.c.name).where(S.c.calendar == name).order_by(S.c.name).limit(_NAMES_SHOWN)
    ).scalars()
    shown = list(names)
    if shown:
        total = conn.execute(
            sa.select(sa.func.count()).select_from(S).where(S.c.calendar == name)
        ).scalar_one()
        raise CalendarInUse(name, shown, total)
    conn.execute(sa.delete(C).where(C.c.name == name))
    return old


def require_calendars(conn: Connection, names: Iterable[str | None]) -> None:
    """Refuse a schedule that names a calendar that does not exist, and hold the rows of those
    that do against removal until the transaction ends."""
    wanted = sorted({n for n in names if n is not None})
    for chunk in chunked(wanted):
        query = sa.select(C.c.name).where(C.c.name.in_(chunk))
        if conn.dialect.name != "sqlite":
            query = query.with_for_update(read=True)
        found = set(conn.execute(query).scalars())
        for name in chunk:
            if name not in found:
                raise unknown_calendar(name, conn.execute(sa.select(C.c.name)).scalars())


class CalendarCache:
    """The calendars beat plans with, kept per name at the identity (``uid``) and version last
    read: a calendar removed and created again under its name has another ``uid``, so it is read
    again although its version starts at 1 again. A row inserted by hand without a ``uid`` is
    read at every batch."""

    def __init__(self) -> None:
        self._cached: dict[str, Calendar | str] = {}
        self._versions: dict[str, tuple[str, int]] = {}

    def read(self, conn: Connection, names: Collection[str | None]) -> dict[str, Calendar | str]:
        """Each named calendar that exists, as a :class:`Calendar`, or why it cannot be used (a
        row edited by hand into bad dates); names that no calendar has are left out."""
        wanted = sorted({n for n in names if n is not None})
        result: dict[str, Calendar | str] = {}
        stale: list[str] = []
        for chunk in chunked(wanted):
            for name, uid, version in conn.execute(
                sa.select(C.c.name, C.c.uid, C.c.version).where(C.c.name.in_(chunk))
            ):
                if uid is not None and self._versions.get(name) == (uid, version):
                    result[name] = self._cached[name]
                else:
                    stale.append(name)
        for chunk in chunked(stale):
            for row in conn.execute(sa.select(C).where(C.c.name.in_(chunk))):
                try:
                    calendar: Calendar | str = calendar_of(row)
                except ValidationError as exc:
                    calendar = f"calendar {row.name!r} cannot be read: {exc}"
                self._cached[row.name] = calendar
                if row.uid is None:
                    self._versions.pop(row.name, None)
                else:
                    self._versions[row.name] = (row.uid, row.version)
                result[row.name] = calendar
        return result
