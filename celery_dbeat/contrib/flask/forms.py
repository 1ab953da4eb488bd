"""The schedule form: one field per :data:`~celery_dbeat.definitions.FORM_FIELDS` entry, all plain
text, so that :func:`~celery_dbeat.definitions.definition_from_form` validates every value with the
same code and messages as the CLI and the Python API. The form itself checks only its CSRF token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from flask_admin.form import SecureForm  # type: ignore[import-untyped]
from wtforms import (  # type: ignore[import-untyped]
    BooleanField,
    SelectField,
    StringField,
    TextAreaField,
)

from ...definitions import FORM_FIELDS, Definition
from ...errors import ValidationError
from ...store.models import Schedule

__all__ = ["ScheduleForm", "field_of", "form_data", "form_values", "write_arguments"]


def _choices(default: str, *values: str) -> list[tuple[str, str]]:
    return [("", default), *((value, value) for value in values)]


# Selects do not check their choices (validate_choice=False): an unknown value must reach
# definition_from_form, whose message names the field and the value like every other surface.
class ScheduleForm(SecureForm):  # type: ignore[misc]
    name = StringField("Name", description="Unique; the fire history and task ids follow it.")
    task = StringField("Task", description="Registered Celery task name, e.g. proj.tasks.report")
    kind = SelectField(
        "Kind",
        choices=[("cron", "cron"), ("interval", "interval"), ("once", "once")],
        default="cron",
        validate_choice=False,
    )
    cron = StringField(
        "Cron",
        description="5 fields (minute hour day month weekday), or 6 with seconds last; "
        "@hourly-style aliases",
    )
    timezone = StringField(
        "Time zone", default="UTC", description="IANA zone the cron expression is evaluated in"
    )
    dst_gap = SelectField(
        "DST gap",
        choices=_choices("default (gap_end)", "gap_end", "shift", "skip"),
        validate_choice=False,
        description="A slot in the spring-forward gap: fire at its end, shift it, or skip it",
    )
    dst_fold = SelectField(
        "DST fold",
        choices=_choices("default (first, or both for wildcard hours)", "first", "second", "both"),
        validate_choice=False,
        description="A slot in the repeated fall-back hour",
    )
    cron_days = SelectField(
        "Day matching",
        choices=_choices("any (cron(8): either day field)", "all"),
        validate_choice=False,
        description="When both day fields are restricted; 'all' is Celery's crontab behaviour",
    )
    every = StringField("Every", description="Seconds, or a duration such as 30s, 5m, 1h30m")
    run_at = StringField(
        "Run at", description="ISO-8601 instant with an offset, e.g. 2027-01-01T09:00:00+01:00"
    )
    args = TextAreaField("Args", default="[]", description="JSON array")
    kwargs = TextAreaField("Kwargs", default="{}", description="JSON object")
    options = TextAreaField(
        "Options",
        default="{}",
        description="JSON object: queue, exchange, routing_key, priority, expires, headers, ...",
    )
    enabled = BooleanField("Enabled", default=True)
    start_at = StringField("Start at", description="ISO-8601 instant; no slot before it")
    end_at = StringField("End at", description="ISO-8601 instant; no slot after it (inclusive)")
    max_runs = StringField("Max runs", description="Whole number; blank for no limit")
    misfire_policy = SelectField(
        "Misfire policy",
        choices=_choices("default (dbeat_misfire_policy)", "skip", "latest", "earliest", "all"),
        validate_choice=False,
        description="What is sent for slots missed while every beat was down",
    )
    misfire_grace = StringField(
        "Misfire grace", description="Duration; missed slots older than this are dropped"
    )
    catchup_limit = StringField(
        "Catch-up limit", description="Most fires the 'all' policy sends for one outage"
    )


def form_data(form: Any) -> dict[str, Any]:
    """The plain values ``definition_from_form`` reads."""
    return {name: form[name].data for name in FORM_FIELDS}


def field_of(error: ValidationError) -> str | None:
    """The form field a validation error belongs to (``options.priority`` -> ``options``)."""
    base = re.split(r"[.\[]", error.field, maxsplit=1)[0]
    if base in FORM_FIELDS:
        return base
    return "kind" if base == "schedule" else None


def _number(value: float | int | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _instant(value: datetime | None) -> str:
    return "" if value is None else value.isoformat()


def form_values(row: Schedule) -> dict[str, Any]:
    """A stored row as the form shows it. Built from the columns, not from a validated
    definition, so that a row beat marked broken can still be opened and fixed.

    Submitting these values unchanged stores the same columns, so a payload-only edit keeps
    ``next_run_at``.
    """
    return {
        "name": row.name,
        "task": row.task,
        "kind": row.kind,
        "cron": row.cron or "",
        "timezone": row.timezone or ("UTC" if row.kind == "cron" else ""),
        "dst_gap": row.dst_gap or "",
        "dst_fold": row.dst_fold or "",
        "cron_days": row.cron_days or "",
        "every": _number(row.every),
        "run_at": _instant(row.run_at),
        "args": row.args,
        "kwargs": row.kwargs,
        "options": row.options,
        "enabled": row.enabled,
        "start_at": _instant(row.start_at),
        "end_at": _instant(row.end_at),
        "max_runs": _number(row.max_runs),
        "misfire_policy": row.misfire_policy or "",
        "misfire_grace": _number(row.misfire_grace),
        "catchup_limit": _number(row.catchup_limit),
    }


def write_arguments(definition: Definition) -> Mapping[str, Any]:
    """Keyword arguments of ``Schedules.add`` / ``Schedules.update`` for a definition (all but
    ``name`` and ``enabled``, which the two calls take differently)."""
    return {
        "task": definition.task,
        "schedule": definition.spec,
        "args": definition.args,
        "kwargs": definition.kwargs,
        "options": definition.options,
        "start_at": definition.start_at,
        "end_at": definition.end_at,
        "max_runs": definition.max_runs,
        "misfire_policy": definition.misfire_policy,
        "misfire_grace": definition.misfire_grace,
        "catchup_limit": definition.catchup_limit,
    }
