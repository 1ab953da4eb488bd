"""The audit trail's SQL: an entry written in the transaction of the edit it records, the trail
read back, and old entries pruned.

An entry is one ``INSERT`` into ``dbeat_audit`` on the edit's own connection: it commits with
the edit and is rolled back with it, so the trail never shows an edit that did not happen nor
misses one that did. It takes no lock an edit could wait on (no foreign key, no read of the
trail, no update), and its size is bounded (:func:`celery_dbeat.core.audit.changes` cuts long
values), so it cannot be what keeps an edit from committing. An edit that changes nothing
(pausing a paused schedule, saving a form unchanged) records nothing.

A calendar's edits are recorded the same way (:func:`record_calendar`), told apart from a
schedule's by their action (:data:`~celery_dbeat.core.audit.CALENDAR_ACTIONS`): the entry's
``schedule_name`` holds the calendar's name and its ``schedule_uid`` is empty. Reading the trail of
a schedule leaves them out, and reading a calendar's takes only them, so a schedule and a calendar
of the same name each have their own.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, Row

from ..core.audit import (
    CALENDAR_ACTIONS,
    PAUSE_DETAIL,
    Action,
    Actor,
    calendar_changes,
    changes,
    decoded_changes,
)
from ..core.calendars import Calendar
from ..core.formats import iso
from . import schedules
from .models import A, S
from .pruning import HOST_MONOTONIC, delete_in_batches
from .reading import chunked, named_rows, read_rows

__all__ = [
    "SYNC_ACTOR",
    "Entry",
    "Watch",
    "entries",
    "os_user",
    "prune_audit",
    "record",
    "record_calendar",
    "record_rows",
    "row_entry",
    "watch",
]

#: Who the ``beat_schedule`` sync edits as.
SYNC_ACTOR = Actor("beat_schedule", "sync")


def os_user() -> str:
    """The operating system's user of this process (``unknown`` when it has none)."""
    try:
        return getpass.getuser() or "unknown"
    except (KeyError, OSError):  # no entry in the password database, no USER variable
        return "unknown"


def row_entry(
    actor: Actor,
    action: Action | str,
    at: datetime,
    name: str | None,
    uid: str | None,
    change: Mapping[str, Any],
) -> dict[str, Any]:
    """The columns of one entry (for a multi-row insert)."""
    return {
        "at": at,
        "actor": actor.name,
        "surface": actor.surface,
        "action": action.value if isinstance(action, Action) else action,
        "schedule_name": name,
        "schedule_uid": uid,
        "changes": json.dumps(change, ensure_ascii=False, sort_keys=False, default=str),
    }


def record(conn: Connection, entries: Sequence[Mapping[str, Any]]) -> None:
    """Insert entries (from :func:`row_entry`) on the edit's connection, in its transaction."""
    if entries:
        conn.execute(sa.insert(A), list(entries))


@dataclass
class Watch:
    """What :func:`watch` records: the row as the edit found it (``row``; ``None`` before a
    creation) and, once the block is over, as it left it (``after``; ``None`` after a removal).
    The edit may set ``detail`` (``{field: [old, new]}``) to record beside the row's changes (a
    run now's task id, a backfill's range)."""

    row: Row[Any] | None
    detail: dict[str, list[Any]] = field(default_factory=dict)
    after: Row[Any] | None = None


@contextmanager
def watch(
    conn: Connection,
    name: str,
    actor: Actor,
    action: Action,
    at: datetime,
) -> Iterator[Watch]:
    """Record the edit made in the ``with`` block to the schedule ``name`` (or, for a creation,
    that will be ``name``): the row read before and after it (by id, so a rename is followed),
    diffed, with the ``detail`` the block set; nothing when nothing changed. The edit reads
    the row from the :class:`Watch` rather than again. An update that renames is recorded as
    ``rename``, one that only pauses or resumes as ``pause`` or ``resume``. Nothing is recorded
    when the block raises: the transaction is rolled back with the edit."""
    seen = Watch(schedules.find_schedule(conn, name))
    yield seen
    before = seen.row
    if action in (Action.RUN_NOW, Action.BACKFILL):
        seen.after = before
    else:
        seen.after = schedules.find_schedule(conn, name, before.id if before else None)
    old = None if before is None else dict(before._mapping)
    new = None if seen.after is None else dict(seen.after._mapping)
    change = {**changes(old, new), **seen.detail}
    if not change:
        return
    if action is Action.UPDATE and "name" in change:
        action = Action.RENAME
    elif action is Action.UPDATE and set(change) - PAUSE_DETAIL == {"enabled"}:
        action = Action.RESUME if change["enabled"][1] else Action.PAUSE
    row: Mapping[str, Any] = new or old or {}
    record(
        conn,
        [row_entry(actor, action, at, row.get("name", name), row.get("uid"), change)],
    )


