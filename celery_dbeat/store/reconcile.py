"""What applying schedule definitions does to each name, against the stored rows of those names:
decided with no I/O (:mod:`.sync` reads the rows and writes the decisions).

``origin`` is who applies them: ``config``, beat's ``beat_schedule`` sync, or ``api``, a file
import, an importer (:meth:`Schedules.apply <celery_dbeat.api.Schedules.apply>`). Each definition,
against the row of its name, is in this order:

1. ``created`` when there is no row;
2. ``conflicts`` when the row is not the origin's to change: for ``config``, a schedule made
   through the API; for ``api``, one from ``beat_schedule`` whose definition would change (the
   API's :class:`~celery_dbeat.core.errors.ConfigOwned` rule; pausing or resuming it is allowed);
3. ``unchanged`` when the row's definition columns are the definition's
   (:func:`.schedules.changed`), its enabled flag is the one this origin last set (``config``:
   ``config_enabled``, so a pause or a resume made elsewhere stands; ``api``: ``enabled``, except
   on a finished row, which cannot be resumed) and, for ``config``, its entry had not left
   ``beat_schedule`` (``config:removed``, revived);
4. ``updated`` otherwise. A timing change, a revival, a resume or a row in error recomputes
   ``next_run_at`` from now (never before a recorded slot), a payload change keeps it; a pause
   made elsewhere survives a timing change; disabling a schedule records a pause by the origin.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy.engine import Row

from ..core.audit import PAUSE_DETAIL, Action, Actor, changes
from ..core.definitions import Definition
from ..core.origins import API_ORIGIN, CONFIG_ORIGIN, REMOVED_ORIGIN
from ..core.states import PauseSource
from .audit import row_entry
from .schedules import (
    RESUMED,
    changed,
    new_row,
    pause_values,
    retimed,
)

__all__ = ["CONFIG_PAUSE_NOTE", "Decision", "decide"]

#: The note of a pause that ``enabled: False`` in ``beat_schedule`` made.
CONFIG_PAUSE_NOTE = "disabled in beat_schedule (enabled: False)"

#: The note and source of a pause each origin makes.
_PAUSED_BY = {
    CONFIG_ORIGIN: (CONFIG_PAUSE_NOTE, PauseSource.CONFIG),
    API_ORIGIN: (None, PauseSource.PERSON),
}


class Decision(NamedTuple):
    """What applying one definition does: ``action`` (the report's list of its name:
    ``created``, ``updated``, ``unchanged`` or ``conflicts``), and what it writes, a new row or
    an ``(id, version, values)`` update, with its audit entry."""

    name: str
    action: str
    insert: dict[str, Any] | None = None
    update: tuple[int, int, dict[str, Any]] | None = None
    audit: dict[str, Any] | None = None


def decide(
    definitions: Sequence[Definition],
    rows: Sequence[Row[Any]],
    origin: str,
    now: datetime,
    actor: Actor,
) -> list[Decision]:
    """One decision per definition (see the module docstring), by ``origin`` at ``now``;
    ``rows``: the stored rows of the definitions' names."""
    stored: dict[str, Row[Any]] = {r.name: r for r in rows}
    return [_decide(d, stored.get(d.name), origin, now, actor) for d in definitions]


def _decide(
    d: Definition, row: Row[Any] | None, origin: str, now: datetime, actor: Actor
) -> Decision:
    if row is None:
        created = new_row(d, origin, now)
        entry = row_entry(actor, Action.CREATE, now, d.name, created["uid"], changes(None, created))
        return Decision(d.name, "created", created, audit=entry)
    config = origin == CONFIG_ORIGIN
    timing, payload = changed(d, row)
    if not _its_own(row, config, timing or payload):
        return Decision(d.name, "conflicts")
    revived = config and row.origin == REMOVED_ORIGIN
    flag = row.config_enabled if config else row.enabled if row.finished_at is None else d.enabled
    toggled = d.enabled != flag
    if not (timing or payload or toggled or revived):
        return Decision(d.name, "unchanged")
    values = dict(d.columns(), updated_at=now, version=row.version + 1)
    if config:
        values.update(origin=CONFIG_ORIGIN, config_enabled=d.enabled)
    retime = timing or revived or row.last_error is not None or (toggled and d.enabled)
    if retime:  # also when disabling: the old slot must not fire after a resume with catch-up
        values.update(retimed(d, row, now))
    if row.last_error is not None and row.last_slot is None:
        values["last_slot"] = None  # a value that cannot be read (read as NULL) is replaced
    if toggled and not d.enabled:
        values["enabled"] = False
        if row.enabled:
            values.update(pause_values(*_PAUSED_BY[origin], now))
    elif retime:
        # A pause made elsewhere survives a timing edit; a finished row may live again.
        paused = not row.enabled and row.finished_at is None and not (toggled or revived)
        values["enabled"] = d.enabled and values["next_run_at"] is not None and not paused
        if values["enabled"]:
            values.update(RESUMED)
    change = changes(dict(row._mapping), {**row._mapping, **values})
    action = Action.UPDATE
    if not config and set(change) - PAUSE_DETAIL == {"enabled"}:  # as the API records it
        action = Action.RESUME if change["enabled"][1] else Action.PAUSE
    entry = row_entry(actor, action, now, d.name, row.uid, change)
    return Decision(d.name, "updated", update=(row.id, row.version, values), audit=entry)


def _its_own(row: Row[Any], config: bool, edits: bool) -> bool:
    """Whether the origin (``config`` or the API) may write ``row``; ``edits``: its definition
    columns would change."""
    if config:
        return row.origin in (CONFIG_ORIGIN, REMOVED_ORIGIN)
    return row.origin != CONFIG_ORIGIN or not edits
