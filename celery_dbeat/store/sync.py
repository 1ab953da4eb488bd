"""Applying schedule definitions by name, the one writer of beat's ``beat_schedule`` sync, the
file import and the importers (:meth:`Schedules.apply <celery_dbeat.api.Schedules.apply>`):
:mod:`.reconcile` decides what each name becomes; this module reads and writes. Idempotent, safe
with several writers at once.

The work is split into chunks of :data:`CHUNK` definitions, and each chunk into a read of the
rows of its names, the work of deciding and computing (outside any transaction), and a write
transaction that holds nothing but its statements, each update a compare-and-set on the row's
version: 100,000 entries in one transaction kept it open (and, between its statements, idle while
Python computed) for longer than PostgreSQL's ``idle_in_transaction_session_timeout`` on a slow
host, which ended it, and beat started the whole sync over, for ever. Each definition stands
alone (created, updated or left by name), so an apply cut short by a crash leaves every
definition it reached applied, and the next one finishes; a chunk another writer wrote first is
read and decided again.

Nothing is held for every definition: they are taken from their iterable a chunk at a time (a
beat makes its ``beat_schedule`` entries into definitions as the sync takes them), the names
still configured are read back a page at a time, and what left ``beat_schedule`` is told by the
caller's container of names (the app's own dict), so a beat's memory does not grow with the
number of entries.

A definition the database refuses (a constraint, a value it will not take) costs that definition,
not the apply: after two tries (a refusal can be another writer's insert of the same name), the
chunk is written in savepoints halved down to the refused definitions
(:func:`.isolation.isolated`), which the report lists with the database's message.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.audit import Action, Actor, changes
from ..core.definitions import Definition
from ..core.origins import CONFIG_ORIGIN, REMOVED_ORIGIN
from .audit import SYNC_ACTOR, record, row_entry
from .calendars import require_calendars
from .failures import driver_message
from .isolation import Refused, isolated
from .models import S
from .reading import chunked, named_rows, read_rows
from .reconcile import Decision, decide

if TYPE_CHECKING:
    from .database import Store

__all__ = ["CHUNK", "SyncReport", "apply_definitions", "sync_config"]


@dataclass
class SyncReport:
    """What applying definitions did (on a dry run: would do), by name."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    #: Schedules whose entries left ``beat_schedule`` (``disable_missing``).
    disabled: list[str] = field(default_factory=list)
    #: Names of schedules the origin may not change (:mod:`~celery_dbeat.store.reconcile`);
    #: left untouched.
    conflicts: list[str] = field(default_factory=list)
    #: Definitions the database refused to write, with its message; left as they were.
    refused: dict[str, str] = field(default_factory=dict)

    def merge(self, other: SyncReport) -> None:
        for name in ("created", "updated", "unchanged", "disabled", "conflicts"):
            getattr(self, name).extend(getattr(other, name))
        self.refused.update(other.refused)


class _Changed(Exception):
    """A row changed under the apply; start over."""


#: Definitions applied per write transaction.
CHUNK = 500

#: When a write happens, read on its connection (the database's clock, or the caller's).
Clock = Callable[[Connection], datetime]


def _write(conn: Connection, decisions: Sequence[Decision]) -> None:
    for decision in decisions:
        if decision.update is not None:
            row_id, version, values = decision.update
            update = sa.update(S).where(S.c.id == row_id, S.c.version == version)
            if conn.execute(update.values(**values)).rowcount != 1:
                raise _Changed(row_id)
    inserts = [decision.insert for decision in decisions if decision.insert is not None]
    if inserts:
        conn.execute(sa.insert(S), inserts)
    record(conn, [decision.audit for decision in decisions if decision.audit is not None])


def _apply_chunk(
    store: Store,
    definitions: Sequence[Definition],
    clock: Clock,
    origin: str,
    dry_run: bool,
    actor: Actor,
) -> SyncReport:
    names = [d.name for d in definitions]
    for attempt in range(3):
        report = SyncReport()
        with store.engine.connect() as conn:
            now = clock(conn)
            rows = named_rows(conn, names)
        decisions = decide(definitions, rows, origin, now, actor)
        for decision in decisions:
            getattr(report, decision.action).append(decision.name)
        writes = [d for d in decisions if d.audit is not None]
        if dry_run or not writes:
            return report
        try:
            with store.engine.begin() as conn:
                if origin != CONFIG_ORIGIN:  # as every API write (beat_schedule is as it is)
                    require_calendars(conn, [d.calendar for d in definitions])
                if attempt < 2:
                    _write(conn, writes)
                else:
                    _, refused = isolated(conn, writes, lambda part: _write(conn, part))
                    _refused(report, refused)
            return report
        except (sa.exc.IntegrityError, _Changed):
            # Another writer (a beat starting at the same time) wrote some of these first.
            if attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _refused(report: SyncReport, refused: Refused[Decision]) -> None:
    """Take the definitions the database refused out of the report's lists, into ``refused``."""
    for writes, exc in refused:
        report.refused[writes.name] = driver_message(exc)
    for key in ("created", "updated"):
        setattr(report, key, [n for n in getattr(report, key) if n not in report.refused])


