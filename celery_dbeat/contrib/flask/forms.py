"""The schedule form: one field per :data:`~celery_dbeat.definitions.FORM_FIELDS` entry, all plain
text, so that :func:`~celery_dbeat.definitions.definition_from_form` validates every value with the
same code and messages as the CLI and the Python API. The form itself checks only its CSRF token.

The form is built from ``FORM_FIELDS``, in its order: a field the core adds later shows up as a
text box (with its name as label) until it gets a better widget in :data:`_WIDGETS`. The fields of
each spec kind (:data:`KIND_FIELDS`) are grouped in a fieldset labelled with the kind
(:func:`schedule_form_rules`); a small script on the page shows only the chosen kind's, and
without it every group shows, each saying which kind it is for.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from flask_admin.form import SecureForm, rules
from markupsafe import Markup
from wtforms import (
    BooleanField,
    SelectField,
    StringField,
    TextAreaField,
)

from ...definitions import FORM_FIELDS
from ...errors import ValidationError
from ...overlap import OverlapPolicy
from ...store.models import Schedule
from ...timing.solar import EVENTS

__all__ = [
    "KINDS",
    "KIND_FIELDS",
    "ScheduleForm",
    "field_of",
    "form_data",
    "form_values",
    "schedule_form_rules",
]

try:  # WTForms 3.3 deprecates (value, label) tuples; older versions only take those.
    from wtforms.fields.choices import SelectChoice
except ImportError:  # pragma: no cover - WTForms < 3.3
    SelectChoice = None


#: The spec kinds the form offers, with how the kind select labels them.
KINDS: dict[str, str] = {
    "cron": "cron: a cron expression in a time zone",
    "interval": "interval: every N seconds",
    "once": "once: one instant",
    "solar": "solar: sunrise, sunset, dawn, dusk or solar noon at a place",
}
#: The form fields of each spec kind, in form order; the other fields apply to every kind.
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "cron": ("cron", "timezone", "dst_gap", "dst_fold", "cron_days"),
    "interval": ("every",),
    "once": ("run_at",),
    "solar": ("solar_event", "latitude", "longitude"),
}


def _select(label: str, blank: str | None, *values: str | tuple[str, str], **options: Any) -> Any:
    """A select of ``values`` (or ``(value, label)`` pairs); its first option, labelled
    ``blank`` if given, means "not set".

    It does not check its choices (``validate_choice=False``): an unknown value must reach
    ``definition_from_form``, whose message names the field and the value like every surface.
    """
    pairs = ([("", blank)] if blank is not None else []) + [
        (v, v) if isinstance(v, str) else v for v in values
    ]
    choices = pairs if SelectChoice is None else [SelectChoice(v, text) for v, text in pairs]
    return SelectField(label, choices=choices, validate_choice=False, **options)


def _text(label: str, description: str, **options: Any) -> Any:
    return StringField(label, description=description, **options)


#: How each field is shown. Factories, called in FORM_FIELDS order: WTForms orders a form's
#: fields by when they were created.
_WIDGETS: dict[str, Callable[[], Any]] = {
    "name": lambda: _text("Name", "Unique; the fire history and task ids follow it."),
    "task": lambda: _text("Task", "Registered Celery task name, e.g. proj.tasks.report"),
    "kind": lambda: _select("Kind", None, *KINDS.items(), default="cron"),
    "cron": lambda: _text(
        "Cron",
        "5 fields (minute hour day month weekday), or 6 with seconds last; @hourly-style aliases",
    ),
    "timezone": lambda: _text(
        "Time zone", "IANA zone the cron expression is evaluated in", default="UTC"
    ),
    "dst_gap": lambda: _select(
        "DST gap",
        "default (gap_end)",
        "gap_end",
        "shift",
        "skip",
        description="A slot in the spring-forward gap: fire at its end, shift it, or skip it",
    ),
    "dst_fold": lambda: _select(
        "DST fold",
        "default (first, or both for wildcard hours)",
        "first",
        "second",
        "both",
        description="A slot in the repeated fall-back hour",
    ),
    "cron_days": lambda: _select(
        "Day matching",
        "any (cron(8): either day field)",
        "all",
        description="When both day fields are restricted; 'all' is Celery's crontab behaviour",
    ),
    "every": lambda: _text("Every", "Seconds, or a duration such as 30s, 5m, 1h30m"),
    "run_at": lambda: _text(
        "Run at", "ISO-8601 instant with an offset, e.g. 2027-01-01T09:00:00+01:00"
    ),
    "solar_event": lambda: _select(
        "Event",
        "choose an event",
        *EVENTS,
        default="sunrise",
        description="Computed as Celery's solar schedule does; needs the 'solar' extra (ephem)",
    ),
    "latitude": lambda: _text("Latitude", "Degrees north, -90 to 90 (Paris: 48.85)"),
    "longitude": lambda: _text("Longitude", "Degrees east, -180 to 180 (Paris: 2.35)"),
    "args": lambda: TextAreaField("Args", default="[]", description="JSON array"),
    "kwargs": lambda: TextAreaField("Kwargs", default="{}", description="JSON object"),
    "options": lambda: TextAreaField(
        "Options",
        default="{}",
        description="JSON object: queue, exchange, routing_key, priority, expires, headers, ...",
    ),
    "enabled": lambda: BooleanField("Enabled", default=True),
    "start_at": lambda: _text("Start at", "ISO-8601 instant; no slot before it"),
    "end_at": lambda: _text("End at", "ISO-8601 instant; no slot after it (inclusive)"),
    "max_runs": lambda: _text("Max runs", "Whole number; blank for no limit"),
    "misfire_policy": lambda: _select(
        "Misfire policy",
        "default (dbeat_misfire_policy)",
        "skip",
        "latest",
        "earliest",
        "all",
        description="What is sent for slots missed while every beat was down",
    ),
    "misfire_grace": lambda: _text(
        "Misfire grace", "Duration; missed slots older than this are dropped"
    ),
    "catchup_limit": lambda: _text(
        "Catch-up limit", "Most fires the 'all' policy sends for one outage"
    ),
    "jitter": lambda: _text(
        "Jitter",
        "Duration; each fire waits a fixed 0..jitter after its slot, the same on every beat",
    ),
    "overlap_policy": lambda: _select(
        "Overlap policy",
        "default (allow)",
        *(p.value for p in OverlapPolicy),
        description="A slot due while the previous run still goes: allow sends it, skip "
        "records it as overlap, buffer_one sends it when that run ends",
    ),
    "max_run_time": lambda: _text(
        "Max run time",
        "Duration; an unfinished run older than this counts as lost and no longer holds the "
        "overlap policy back (default dbeat_max_run_time)",
    ),
}


def _widget(name: str) -> Any:
    factory = _WIDGETS.get(name)
    return factory() if factory is not None else StringField(name.replace("_", " ").capitalize())


_KIND_OF = {name: kind for kind, names in KIND_FIELDS.items() for name in names}
_FIELDSET = Markup(
    '<fieldset class="dbeat-kind border rounded px-3 pt-1 mb-3" data-dbeat-kind="{}">'
    '<legend class="h6 w-auto px-1 mb-0">For kind <code>{}</code></legend>'
)


class _HiddenField(rules.BaseRule):
    """Keeps a hidden field in the form (Flask-Admin drops the fields no rule names); its
    template renders hidden fields itself."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    @property
    def visible_fields(self) -> list[str]:
        return [self.name]

    def __call__(self, form: Any, form_opts: Any = None, field_args: Any = None) -> str:
        return ""


