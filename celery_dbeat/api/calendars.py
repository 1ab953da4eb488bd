"""The management API of exclusion calendars: ``Schedules(...).calendars``.

    schedules.calendars.add("uk-holidays", timezone="Europe/London",
                            dates=["2026-12-25", "2026-12-28..2026-12-31"])
    schedules.add("report", "proj.tasks.report", Cron("0 9 * * 1-5", "Europe/London"),
                  calendar="uk-holidays")

A schedule names at most one calendar (``calendar=``): one name is one indexed column, so "which
schedules use this calendar" is one query and a removal can be refused with their names; what
would be a second calendar is a date range more in the first. A slot whose date, in the
calendar's zone, is one of its dates is not sent: it is recorded as skipped with the calendar's
name when it passes (:mod:`celery_dbeat.core.calendars`). Every edit bumps the calendar's
version and takes effect at the next batch of every beat, and is recorded in the audit trail
(``Schedules.audit(calendar=NAME)``) in its transaction, as the API's ``actor`` or the ``actor=``
the call names.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from datetime import datetime

from ..core.audit import Action, Actor
from ..core.calendars import Calendar
from ..core.counts import require_count
from ..core.timing import require_aware
from ..store import audit
from ..store import calendars as store
from ..store.audit import Entry
from .session import Session

__all__ = ["Calendar", "Calendars"]


class Calendars:
    """Add, edit, list and remove the exclusion calendars of the database of ``api``."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def get(self, name: str) -> Calendar:
        with self._session.store.engine.connect() as conn:
            return store.load_calendar(conn, name)

    def list(self) -> builtins.list[Calendar]:
        with self._session.store.engine.connect() as conn:
            return store.list_calendars(conn)

    def add(
        self,
        name: str,
        *,
        timezone: str = "UTC",
        dates: Iterable[object] | str = (),
        description: str | None = None,
        actor: Actor | str | None = None,
    ) -> Calendar:
        """A new calendar; raises ``CalendarExists`` if the name is taken, ``ValidationError``
        naming a bad field (a date that is not ``YYYY-MM-DD`` or ``YYYY-MM-DD..YYYY-MM-DD``).
        ``actor``: who the audit trail records (default: the API's)."""
        calendar = Calendar.create(name, timezone=timezone, dates=dates, description=description)
        with self._session.write(actor) as w:
            store.create_calendar(w.conn, calendar, w.now)
            audit.record_calendar(w.conn, w.actor, Action.CALENDAR_CREATE, w.now, None, calendar)
        return self.get(name)

    def update(
        self,
        name: str,
        *,
        timezone: str | None = None,
        dates: Iterable[object] | str | None = None,
        add_dates: Iterable[object] | str = (),
        description: str | None = None,
        actor: Actor | str | None = None,
    ) -> Calendar:
        """Replace the zone, the dates (``dates``) or the description, or add dates
        (``add_dates``); bumps the version, and records the change as ``actor``, if anything
        changed."""
        with self._session.write(actor) as w:
            old = store.load_calendar(w.conn, name, lock=True)
            base = list(old.ranges) if dates is None else _listed(dates)
            calendar = Calendar.create(
                name,
                timezone=old.timezone if timezone is None else timezone,
                dates=base + _listed(add_dates),
                description=old.description if description is None else description,
            )
            new = store.update_calendar(w.conn, calendar, w.now)
            audit.record_calendar(w.conn, w.actor, Action.CALENDAR_UPDATE, w.now, old, new)
        return new

    def remove(self, name: str, *, actor: Actor | str | None = None) -> None:
        """Remove a calendar; refused (``CalendarInUse``, naming them) while schedules name it.
        ``actor``: who the audit trail records."""
        with self._session.write(actor) as w:
            old = store.delete_calendar(w.conn, name)
            audit.record_calendar(w.conn, w.actor, Action.CALENDAR_REMOVE, w.now, old, None)

    def audit(
        self, name: str | None = None, *, since: datetime | None = None, limit: int = 100
    ) -> builtins.list[Entry]:
        """The calendars' part of the audit trail, newest first (of the calendar ``name``), from
        ``since`` on, at most ``limit`` (1 to 10000) entries: each create, update and removal,
        who made it, from where, and each field's old and new value (on an update, the dates
        that differ)."""
        require_aware("since", since)
        with self._session.store.engine.connect() as conn:
            return audit.entries(
                conn, name=name, kind="calendar", since=since, limit=require_count(limit)
            )


def _listed(entries: Iterable[object] | str) -> builtins.list[object]:
    return [entries] if isinstance(entries, str) else list(entries)
