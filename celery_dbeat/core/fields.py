"""The fields of a schedule that people set, each defined once with what every layer needs.

:data:`FIELDS` lists them in the order every form shows them. From it come the column groups
the store compares on an edit (:data:`~celery_dbeat.core.definitions.SPEC_COLUMNS` and the rest),
the plain form the CLI, export and admins exchange (``definition_from_form`` parses each value
by its :class:`Form`), and both admin forms (label, help, choices, the kind a field belongs
to). Adding a field is an entry here, a column in ``store/models.py`` and a migration;
``tests/unit/test_fields.py`` fails until the typed signatures and rows follow.

What beat itself writes (``next_run_at``, ``run_count``, ``last_error``...) is not here: it is
state, read by beat and shown by the surfaces, never typed into a form.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .misfire import MisfirePolicy
from .overlap import OverlapPolicy
from .timing.cron import DstFold, DstGap
from .timing.solar import EVENTS

__all__ = ["BY_NAME", "FIELDS", "KINDS", "KIND_FIELDS", "Field", "Form", "Role", "names"]


class Role(enum.Enum):
    """What a field is to the schedule, which decides what an edit of it does."""

    IDENTITY = "identity"  #: the name: fire history and task ids follow it
    SPEC = "spec"  #: the spec: a change recomputes ``next_run_at`` and restarts an interval's grid
    BOUNDS = "bounds"  #: start, end and jitter: a change recomputes ``next_run_at`` on the grid
    PAYLOAD = "payload"  #: what is sent and the policies: a change keeps ``next_run_at``
    SWITCH = "switch"  #: ``enabled``: paused and resumed, not edited


class Form(enum.Enum):
    """How a field is typed as plain text (a form, a command line, an export)."""

    TEXT = "text"  #: as typed
    CHOICE = "choice"  #: one of :attr:`Field.choices`; blank means "not set"
    JSON = "json"  #: JSON text; blank means :attr:`Field.default`
    INSTANT = "instant"  #: ISO-8601 with an offset
    WHOLE = "whole"  #: a whole number
    NUMBER = "number"  #: a decimal number
    DURATION = "duration"  #: seconds, or ``30s``, ``5m``, ``1h30m``
    FLAG = "flag"  #: true or false; blank means true


@dataclass(frozen=True)
class Field:
    name: str
    role: Role
    form: Form
    label: str
    #: One line for a form, saying what the value is and how to type it.
    help: str
    #: The spec kind the field belongs to; ``None``: every kind.
    kind: str | None = None
    #: What an empty form shows; for text and JSON also what a blank value means.
    default: str = ""
    #: The values of a :attr:`Form.CHOICE` field, and how its blank option is labelled.
    choices: tuple[str, ...] = ()
    blank: str = ""
    #: The typed value that is stored as NULL (``cron_days='any'``).
    null: str | None = None
    #: Refused blank for its kind (the spec checks the rest).
    required: bool = False


#: The spec kinds, with what each is.
KINDS: dict[str, str] = {
    "cron": "a cron expression in a time zone",
    "interval": "every N seconds",
    "once": "one instant",
    "solar": "sunrise, sunset, dawn, dusk or solar noon at a place",
}

INSTANT_HELP = "ISO-8601 with an offset, e.g. 2027-01-31T09:00:00+01:00 or ...Z"

FIELDS: tuple[Field, ...] = (
    Field(
        "name",
        Role.IDENTITY,
        Form.TEXT,
        "Name",
        "Unique; the fire history and the Celery task id of each fire follow it.",
    ),
    Field(
        "task",
        Role.PAYLOAD,
        Form.TEXT,
        "Task",
        "The registered Celery task name, e.g. proj.tasks.report.",
    ),
    Field(
        "kind",
        Role.SPEC,
        Form.CHOICE,
        "Kind",
        "Only the fields of this kind are used: the others are ignored (and hidden).",
        default="cron",
        choices=tuple(KINDS),
    ),
    Field(
        "cron",
        Role.SPEC,
        Form.TEXT,
        "Cron",
        "5 fields (minute hour day month weekday), or 6 with seconds last; @hourly-style aliases.",
        kind="cron",
    ),
    Field(
        "timezone",
        Role.SPEC,
        Form.TEXT,
        "Time zone",
        "The IANA zone the expression is read in, such as Europe/Paris (default UTC).",
        kind="cron",
        default="UTC",
    ),
    Field(
        "dst_gap",
        Role.SPEC,
        Form.CHOICE,
        "DST gap",
        "A slot in the spring-forward gap: fire at its end, shift it, or skip it.",
        kind="cron",
        choices=tuple(g.value for g in DstGap),
        blank="default (gap_end, or skip for wildcard hours)",
    ),
    Field(
        "dst_fold",
        Role.SPEC,
        Form.CHOICE,
        "DST fold",
        "A slot in the repeated fall-back hour: fire at its first, second or both occurrences.",
        kind="cron",
        choices=tuple(f.value for f in DstFold),
        blank="default (first, or both for wildcard hours)",
    ),
    Field(
        "cron_days",
        Role.SPEC,
        Form.CHOICE,
        "Day matching",
        "When both day fields are restricted, 'all' fires only on days matching both "
        "(Celery's crontab).",
        kind="cron",
        choices=("all",),
        blank="any (cron(8): either day field)",
        null="any",
    ),
    Field(
        "every",
        Role.SPEC,
        Form.DURATION,
        "Every",
        "Seconds, or a duration such as 30s, 5m, 1h30m.",
        kind="interval",
        required=True,
    ),
    Field("run_at", Role.SPEC, Form.INSTANT, "Run at", f"The instant. {INSTANT_HELP}", "once"),
    Field(
        "solar_event",
        Role.SPEC,
        Form.CHOICE,
        "Event",
        "Computed as Celery's solar schedule does, to the second; a day without it (polar day "
        "or night) is skipped. Needs the 'solar' extra (ephem).",
        kind="solar",
        default="sunrise",
        choices=tuple(EVENTS),
        blank="(choose an event)",
    ),
    Field(
        "latitude",
        Role.SPEC,
        Form.NUMBER,
        "Latitude",
        "Degrees north of the place, -90 to 90 (Paris: 48.85).",
        kind="solar",
    ),
    Field(
        "longitude",
        Role.SPEC,
        Form.NUMBER,
        "Longitude",
        "Degrees east of the place, -180 to 180 (Paris: 2.35).",
        kind="solar",
    ),
    Field("args", Role.PAYLOAD, Form.JSON, "Args", "A JSON array.", default="[]"),
    Field("kwargs", Role.PAYLOAD, Form.JSON, "Kwargs", "A JSON object.", default="{}"),
    Field(
        "options",
        Role.PAYLOAD,
        Form.JSON,
        "Options",
        "A JSON object of Celery publishing options (queue, exchange, routing_key, priority, "
        "expires, headers, ...).",
        default="{}",
    ),
    Field(
        "enabled",
        Role.SWITCH,
        Form.FLAG,
        "Enabled",
        "Unticked, the schedule is paused: no slot fires.",
        default="true",
    ),
    Field(
        "start_at",
        Role.BOUNDS,
        Form.INSTANT,
        "Start at",
        f"Optional first instant (inclusive). {INSTANT_HELP}",
    ),
    Field(
        "end_at",
        Role.BOUNDS,
        Form.INSTANT,
        "End at",
        f"Optional last instant (inclusive). {INSTANT_HELP}",
    ),
    Field(
        "max_runs",
        Role.PAYLOAD,
        Form.WHOLE,
        "Max runs",
        "Optional: stop after this many fires.",
    ),
    Field(
        "misfire_policy",
        Role.PAYLOAD,
        Form.CHOICE,
        "Misfire policy",
        "What is sent for slots missed while every beat was down.",
        choices=tuple(p.value for p in MisfirePolicy),
        blank="default (dbeat_misfire_policy)",
    ),
    Field(
        "misfire_grace",
        Role.PAYLOAD,
        Form.DURATION,
        "Misfire grace",
        "Optional: missed slots older than this are dropped (e.g. 90m).",
    ),
    Field(
        "catchup_limit",
        Role.PAYLOAD,
        Form.WHOLE,
        "Catch-up limit",
        "Optional: most fires the 'all' policy sends for one outage.",
    ),
    Field(
        "jitter",
        Role.BOUNDS,
        Form.DURATION,
        "Jitter",
        "Optional: each fire is sent up to this long after its slot (e.g. 30s), at an offset "
        "every beat computes alike.",
    ),
    Field(
        "overlap_policy",
        Role.PAYLOAD,
        Form.CHOICE,
        "Overlap policy",
        "A slot due while the previous run still goes: allow sends it, skip records it as "
        "overlap, buffer_one sends it when that run ends.",
        choices=tuple(p.value for p in OverlapPolicy),
        blank="default (allow)",
    ),
    Field(
        "max_run_time",
        Role.PAYLOAD,
        Form.DURATION,
        "Max run time",
        "Optional: an unfinished run older than this (e.g. 2h) counts as lost and no longer "
        "holds the overlap policy back (default dbeat_max_run_time).",
    ),
    Field(
        "calendar",
        Role.PAYLOAD,
        Form.TEXT,
        "Exclusion calendar",
        "Optional: the name of a calendar (dbeat calendar list) whose dates this schedule skips.",
    ),
    Field(
        "pause_after_failures",
        Role.PAYLOAD,
        Form.WHOLE,
        "Pause after failures",
        "Optional: pause the schedule after this many consecutive failed runs (needs the "
        "worker hook); the pause note names the last error.",
    ),
    Field(
        "history_limit",
        Role.PAYLOAD,
        Form.WHOLE,
        "History limit",
        "Optional: keep at most this many fires in the history, besides dbeat_history_retention.",
    ),
)

#: Each field by its name.
BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}

#: The fields of each spec kind, in form order; every other field applies to every kind.
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    kind: tuple(f.name for f in FIELDS if f.kind == kind) for kind in KINDS
}


def names(*roles: Role) -> tuple[str, ...]:
    """The names of the fields with one of ``roles``, in form order."""
    return tuple(f.name for f in FIELDS if f.role in roles)
