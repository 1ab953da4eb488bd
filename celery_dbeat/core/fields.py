"""A schedule's fields that people set, each declared once: its type and what every layer needs.

:class:`ScheduleFields` declares them, and a private ``TypedDict`` the name, task and spec columns:
each value type annotated with its :class:`Field`. :data:`FIELDS` is read from them, in the order
every form shows them. From it come the column groups the store compares on an edit
(:data:`~celery_dbeat.core.definitions.SPEC_COLUMNS` and the rest), the plain form the CLI, export
and admins exchange (``definition_from_form`` parses each value by its :class:`Form`), and both
admin forms. Adding a field is an entry here, a column in ``store/models.py`` and a migration;
``tests/unit/test_fields.py`` fails until ``Definition`` and the rows follow.

What beat itself writes (``next_run_at``, ``run_count``, ``last_error``...) is not here: it is
state, read by beat and shown by the surfaces, never typed into a form.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Annotated, Any, TypedDict, get_type_hints

from .misfire import MisfirePolicy
from .overlap import OverlapPolicy
from .timing.cron import DstFold, DstGap
from .timing.solar import EVENTS

__all__ = [
    "BY_NAME",
    "FIELDS",
    "KINDS",
    "KIND_FIELDS",
    "KIND_GROUPS",
    "ZONED",
    "Field",
    "Form",
    "Role",
    "ScheduleFields",
    "names",
]


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
    role: Role
    form: Form
    #: One line for a form, saying what the value is and how to type it.
    help: str
    #: What a form calls it; blank: its name in words (``max_runs``: "Max runs").
    label: str = ""
    #: The spec kinds the field belongs to; none: every kind.
    kinds: tuple[str, ...] = ()
    #: What an empty form shows; for text and JSON also what a blank value means.
    default: str = ""
    #: The values of a :attr:`Form.CHOICE` field, and how its blank option is labelled.
    choices: tuple[str, ...] = ()
    blank: str = ""
    #: The typed value that is stored as NULL (``cron_days='any'``).
    null: str | None = None
    #: Refused blank for its kind (the spec checks the rest).
    required: bool = False
    #: Its key in the declaration (set as :data:`FIELDS` is read from it).
    name: str = ""


#: The spec kinds, with what each is.
KINDS: dict[str, str] = {
    "cron": "a cron expression in a time zone",
    "rrule": "an RFC 5545 recurrence rule set in a time zone",
    "interval": "every N seconds",
    "once": "one instant",
    "solar": "sunrise, sunset, dawn, dusk or solar noon at a place",
}

#: The kinds read in an IANA zone, with its DST rules.
ZONED = ("cron", "rrule")

INSTANT_HELP = "ISO-8601 with an offset, e.g. 2027-01-31T09:00:00+01:00 or ...Z"


class _OwnArguments(TypedDict):
    """The name, task and spec columns (given as one ``schedule``), typed as stored."""

    name: Annotated[
        str,
        Field(
            Role.IDENTITY,
            Form.TEXT,
            "Unique; the fire history and the Celery task id of each fire follow it.",
        ),
    ]
    task: Annotated[
        str,
        Field(Role.PAYLOAD, Form.TEXT, "The registered Celery task name, e.g. proj.tasks.report."),
    ]
    kind: Annotated[
        str,
        Field(
            Role.SPEC,
            Form.CHOICE,
            "Only the fields of this kind are used: the others are ignored (and hidden).",
            default="cron",
            choices=tuple(KINDS),
        ),
    ]
    cron: Annotated[
        str | None,
        Field(
            Role.SPEC,
            Form.TEXT,
            "5 fields (minute hour day month weekday), or 6 with seconds last; "
            "@hourly-style aliases.",
            kinds=("cron",),
        ),
    ]
    cron_days: Annotated[
        str | None,
        Field(
            Role.SPEC,
            Form.CHOICE,
            "When both day fields are restricted, 'all' fires only on days matching both "
            "(Celery's crontab).",
            label="Day matching",
            kinds=("cron",),
            choices=("all",),
            blank="any (cron(8): either day field)",
            null="any",
        ),
    ]
    rrule: Annotated[
        str | None,
        Field(
            Role.SPEC,
            Form.TEXT,
            "RFC 5545: a rule such as FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=18;BYMINUTE=0, or lines of "
            "DTSTART, RRULE, RDATE and EXDATE.",
            label="RRULE",
            kinds=("rrule",),
            required=True,
        ),
    ]
    timezone: Annotated[
        str | None,
        Field(
            Role.SPEC,
            Form.TEXT,
            "The IANA zone the expression is read in, such as Europe/Paris (default UTC).",
            label="Time zone",
            kinds=ZONED,
            default="UTC",
        ),
    ]
    dst_gap: Annotated[
        str | None,
        Field(
            Role.SPEC,
            Form.CHOICE,
            "A slot in the spring-forward gap: fire at its end, shift it, or skip it.",
            label="DST gap",
            kinds=ZONED,
            choices=tuple(g.value for g in DstGap),
            blank="default (gap_end, or skip for wildcard hours)",
        ),
    ]
    dst_fold: Annotated[
        str | None,
        Field(
            Role.SPEC,
            Form.CHOICE,
            "A slot in the repeated fall-back hour: fire at its first, second or both occurrences.",
            label="DST fold",
            kinds=ZONED,
            choices=tuple(f.value for f in DstFold),
            blank="default (first, or both for wildcard hours)",
        ),
    ]
    every: Annotated[
        float | None,
        Field(
            Role.SPEC,
            Form.DURATION,
            "Seconds, or a duration such as 30s, 5m, 1h30m.",
            kinds=("interval",),
            required=True,
        ),
    ]
    run_at: Annotated[
        datetime | None,
        Field(Role.SPEC, Form.INSTANT, f"The instant. {INSTANT_HELP}", kinds=("once",)),
    ]
    solar_event: Annotated[
        str | None,
        Field(
            Role.SPEC,
            Form.CHOICE,
            "Computed as Celery's solar schedule does, to the second; a day without it (polar day "
            "or night) is skipped. Needs the 'solar' extra (ephem).",
            label="Event",
            kinds=("solar",),
            default="sunrise",
            choices=tuple(EVENTS),
            blank="(choose an event)",
        ),
    ]
    latitude: Annotated[
        float | None,
        Field(
            Role.SPEC,
            Form.NUMBER,
            "Degrees north of the place, -90 to 90 (Paris: 48.85).",
            kinds=("solar",),
        ),
    ]
    longitude: Annotated[
        float | None,
        Field(
            Role.SPEC,
            Form.NUMBER,
            "Degrees east of the place, -180 to 180 (Paris: 2.35).",
            kinds=("solar",),
        ),
    ]


class ScheduleFields(TypedDict, total=False):
    """The keyword arguments of :meth:`Schedules.add <celery_dbeat.api.Schedules.add>` and
    :meth:`Definition.create <celery_dbeat.core.definitions.Definition.create>` besides the name,
    the task and the spec; one left out takes its default (``None``: not set)."""

    args: Annotated[
        Sequence[Any] | str, Field(Role.PAYLOAD, Form.JSON, "A JSON array.", default="[]")
    ]
    kwargs: Annotated[
        Mapping[str, Any] | str | None,
        Field(Role.PAYLOAD, Form.JSON, "A JSON object.", default="{}"),
    ]
    options: Annotated[
        Mapping[str, Any] | str | None,
        Field(
            Role.PAYLOAD,
            Form.JSON,
            "A JSON object of Celery publishing options (queue, exchange, routing_key, priority, "
            "expires, headers, ...).",
            default="{}",
        ),
    ]
    enabled: Annotated[
        bool,
        Field(
            Role.SWITCH,
            Form.FLAG,
            "Unticked, the schedule is paused: no slot fires.",
            default="true",
        ),
    ]
    start_at: Annotated[
        datetime | None,
        Field(Role.BOUNDS, Form.INSTANT, f"Optional first instant (inclusive). {INSTANT_HELP}"),
    ]
    end_at: Annotated[
        datetime | None,
        Field(Role.BOUNDS, Form.INSTANT, f"Optional last instant (inclusive). {INSTANT_HELP}"),
    ]
    max_runs: Annotated[
        int | None, Field(Role.PAYLOAD, Form.WHOLE, "Optional: stop after this many fires.")
    ]
    misfire_policy: Annotated[
        MisfirePolicy | str | None,
        Field(
            Role.PAYLOAD,
            Form.CHOICE,
            "What is sent for slots missed while every beat was down.",
            choices=tuple(p.value for p in MisfirePolicy),
            blank="default (dbeat_misfire_policy)",
        ),
    ]
    misfire_grace: Annotated[
        float | timedelta | str | None,
        Field(
            Role.PAYLOAD,
            Form.DURATION,
            "Optional: missed slots older than this are dropped (e.g. 90m).",
        ),
    ]
    catchup_limit: Annotated[
        int | None,
        Field(
            Role.PAYLOAD,
            Form.WHOLE,
            "Optional: most fires the 'all' policy sends for one outage.",
            label="Catch-up limit",
        ),
    ]
    jitter: Annotated[
        float | timedelta | str | None,
        Field(
            Role.BOUNDS,
            Form.DURATION,
            "Optional: each fire is sent up to this long after its slot (e.g. 30s), at an offset "
            "every beat computes alike.",
        ),
    ]
    overlap_policy: Annotated[
        OverlapPolicy | str | None,
        Field(
            Role.PAYLOAD,
            Form.CHOICE,
            "A slot due while the previous run still goes: allow sends it, skip records it as "
            "overlap, buffer_one sends it when that run ends.",
            choices=tuple(p.value for p in OverlapPolicy),
            blank="default (allow)",
        ),
    ]
    max_run_time: Annotated[
        float | timedelta | str | None,
        Field(
            Role.PAYLOAD,
            Form.DURATION,
            "Optional: an unfinished run older than this (e.g. 2h) counts as lost and no longer "
            "holds the overlap policy back (default dbeat_max_run_time).",
        ),
    ]
    calendar: Annotated[
        str | None,
        Field(
            Role.PAYLOAD,
            Form.TEXT,
            "Optional: the name of a calendar (dbeat calendar list) whose dates this schedule "
            "skips.",
            label="Exclusion calendar",
        ),
    ]
    pause_after_failures: Annotated[
        int | None,
        Field(
            Role.PAYLOAD,
            Form.WHOLE,
            "Optional: pause the schedule after this many consecutive failed runs (needs the "
            "worker hook); the pause note names the last error.",
        ),
    ]
    history_limit: Annotated[
        int | None,
        Field(
            Role.PAYLOAD,
            Form.WHOLE,
            "Optional: keep at most this many fires in the history, besides "
            "dbeat_history_retention.",
        ),
    ]
    # Slot arguments (issue 29) -------------------------------------------------------------
    slot_kwarg: Annotated[
        str | None,
        Field(
            Role.PAYLOAD,
            Form.TEXT,
            "Optional: the keyword argument each fire passes its slot under (ISO 8601 UTC, e.g. "
            "2027-01-31T09:00:00Z); blank: not passed.",
            label="Slot keyword",
        ),
    ]
    previous_slot_kwarg: Annotated[
        str | None,
        Field(
            Role.PAYLOAD,
            Form.TEXT,
            "Optional: the keyword argument each fire passes the schedule's slot before its own "
            "under (null for the first); blank: not passed.",
            label="Previous slot keyword",
        ),
    ]
    # Alerts (celery_dbeat.core.alerts) ------------------------------------------------------
    alert_after_failures: Annotated[
        int | None,
        Field(
            Role.PAYLOAD,
            Form.WHOLE,
            "Optional: alert after this many consecutive failed runs, and once more at the next "
            "success (needs the worker hook).",
        ),
    ]
    alert_deadline: Annotated[
        float | timedelta | str | None,
        Field(
            Role.PAYLOAD,
            Form.DURATION,
            "Optional: alert when a slot's run has not succeeded this long after the slot "
            "(e.g. 15m; needs the worker hook).",
        ),
    ]
    alert_task: Annotated[
        str | None,
        Field(
            Role.PAYLOAD,
            Form.TEXT,
            "Optional: the Celery task alerts are sent to (default dbeat_alert_task).",
        ),
    ]
    alert_webhook: Annotated[
        str | None,
        Field(
            Role.PAYLOAD,
            Form.TEXT,
            "Optional: an http(s) URL alerts are POSTed to as JSON (default dbeat_alert_webhook).",
            label="Alert webhook",
        ),
    ]


#: Every field, in the order every form shows them.
FIELDS: tuple[Field, ...] = tuple(
    replace(field, name=name, label=field.label or name.replace("_", " ").capitalize())
    for declared in (_OwnArguments, ScheduleFields)
    for name, hint in get_type_hints(declared, include_extras=True).items()
    for field in hint.__metadata__
)

#: Each field by its name.
BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}

#: The fields of each spec kind, in form order; every other field applies to every kind.
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    kind: tuple(f.name for f in FIELDS if kind in f.kinds) for kind in KINDS
}

#: The spec fields in form order, grouped by the kinds they belong to (the zone and its DST
#: rules belong to both ``cron`` and ``rrule``): each admin shows a group while its kind is
#: chosen.
KIND_GROUPS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = tuple(
    (kinds, tuple(f.name for f in group))
    for kinds, group in itertools.groupby((f for f in FIELDS if f.kinds), lambda f: f.kinds)
)


def names(*roles: Role) -> tuple[str, ...]:
    """The names of the fields with one of ``roles``, in form order."""
    return tuple(f.name for f in FIELDS if f.role in roles)
