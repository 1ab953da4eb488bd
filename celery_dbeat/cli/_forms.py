"""Command-line options <-> the plain form of a schedule.

Options are passed as the strings the user typed into :func:`definition_from_form`, the parser
every surface shares, so the CLI rejects exactly what the API and the admin forms reject, with the
same message. Only the command line's own structure (which spec option was given) is checked here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from ..api import ScheduleInfo
from ..core.definitions import (
    CREATE_ARGUMENTS,
    FORM_FIELDS,
    SPEC_COLUMNS,
    Definition,
    definition_from_form,
)
from ..core.fields import ZONED
from ..core.specs import Spec, spec_from_fields
from ._common import iso

__all__ = [
    "definition_of",
    "edit_form",
    "field_options",
    "form_of",
    "schedule_json",
    "spec_of",
    "spec_options",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Spec options: which one was given decides the kind.
KIND_OF_OPTION = {"cron": "cron", "rrule": "rrule", "every": "interval", "at": "once"}
#: Options that only mean something for some spec kinds, with those kinds.
KIND_ONLY = {
    "tz": ZONED,
    "dst_gap": ZONED,
    "dst_fold": ZONED,
    "cron_days": ("cron",),
}
#: Option parameter -> form field, for the options spelt differently from their field.
FIELD_OF_OPTION = {"tz": "timezone", "at": "run_at", "args_json": "args"}
#: Every form field of the spec, cleared when the kind changes.
SPEC_FIELDS = tuple(column for column in SPEC_COLUMNS if column != "kind")
#: Payload and bound options, copied to the form field of the same name.
PLAIN_OPTIONS = (
    "args_json",
    *(a for a in CREATE_ARGUMENTS if a not in ("task", "schedule", "args", "enabled")),
)


_SPEC_OPTIONS = [
    ("--cron", "EXPR", "Cron expression: 5 fields, or 6 with seconds last."),
    (
        "--rrule",
        "RULE",
        "RFC 5545 recurrence: a rule (FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=18), or DTSTART, RRULE, "
        "RDATE and EXDATE lines.",
    ),
    ("--tz", "ZONE", "IANA time zone of the cron expression or rule (default UTC)."),
    ("--dst-gap", "RULE", "A slot in a spring-forward gap: gap_end, shift or skip."),
    ("--dst-fold", "RULE", "A slot in a repeated hour: first, second or both."),
    ("--cron-days", "any|all", "Both day fields set: match either (any) or both (all)."),
    ("--every", "DURATION", "Interval: 30s, 5m, 1h30m or seconds."),
    ("--at", "INSTANT", "Fire once, at this ISO-8601 instant with an offset."),
]
_FIELD_OPTIONS = [
    ("--args", "JSON", "Positional arguments, a JSON array."),
    ("--kwargs", "JSON", "Keyword arguments, a JSON object."),
    ("--options", "JSON", "apply_async options, a JSON object."),
    ("--queue", "NAME", "Shortcut: set the 'queue' option."),
    ("--priority", "N", "Shortcut: set the 'priority' option."),
    ("--start-at", "INSTANT", "No slot before this instant (inclusive)."),
    ("--end-at", "INSTANT", "No slot after this instant (inclusive)."),
    ("--max-runs", "N", "Finish after N fires."),
    ("--misfire-policy", "POLICY", "skip, latest, earliest or all (default dbeat_misfire_policy)."),
    ("--misfire-grace", "DURATION", "Missed slots older than this are dropped, not sent."),
    ("--catchup-limit", "N", "Most fires the 'all' policy sends for one outage."),
    ("--jitter", "DURATION", "Spread each fire over up to this long after its slot."),
    (
        "--overlap-policy",
        "POLICY",
        "A slot due while the previous run still goes: allow (default) sends it, skip records "
        "it as overlap, buffer_one sends it when that run ends.",
    ),
    (
        "--max-run-time",
        "DURATION",
        "An unfinished run older than this counts as lost and no longer holds the overlap "
        "policy back (default dbeat_max_run_time).",
    ),
    (
        "--pause-after-failures",
        "N",
        "Pause after N consecutive failed runs (needs the worker hook).",
    ),
    ("--history-limit", "N", "Keep at most N fires in the history (besides its age bound)."),
    (
        "--calendar",
        "NAME",
        "Skip the dates of this exclusion calendar (dbeat calendar list); '' for none.",
    ),
    # Slot arguments (issue 29)
    (
        "--slot-kwarg",
        "NAME",
        "Pass each fire's slot (ISO 8601 UTC) as this keyword argument; '' for none.",
    ),
    (
        "--previous-slot-kwarg",
        "NAME",
        "Pass the schedule's slot before it as this keyword argument (null for the first); "
        "'' for none.",
    ),
    # Alerts (celery_dbeat.core.alerts)
    (
        "--alert-after-failures",
        "N",
        "Alert after N consecutive failed runs, and again at the next success (worker hook).",
    ),
    (
        "--alert-deadline",
        "DURATION",
        "Alert when a slot's run has not succeeded this long after the slot (worker hook).",
    ),
    ("--alert-task", "NAME", "The Celery task alerts go to (default dbeat_alert_task)."),
    (
        "--alert-webhook",
        "URL",
        "An http(s) URL alerts are POSTed to (default dbeat_alert_webhook).",
    ),
]
#: Python names of options whose flag would shadow a builtin or clash.
_PARAM_NAME = {"--args": "args_json"}


def _add_options(f: F, table: list[tuple[str, str, str]]) -> F:
    for flag, metavar, text in reversed(table):
        names = [flag, _PARAM_NAME[flag]] if flag in _PARAM_NAME else [flag]
        kind = int if flag == "--priority" else str
        f = click.option(*names, type=kind, metavar=metavar, help=text)(f)
    return f


def spec_options(f: F) -> F:
    """``--cron/--every/--at`` and the cron-only options, as strings."""
    return _add_options(f, _SPEC_OPTIONS)


def field_options(f: F) -> F:
    """Payload, bounds, misfire and overlap options, as strings. An empty string clears a field."""
    return _add_options(f, _FIELD_OPTIONS)


def edit_form(base: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` (a form) with the options the user gave (``None`` = not given) applied."""
    form = dict(base)
    kinds = [option for option in KIND_OF_OPTION if given.get(option) is not None]
    if len(kinds) > 1:
        raise click.UsageError(
            "give one of --cron, --rrule, --every or --at, not "
            + " and ".join(f"--{k}" for k in kinds)
        )
    if kinds:
        kind = KIND_OF_OPTION[kinds[0]]
        if kind != form.get("kind"):
            form.update(dict.fromkeys(SPEC_FIELDS), kind=kind)
    for option, only in KIND_ONLY.items():
        if given.get(option) is not None and form.get("kind") not in only:
            flag = "--" + option.replace("_", "-")
            which = " or ".join(only)
            give = " or ".join(f"--{k}" for k in only)
            raise click.UsageError(f"{flag} applies to {which} schedules only (give {give})")
    for option in (*KIND_OF_OPTION, *KIND_ONLY, *PLAIN_OPTIONS):
        value = given.get(option)
        if value is not None:
            form[FIELD_OF_OPTION.get(option, option)] = value
    return form


