"""Beat's ``beat_schedule`` sync: upsert the app's entries by name, disable the rows of entries
no longer listed. Idempotent, safe with several beats starting at once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from ..definitions import Definition
from .models import S
from .reading import chunked, read_rows
from .schedules import CONFIG_ORIGIN, REMOVED_ORIGIN, changed, new_row, retimed

if TYPE_CHECKING:
    from .database import Store

__all__ = ["SyncReport", "sync_config"]


@dataclass
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)
    #: Names already used by a schedule another surface owns; left untouched.
    conflicts: list[str] = field(default_factory=list)


class _Changed(Exception):
    """A row changed under the sync; start over."""


def _sync_once(conn: Connection, definitions: Sequence[Definition], now: datetime) -> SyncReport:
    report = SyncReport()
    names = [d.name for d in definitions]
    existing: dict[str, Row[Any]] = {}
    for chunk in chunked(names):
        rows, _ = read_rows(conn, sa.select(S).where(S.c.name.in_(chunk)))
        existing.update((r.name, r) for r in rows)
    inserts: list[dict[str, Any]] = []
    for d in definitions:
        row = existing.get(d.name)
        if row is None:
            inserts.append(new_row(d, CONFIG_ORIGIN, now))
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
        elif timing_changed or revived or toggled:
            values.update(retimed(d, row, now))
            # A pause made elsewhere survives a timing edit; a finished row may live again.
            paused = not row.enabled and row.finished_at is None and not (toggled or revived)
            values["enabled"] = d.enabled and values["next_run_at"] is not None and not paused
        result = conn.execute(
            sa.update(S).where(S.c.id == row.id, S.c.version == row.version).values(**values)
        )
        if result.rowcount != 1:
            raise _Changed(d.name)
        report.updated.append(d.name)
    if inserts:
        conn.execute(sa.insert(S), inserts)
    listed = set(names)
    configured = conn.execute(sa.select(S.c.name).where(S.c.origin == CONFIG_ORIGIN)).scalars()
    gone = sorted(name for name in configured if name not in listed)
    for chunk in chunked(gone):
        conn.execute(
            sa.update(S)
            .where(S.c.origin == CONFIG_ORIGIN, S.c.name.in_(chunk))
            .values(enabled=False, origin=REMOVED_ORIGIN, updated_at=now, version=S.c.version + 1)
        )
    report.disabled.extend(gone)
    return report


def sync_config(
    store: Store, definitions: Sequence[Definition], now: datetime, *, dry_run: bool = False
) -> SyncReport:
    """Upsert ``beat_schedule`` definitions by name; disable config rows no longer listed.

    Idempotent: an unchanged entry touches nothing; a changed timing spec recomputes
    ``next_run_at`` from now; a changed payload keeps it. Several beats may run this at once.
    ``now`` (the caller's clock) gives way to the database clock (``store.clock``).
    ``dry_run``: the same report, with every write rolled back.
    """
    for attempt in range(3):
        try:
            with store.engine.connect() as conn, conn.begin() as transaction:
                report = _sync_once(conn, definitions, store.clock.now(conn, now))
                if dry_run:
                    transaction.rollback()
                return report
        except (sa.exc.IntegrityError, _Changed):
            if attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