def _disable(conn: Connection, names: Sequence[str], at: datetime, actor: Actor) -> None:
    """Disable the config rows ``names`` (their entries left ``beat_schedule``), recording each
    row this transaction changed (locked as read, so another beat's sync cannot have done it)."""
    query = sa.select(S).where(S.c.origin == CONFIG_ORIGIN, S.c.name.in_(names))
    if conn.dialect.name != "sqlite":  # SQLite's writer holds the whole database already
        query = query.with_for_update()
    rows, _ = read_rows(conn, query)
    if not rows:
        return
    values = {"enabled": False, "origin": REMOVED_ORIGIN, "updated_at": at}
    ids = [r.id for r in rows]
    conn.execute(sa.update(S).where(S.c.id.in_(ids)).values(version=S.c.version + 1, **values))
    entries = [(r.name, r.uid, changes(dict(r._mapping), {**r._mapping, **values})) for r in rows]
    record(conn, [row_entry(actor, Action.DISABLE, at, *entry) for entry in entries])


def _chunks(definitions: Iterable[Definition]) -> Iterator[list[Definition]]:
    """``definitions`` in lists of :data:`CHUNK`, taken from the iterable as they are needed."""
    iterator = iter(definitions)
    while chunk := list(islice(iterator, CHUNK)):
        yield chunk


def _configured_names(store: Store) -> Iterator[str]:
    """The names of the ``config`` schedules, a page of :data:`CHUNK` at a time (by name, each
    page read on its own connection): never every name at once."""
    after: str | None = None
    while True:
        query = sa.select(S.c.name).where(S.c.origin == CONFIG_ORIGIN)
        if after is not None:
            query = query.where(S.c.name > after)
        with store.engine.connect() as conn:
            page = list(conn.execute(query.order_by(S.c.name).limit(CHUNK)).scalars())
        yield from page
        if len(page) < CHUNK:
            return
        after = page[-1]


def apply_definitions(
    store: Store,
    definitions: Iterable[Definition],
    clock: Clock,
    *,
    origin: str,
    actor: Actor,
    dry_run: bool = False,
    disable_missing: bool = False,
    listed: Container[str] | None = None,
    progress: Callable[[int], object] | None = None,
) -> SyncReport:
    """Bring the schedules of the definitions' names (unique) in line with them, as ``origin``
    (``config`` or ``api``) decides (:mod:`.reconcile`): one write transaction per :data:`CHUNK`
    definitions (see the module docstring), audited as ``actor``; ``clock``: the time of a write
    on its connection. ``definitions`` are taken a chunk at a time: an iterator that makes them
    as it goes (beat's sync) never has more than a chunk of them in memory.
    ``disable_missing`` (``config`` only): also disable the schedules whose entries left
    ``beat_schedule`` (kept with their history, origin ``config:removed``): those whose names
    are not in ``listed`` (by default the definitions' names, collected as they are applied).
    ``dry_run``: the same report, writing nothing. ``progress``: called with the number of
    definitions of each chunk once it is done."""
    report = SyncReport()
    collected: set[str] = set()
    for chunk in _chunks(definitions):
        report.merge(_apply_chunk(store, chunk, clock, origin, dry_run, actor))
        if disable_missing and listed is None:
            collected.update(d.name for d in chunk)
        if progress is not None:
            progress(len(chunk))
    if not disable_missing:
        return report
    assert origin == CONFIG_ORIGIN, "disable_missing is beat_schedule's (Schedules.apply)"
    names = collected if listed is None else listed
    gone = sorted(name for name in _configured_names(store) if name not in names)
    if not dry_run:
        for removed in chunked(gone, CHUNK):
            with store.engine.begin() as conn:
                _disable(conn, removed, clock(conn), actor)
    report.disabled.extend(gone)
    return report


def sync_config(
    store: Store,
    definitions: Iterable[Definition],
    now: datetime,
    *,
    dry_run: bool = False,
    actor: Actor = SYNC_ACTOR,
    listed: Container[str] | None = None,
) -> SyncReport:
    """Beat's ``beat_schedule`` sync: :func:`apply_definitions` as ``config``, disabling the
    schedules whose entries left it (whose names are not in ``listed``: by default, the
    definitions'). ``now`` (the caller's clock) gives way to the database clock
    (``store.clock``)."""
    return apply_definitions(
        store,
        definitions,
        lambda conn: store.clock.now(conn, now),
        origin=CONFIG_ORIGIN,
        actor=actor,
        dry_run=dry_run,
        disable_missing=True,
        listed=listed,
    )
