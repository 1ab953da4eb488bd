"""Beat's ``beat_schedule`` sync: upsert the app's entries by name, disable the rows of entries
no longer listed. Idempotent, safe with several beats starting at once.

The work is split into chunks of :data:`CHUNK` entries, and each chunk into a read, the work of
comparing and computing (outside any transaction), and a write transaction that holds nothing
but its statements, each update a compare-and-set on the row's version: 100,000 entries in one
transaction kept it open (and, between its statements, idle while Python computed) for longer
than PostgreSQL's ``idle_in_transaction_session_timeout`` on a slow host, which ended it, and
beat started the whole sync over, for ever. Each entry stands alone (created, updated or left
by name), so a sync cut short by a crash leaves every entry it reached synced, and the next one
finishes; a chunk another beat's sync wrote first is read and computed again.

An entry the database refuses (a constraint, a value it will not take) costs that entry, not the
sync: after two tries (a refusal can be another beat's insert of the same name), the chunk is
written in savepoints halved down to the refused entries (:func:`.isolation.isolated`), which
the report lists with the database's message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from ..core.audit import Action, Actor, changes
from ..core.definitions import Definition
from ..core.states import PauseSource
from .audit import SYNC_ACTOR, record, row_entry
from .failures import driver_message
from .isolation import isolated
from .models import S
from .reading import chunked, read_rows
from .schedules import (
    CONFIG_ORIGIN,
    REMOVED_ORIGIN,
    RESUMED,
    changed,
    new_row,
    pause_values,
    retimed,
)

if TYPE_CHECKING:
    from .database import Store

__all__ = ["CONFIG_PAUSE_NOTE", "SyncReport", "sync_config"]

#: The note of a pause that ``enabled: False`` in ``beat_schedule`` made.
CONFIG_PAUSE_NOTE = "disabled in beat_schedule (enabled: False)"


@dataclass
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)
    #: Names already used by a schedule another surface owns; left untouched.
    conflicts: list[str] = field(default_factory=list)
    #: Entries the database refused to write, with its message; left as they were.
    refused: dict[str, str] = field(default_factory=dict)

    def merge(self, other: SyncReport) -> None:
        for name in ("created", "updated", "unchanged", "disabled", "conflicts"):
            getattr(self, name).extend(getattr(other, name))
        self.refused.update(other.refused)


class _Changed(Exception):
    """A row changed under the sync; start over."""


#: Entries synced per write transaction.
CHUNK = 500


@dataclass
class _Writes:
    """What the sync writes of one entry (or, merged, of several): new rows, ``(id, version,
    values)`` updates, and their audit entries (by ``actor``, surface ``sync``)."""

    name: str = ""
    inserts: list[dict[str, Any]] = field(default_factory=list)
    updates: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)
    audit: list[dict[str, Any]] = field(default_factory=list)


def _merged(writes: Sequence[_Writes]) -> _Writes:
    """Several entries' writes as one (one statement for all their inserts)."""
    return _Writes(
        inserts=[row for w in writes for row in w.inserts],
        updates=[update for w in writes for update in w.updates],
        audit=[entry for w in writes for entry in w.audit],
    )


def _compare(
    definitions: Sequence[Definition],
    rows: Sequence[Row[Any]],
    now: datetime,
    report: SyncReport,
    actor: Actor,
) -> list[_Writes]:
    """The writes that bring ``rows`` (the stored rows of ``definitions``' names) to
    ``definitions``, one per entry that changes, computed outside any transaction."""
    existing: dict[str, Row[Any]] = {r.name: r for r in rows}
    entries: list[_Writes] = []
    for d in definitions:
        row = existing.get(d.name)
        writes = _Writes(d.name)
        if row is None:
            created = new_row(d, CONFIG_ORIGIN, now)
            writes.inserts.append(created)
            writes.audit.append(
                row_entry(actor, Action.CREATE, now, d.name, created["uid"], changes(None, created))
            )
            entries.append(writes)
            report.created.append(d.name)
            continue
        if row.origin not in (CONFIG_ORIGIN, REMOVED_ORIGIN):
            report.conflicts.append(d.name)
            continue
        timing_changed, payload_changed = changed(d, row)
        # The config's own enabled flag changed: apply it (a pause made elsewhere, with the
        # config unchanged, is left alone). Enabling recomputes from now: nothing fires for the
        # time it was off.
        toggled = d.enabled != row.config_enabled
        revived = row.origin == REMOVED_ORIGIN
        if not (timing_changed or payload_changed or revived or toggled):
            report.unchanged.append(d.name)
            continue
        values = dict(
            d.columns(),
            origin=CONFIG_ORIGIN,
            config_enabled=d.enabled,
            updated_at=now,
            version=row.version + 1,
        )
        if toggled and not d.enabled:
            values["enabled"] = False
            if row.enabled:
                values.update(pause_values(CONFIG_PAUSE_NOTE, PauseSource.CONFIG, now))
        elif timing_changed or revived or toggled:
            values.update(retimed(d, row, now))
            # A pause made elsewhere survives a timing edit; a finished row may live again.
            paused = not row.enabled and row.finished_at is None and not (toggled or revived)
            values["enabled"] = d.enabled and values["next_run_at"] is not None and not paused
            if values["enabled"]:
                values.update(RESUMED)
        writes.updates.append((row.id, row.version, values))
        change = changes(dict(row._mapping), {**row._mapping, **values})
        writes.audit.append(row_entry(actor, Action.UPDATE, now, d.name, row.uid, change))
        entries.append(writes)
        report.updated.append(d.name)
    return entries


