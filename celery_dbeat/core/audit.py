"""The audit trail, the pure part: who edits (:class:`Actor`, from which surface) and what an edit
changed (:func:`changes`: old -> new per field, bounded in size; :func:`calendar_changes` for an
exclusion calendar).

The diff runs over every column of a schedule's row but the bookkeeping ones
(:data:`NOT_AUDITED`: identity, version, what beat computes and records), so a column added
later is audited without a change here. Values are made JSON (instants as ISO-8601 UTC, the
JSON columns decoded) and each is cut at :data:`MAX_VALUE` characters, so one entry stays small
whatever a schedule holds.

A calendar's entries share the trail with the schedules': their action is one of
:data:`CALENDAR_ACTIONS` (``calendar-create``, ``calendar-update``, ``calendar-remove``), which
no schedule's entry has, and the entry names the calendar where a schedule's names the schedule
(a calendar has no identity beyond its name, which never changes).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .calendars import Calendar
from .errors import ValidationError, one_of
from .fields import FIELDS, Form
from .formats import iso
from .text import refuse_control_characters

__all__ = [
    "CALENDAR_ACTIONS",
    "MAX_ACTOR",
    "MAX_VALUE",
    "NOT_AUDITED",
    "PAUSE_DETAIL",
    "Action",
    "Actor",
    "Surface",
    "bounded",
    "calendar_changes",
    "change_text",
    "changes",
    "decoded_changes",
    "subject",
]

#: Longest actor name stored; a longer one is refused.
MAX_ACTOR = 255
#: Longest value kept in an entry, in characters of its JSON; a longer one is cut and says so.
MAX_VALUE = 1000


class Surface(enum.Enum):
    """Where an edit came from."""

    API = "api"
    CLI = "cli"
    FLASK_ADMIN = "flask-admin"
    DJANGO_ADMIN = "django-admin"
    IMPORT = "import"
    SYNC = "sync"
    BEAT = "beat"
    #: The worker hook (:mod:`celery_dbeat.beat.worker`): its pause after failures.
    WORKER = "worker"


class Action(enum.Enum):
    """What an entry records."""

    CREATE = "create"
    UPDATE = "update"
    RENAME = "rename"
    PAUSE = "pause"
    RESUME = "resume"
    REMOVE = "remove"
    RUN_NOW = "run_now"
    BACKFILL = "backfill"
    #: The ``beat_schedule`` sync disabling the row of an entry no longer listed.
    DISABLE = "disable"
    #: The edits of an exclusion calendar (an import is a create or an update from the
    #: ``import`` surface, as for schedules).
    CALENDAR_CREATE = "calendar-create"
    CALENDAR_UPDATE = "calendar-update"
    CALENDAR_REMOVE = "calendar-remove"
    #: An alert raised (an episode's start or end, :mod:`celery_dbeat.core.alerts`) by the
    #: worker hook or a beat.
    ALERT = "alert"


#: The actions of a calendar's entries; every other action is a schedule's.
CALENDAR_ACTIONS = frozenset(
    a.value for a in (Action.CALENDAR_CREATE, Action.CALENDAR_UPDATE, Action.CALENDAR_REMOVE)
)


@dataclass(frozen=True)
class Actor:
    """Who edits, and through which surface (a :class:`Surface` value). The name is non-empty
    text of at most :data:`MAX_ACTOR` characters without control characters."""

    name: str
    surface: str = Surface.API.value

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValidationError("actor", self.name, "must be a non-empty string")
        if len(self.name) > MAX_ACTOR:
            raise ValidationError(
                "actor", self.name, f"is longer than {MAX_ACTOR} characters ({len(self.name)})"
            )
        refuse_control_characters("actor", self.name)  # `dbeat log` and the admins show it
        one_of("surface", self.surface, Surface)


#: Columns whose change is not an edit: the row's identity and version, and what beat computes
#: or records (next slot, last slot, run count, error, finish, what was pruned, failures).
NOT_AUDITED = frozenset(
    {
        "id",
        "uid",
        "version",
        "created_at",
        "updated_at",
        "next_run_at",
        "due_at",
        "anchor_at",
        "last_slot",
        "run_count",
        "last_error",
        "finished_at",
        "config_enabled",
        # What the prunes and the worker hook keep: no edit of anyone's.
        "pruned_until",
        "consecutive_failures",
        # The alert episode: the alert's own entry records it.
        "alert_kind",
        "alert_episode",
        # When a pause happened is the entry's own time.
        "paused_at",
    }
)
#: What a pause or a resume changes besides ``enabled``: why, and by which path.
PAUSE_DETAIL = frozenset({"pause_note", "pause_source"})

_JSON_COLUMNS = frozenset(f.name for f in FIELDS if f.form is Form.JSON)


def _plain(column: str, value: Any) -> Any:
    """``value`` as JSON data: instants as ISO-8601 UTC, JSON columns decoded."""
    if isinstance(value, datetime):
        return iso(value)
    if column in _JSON_COLUMNS and isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value  # stored as text that is not JSON: kept as text
    return value


def bounded(value: Any) -> Any:
    """``value``, or when its JSON is longer than :data:`MAX_VALUE` characters, the start of that
    JSON followed by how long it was."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= MAX_VALUE:
        return value
    return f"{text[:MAX_VALUE]}… (cut: {len(text)} characters)"