def schedule_form_rules() -> list[Any]:
    """Flask-Admin form rules: every field in ``FORM_FIELDS`` order, the fields of each kind
    wrapped in a ``<fieldset data-dbeat-kind="...">`` whose legend names the kind."""
    shown: list[Any] = [_HiddenField("csrf_token")]
    current: str | None = None
    for name in FORM_FIELDS:
        kind = _KIND_OF.get(name)
        if kind != current:
            if current is not None:
                shown.append(rules.HTML("</fieldset>"))
            if kind is not None:
                shown.append(rules.HTML(_FIELDSET.format(kind, kind)))
            current = kind
        shown.append(rules.Field(name))
    if current is not None:
        shown.append(rules.HTML("</fieldset>"))
    return shown


#: The schedule form class (a Flask-Admin ``SecureForm``: CSRF-checked).
ScheduleForm: type[Any] = type(
    "ScheduleForm", (SecureForm,), {name: _widget(name) for name in FORM_FIELDS}
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


def _shown(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def form_values(row: Schedule) -> dict[str, Any]:
    """A stored row as the form shows it. Built from the columns, not from a validated
    definition, so that a row beat marked broken can still be opened and fixed.

    Submitting these values unchanged stores the same columns, so a payload-only edit keeps
    ``next_run_at``.
    """
    values = {name: _shown(getattr(row, name, None)) for name in FORM_FIELDS}
    if row.kind == "cron" and not values.get("timezone"):
        values["timezone"] = "UTC"
    return values