def build(form: Mapping[str, Any], *, queue: str | None, priority: int | None) -> Definition:
    """Parse ``form`` through the shared parser; ``--queue``/``--priority`` go into options."""
    definition = definition_from_form(form)
    if queue is None and priority is None:
        return definition
    options = dict(definition.options)
    if queue is not None:
        options["queue"] = queue
    if priority is not None:
        options["priority"] = priority
    return definition_from_form({**form, "options": options})


def form_of(info: ScheduleInfo) -> dict[str, Any]:
    """The plain form of a stored schedule, as stored: not validated, so a bad stored value is
    reported (naming its field) only when the form is parsed."""
    spec: dict[str, Any] = info.schedule.fields() if info.schedule is not None else {}
    return {
        key: spec.get(key) if key in SPEC_COLUMNS else getattr(info, key, None)
        for key in FORM_FIELDS
    }


def definition_of(info: ScheduleInfo) -> Definition:
    return definition_from_form(form_of(info))


def spec_of(definition: Definition) -> Spec:
    """The API's spec object for a validated definition."""
    spec = spec_from_fields(definition.spec)
    assert spec is not None, definition.spec
    return spec


def schedule_json(info: ScheduleInfo) -> dict[str, Any]:
    """A stored schedule for ``--json``: the form fields, then its state. Instants in UTC."""
    instants = ("run_at", "start_at", "end_at")
    data = {key: iso(v) if key in instants else v for key, v in form_of(info).items()}
    data.update(
        uid=info.uid,
        state=info.state,
        origin=info.origin,
        next_run_at=iso(info.next_run_at),
        last_slot=iso(info.last_slot),
        run_count=info.run_count,
        consecutive_failures=info.consecutive_failures,
        last_error=info.last_error,
        pause_note=info.pause_note,
        paused_at=iso(info.paused_at),
        pause_source=info.pause_source,
        pruned_until=iso(info.pruned_until),
        finished_at=iso(info.finished_at),
        created_at=iso(info.created_at),
        updated_at=iso(info.updated_at),
        alert_kind=info.alert_kind,
        alert_episode=iso(info.alert_episode),
    )
    return data


def spec_text(info: ScheduleInfo) -> str:
    """One line: ``cron '30 2 * * *' America/New_York``, ``every 1h30m``, ``once <instant>``,
    ``solar sunset at 48.85, 2.35``."""
    return info.schedule.text() if info.schedule is not None else "(invalid spec)"