def changes(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> dict[str, list[Any]]:
    """``{column: [old, new]}`` for each audited column that differs between two versions of a
    row (``None`` for a row that did not exist: a creation, a removal), in column order; each
    value JSON data, bounded (:func:`bounded`)."""
    columns = [*(after or {}), *(c for c in (before or {}) if c not in (after or {}))]
    found: dict[str, list[Any]] = {}
    for column in columns:
        if column in NOT_AUDITED:
            continue
        old = _plain(column, (before or {}).get(column))
        new = _plain(column, (after or {}).get(column))
        if old != new:
            found[column] = [bounded(old), bounded(new)]
    return found


def decoded_changes(text: str) -> dict[str, list[Any]]:
    """An entry's ``changes`` column (``{field: [old, new]}`` as JSON) as data; text that is not
    that JSON (a row written by hand) as the one change ``changes: [None, text]``."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {"changes": [None, text]}
    return value if isinstance(value, dict) else {"changes": [None, value]}


def change_text(changed: Mapping[str, Sequence[Any]]) -> str:
    """``field: old -> new`` for each field, ``; ``-separated (``-`` for none): an entry's changes
    as every surface shows them (``dbeat log``, both admins)."""

    def shown(value: Any) -> str:
        return "-" if value is None else str(value)

    return "; ".join(
        f"{field}: {shown(pair[0])} -> {shown(pair[1])}"
        if isinstance(pair, (list, tuple)) and len(pair) == 2
        else f"{field}: {shown(pair)}"
        for field, pair in changed.items()
    )


def subject(action: str, name: str | None) -> str:
    """What an entry is about, as the admins show it: ``calendar NAME`` for a calendar's, the
    schedule's name for a schedule's."""
    shown = name or "-"
    return f"calendar {shown}" if action in CALENDAR_ACTIONS else shown


def _calendar_fields(calendar: Calendar | None) -> dict[str, Any]:
    if calendar is None:
        return {}
    return {
        "name": calendar.name,
        "timezone": calendar.timezone,
        "description": calendar.description or None,
        "dates": calendar.dates,
    }


def calendar_changes(before: Calendar | None, after: Calendar | None) -> dict[str, list[Any]]:
    """``{field: [old, new]}`` for each field of a calendar that differs between two versions
    (``None`` for one that did not exist). On an update, ``dates`` lists only the entries that
    differ: those no longer there -> those new (``2026-12-25`` -> ``2026-12-25..2026-12-26``
    when a day is added beside it), so an edit of a long calendar stays readable; a creation and
    a removal list them all. Each value bounded (:func:`bounded`)."""
    old, new = _calendar_fields(before), _calendar_fields(after)
    found: dict[str, list[Any]] = {}
    for name in ("name", "timezone", "description", "dates"):
        was, now = old.get(name), new.get(name)
        if name == "dates" and was is not None and now is not None:
            was, now = [d for d in was if d not in now], [d for d in now if d not in was]
            if not was and not now:
                continue
        if was != now:
            found[name] = [bounded(was), bounded(now)]
    return found