def record_rows(
    conn: Connection,
    actor: Actor,
    action: Action,
    at: datetime,
    before: Sequence[Row[Any]],
    names: Sequence[str] = (),
) -> None:
    """Record a batch edit: the rows ``before`` (as read in this transaction, before the edit)
    read again by id and diffed, and the new rows ``names``; one entry per row that changed."""
    old = {r.id: dict(r._mapping) for r in before}
    now: list[dict[str, Any]] = []
    for ids in chunked(list(old)):
        now += [dict(r._mapping) for r in read_rows(conn, sa.select(S).where(S.c.id.in_(ids)))[0]]
    now += [dict(r._mapping) for r in named_rows(conn, names)]
    found = []
    for row in sorted(now, key=lambda r: r["id"]):
        change = changes(old.get(row["id"]), row)
        if change:
            found.append(row_entry(actor, action, at, row["name"], row["uid"], change))
    for entries_ in chunked(found):
        record(conn, entries_)


def record_calendar(
    conn: Connection,
    actor: Actor,
    action: Action,
    at: datetime,
    before: Calendar | None,
    after: Calendar | None,
) -> None:
    """Record the edit of a calendar from ``before`` to ``after`` (``None``: it did not exist,
    or no longer does), in the edit's transaction; nothing when nothing changed."""
    change, subject = calendar_changes(before, after), after or before
    if change and subject is not None:
        record(conn, [row_entry(actor, action, at, subject.name, None, change)])


@dataclass(frozen=True)
class Entry:
    """One entry of the trail."""

    id: int
    at: datetime
    actor: str
    surface: str
    action: str
    name: str | None
    uid: str | None
    #: ``{field: [old, new]}``.
    changes: dict[str, list[Any]]

    @property
    def kind(self) -> str:
        """What the entry's ``name`` names: ``calendar`` or ``schedule``."""
        return "calendar" if self.action in CALENDAR_ACTIONS else "schedule"

    def as_json(self) -> dict[str, Any]:
        return dict(asdict(self), at=iso(self.at), kind=self.kind)


def entries(
    conn: Connection,
    *,
    name: str | None = None,
    kind: Literal["schedule", "calendar"] | None = None,
    since: datetime | None = None,
    limit: int = 100,
) -> list[Entry]:
    """The newest ``limit`` entries, newest first: of every schedule and calendar, or only of
    those of ``kind``; of the one ``name`` (a schedule, unless ``kind`` is ``calendar``: under
    that name or any other it had, its ``uid``; once removed, of the last schedule that had the
    name), of those at or after ``since``."""
    query = sa.select(A).order_by(A.c.at.desc(), A.c.id.desc()).limit(limit)
    of_calendars = A.c.action.in_(sorted(CALENDAR_ACTIONS))
    if kind == "calendar":
        query = query.where(of_calendars)
        if name is not None:
            query = query.where(A.c.schedule_name == name)
    elif name is not None:
        uid = conn.execute(sa.select(S.c.uid).where(S.c.name == name)).scalar()
        same = sa.and_(A.c.schedule_name == name, ~of_calendars)
        if uid is None:  # removed: the identity that last had the name
            newest = sa.select(A.c.schedule_uid).where(same)
            uid = conn.execute(newest.order_by(A.c.id.desc()).limit(1)).scalar()
        query = query.where(same if uid is None else sa.or_(same, A.c.schedule_uid == uid))
    elif kind == "schedule":
        query = query.where(~of_calendars)
    if since is not None:
        query = query.where(A.c.at >= since)
    return [
        Entry(
            r.id,
            r.at,
            r.actor,
            r.surface,
            r.action,
            r.schedule_name,
            r.schedule_uid,
            decoded_changes(r.changes),
        )
        for r in conn.execute(query)
    ]


def prune_audit(
    engine: Engine,
    before: datetime,
    *,
    batch: int = 1000,
    budget: float = 0.2,
    monotonic: Callable[[], float] = HOST_MONOTONIC,
) -> int:
    """Delete entries older than ``before``, as :func:`.runs.prune_history` deletes fires."""
    return delete_in_batches(
        engine, A, A.c.at < before, A.c.at, batch=batch, budget=budget, monotonic=monotonic
    )