def _write(conn: Connection, writes: _Writes) -> None:
    for row_id, version, values in writes.updates:
        result = conn.execute(
            sa.update(S).where(S.c.id == row_id, S.c.version == version).values(**values)
        )
        if result.rowcount != 1:
            raise _Changed(row_id)
    if writes.inserts:
        conn.execute(sa.insert(S), writes.inserts)
    record(conn, writes.audit)


def _sync_chunk(
    store: Store, definitions: Sequence[Definition], now: datetime, dry_run: bool, actor: Actor
) -> SyncReport:
    names = [d.name for d in definitions]
    for attempt in range(3):
        report = SyncReport()
        with store.engine.connect() as conn:
            at = store.clock.now(conn, now)
            rows, _ = read_rows(conn, sa.select(S).where(S.c.name.in_(names)))
        entries = _compare(definitions, rows, at, report, actor)
        if dry_run:
            return report
        try:
            with store.engine.begin() as conn:
                if attempt < 2:
                    _write(conn, _merged(entries))
                else:
                    _, refused = isolated(conn, entries, lambda part: _write(conn, _merged(part)))
                    _refused(report, refused)
            return report
        except (sa.exc.IntegrityError, _Changed):
            # Another beat starting at the same time synced some of these entries first.
            if attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _refused(report: SyncReport, refused: Sequence[tuple[_Writes, sa.exc.StatementError]]) -> None:
    """Take the entries the database refused out of the report's lists, into ``refused``."""
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
    conn.execute(
        sa.update(S)
        .where(S.c.id.in_([r.id for r in rows]))
        .values(version=S.c.version + 1, **values)
    )
    record(
        conn,
        [
            row_entry(
                actor,
                Action.DISABLE,
                at,
                r.name,
                r.uid,
                changes(dict(r._mapping), {**r._mapping, **values}),
            )
            for r in rows
        ],
    )


def sync_config(
    store: Store,
    definitions: Sequence[Definition],
    now: datetime,
    *,
    dry_run: bool = False,
    actor: Actor = SYNC_ACTOR,
) -> SyncReport:
    """Upsert ``beat_schedule`` definitions by name; disable config rows no longer listed.

    Idempotent: an unchanged entry touches nothing; a changed timing spec recomputes
    ``next_run_at`` from now; a changed payload keeps it. Several beats may run this at once.
    ``now`` (the caller's clock) gives way to the database clock (``store.clock``). One
    write transaction per :data:`CHUNK` entries (see the module docstring).
    ``dry_run``: the same report, writing nothing. ``actor``: who the audit trail records
    (beat's own sync: ``beat_schedule``). An entry the database refuses is left as it was and
    listed in the report's ``refused``.
    """
    report = SyncReport()
    for entries in chunked(definitions, CHUNK):
        report.merge(_sync_chunk(store, entries, now, dry_run, actor))
    listed = {d.name for d in definitions}
    with store.engine.connect() as conn:
        configured = conn.execute(sa.select(S.c.name).where(S.c.origin == CONFIG_ORIGIN))
        gone = sorted(name for name in configured.scalars() if name not in listed)
    if not dry_run:
        for names in chunked(gone, CHUNK):
            with store.engine.begin() as conn:
                at = store.clock.now(conn, now)
                _disable(conn, names, at, actor)
    report.disabled.extend(gone)
    return report
