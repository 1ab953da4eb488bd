"""The schedule form: plain text fields validated by ``definition_from_form``, nothing else.

Every field is a ``CharField`` (the choice fields only look like menus) so that a bad value gets
the one message every surface gives (``cron='61 * * * *': minute field '61' ...``), shown on the
field it names, rather than a Django message of its own.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms

from celery_dbeat.definitions import FORM_FIELDS, Definition, definition_from_form
from celery_dbeat.errors import ScheduleExists, ValidationError
from celery_dbeat.misfire import MisfirePolicy
from celery_dbeat.overlap import OverlapPolicy
from celery_dbeat.timing.cron import DstFold, DstGap

from .conf import database_alias
from .models import Schedule

__all__ = ["ScheduleForm", "form_field_of"]

KINDS = (("cron", "cron"), ("interval", "interval (every N seconds)"), ("once", "once"))
WIDE = {"class": "vTextField"}
JSON = {"rows": 2, "cols": 60, "class": "vLargeTextField"}


def _choices(default: str, values: list[str]) -> list[tuple[str, str]]:
    return [("", default), *((v, v) for v in values)]


def _text(help_text: str = "", widget: forms.Widget | None = None, **kwargs: Any) -> Any:
    return forms.CharField(
        required=False, help_text=help_text, widget=widget or forms.TextInput(WIDE), **kwargs
    )


def _menu(choices: Any, help_text: str = "", **kwargs: Any) -> Any:
    return _text(help_text, forms.Select(choices=choices), **kwargs)


INSTANT_HELP = "ISO-8601 with an offset, e.g. 2025-01-31T09:00:00+01:00 or ...Z"


def form_field_of(error: ValidationError) -> str | None:
    """The form field a validation error belongs on (``options.priority`` -> ``options``)."""
    name = error.field.split(".")[0].split("[")[0]
    if name == "schedule":
        return "kind"
    return name if name in FORM_FIELDS else None


def _number(value: float | None) -> str:
    """Seconds as typed: ``30`` rather than ``30.0``, and every digit of ``1.23456789``."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _instant(value: datetime | None) -> str:
    return "" if value is None else value.isoformat()


def initial_of(schedule: Schedule) -> dict[str, Any]:
    """The form's values for a stored row; submitted unchanged, they store the same columns."""
    return {
        "name": schedule.name,
        "task": schedule.task,
        "kind": schedule.kind,
        "cron": schedule.cron or "",
        "timezone": schedule.timezone or "",
        "dst_gap": schedule.dst_gap or "",
        "dst_fold": schedule.dst_fold or "",
        "cron_days": schedule.cron_days or "",
        "every": _number(schedule.every),
        "run_at": _instant(schedule.run_at),
        "args": schedule.args,
        "kwargs": schedule.kwargs,
        "options": schedule.options,
        "enabled": schedule.enabled,
        "start_at": _instant(schedule.start_at),
        "end_at": _instant(schedule.end_at),
        "max_runs": "" if schedule.max_runs is None else str(schedule.max_runs),
        "misfire_policy": schedule.misfire_policy or "",
        "misfire_grace": _number(schedule.misfire_grace),
        "catchup_limit": "" if schedule.catchup_limit is None else str(schedule.catchup_limit),
        "jitter": _number(schedule.jitter),
        "overlap_policy": schedule.overlap_policy or "",
        "max_run_time": _number(schedule.max_run_time),
    }


class ScheduleForm(forms.ModelForm):
    name = _text("Unique; the Celery task id of each fire is derived from it.")
    task = _text("The Celery task name, e.g. proj.tasks.report.")
    enabled = forms.BooleanField(required=False, initial=True)
    kind = _menu(KINDS)
    cron = _text("cron: 5 fields, or 6 with seconds last; @hourly-style aliases.")
    timezone = _text(
        "cron: an IANA zone such as Europe/Paris (default UTC).", initial="UTC", label="Time zone"
    )
    cron_days = _menu(
        _choices("any (cron: either day field)", ["all"]),
        "cron: when both day fields are restricted, 'all' fires only on days matching both "
        "(Celery's crontab).",
    )
    dst_gap = _menu(
        _choices("default (cron(8))", [g.value for g in DstGap]),
        "cron: a slot in the spring-forward gap.",
        label="DST gap",
    )
    dst_fold = _menu(
        _choices("default (cron(8))", [f.value for f in DstFold]),
        "cron: a slot in the repeated fall-back hour.",
        label="DST fold",
    )
    every = _text("interval: seconds, or a duration such as 30s, 5m, 1h30m.")
    run_at = _text(f"once: the instant. {INSTANT_HELP}")
    args = _text("A JSON array.", forms.Textarea(JSON), initial="[]")
    kwargs = _text("A JSON object.", forms.Textarea(JSON), initial="{}")
    options = _text(
        "A JSON object of Celery publishing options (queue, priority, expires, ...).",
        forms.Textarea(JSON),
        initial="{}",
    )
    start_at = _text(f"Optional first instant (inclusive). {INSTANT_HELP}")
    end_at = _text(f"Optional last instant (inclusive). {INSTANT_HELP}")
    max_runs = _text("Optional: stop after this many fires.")
    jitter = _text(
        "Optional: each fire is sent up to this long after its slot (e.g. 30s), at an offset "
        "every beat computes alike."
    )
    misfire_policy = _menu(
        _choices("default (dbeat_misfire_policy)", [p.value for p in MisfirePolicy]),
        "What is sent for slots missed while every beat was down.",
    )
    misfire_grace = _text("Optional: missed slots older than this are dropped (e.g. 90m).")
    catchup_limit = _text("Optional: most fires the 'all' policy sends for one outage.")
    overlap_policy = _menu(
        _choices("default (allow)", [p.value for p in OverlapPolicy]),
        "A slot due while the previous run still goes: allow sends it, skip records it as "
        "overlap, buffer_one sends it when that run ends.",
    )
    max_run_time = _text(
        "Optional: an unfinished run older than this (e.g. 2h) counts as lost and no longer "
        "holds the overlap policy back (default dbeat_max_run_time)."
    )

    class Meta:
        model = Schedule
        fields = FORM_FIELDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        instance = kwargs.get("instance")
        if instance is not None and instance.pk is not None:
            kwargs["initial"] = {**initial_of(instance), **(kwargs.get("initial") or {})}
        super().__init__(*args, **kwargs)
        #: The row's name before this edit (``None`` when adding).
        self.original_name: str | None = instance.name if instance is not None else None
        self.definition: Definition | None = None

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean()
        values = {name: data.get(name) for name in FORM_FIELDS}
        try:
            definition = definition_from_form(values)
        except ValidationError as exc:
            self.add_error(form_field_of(exc), str(exc))
            return data
        clash = Schedule.objects.using(database_alias()).filter(name=definition.name)
        if self.instance.pk is not None:
            clash = clash.exclude(pk=self.instance.pk)
        if clash.exists():
            self.add_error("name", str(ScheduleExists(definition.name)))
            return data
        self.definition = definition
        # The model instance Django builds from cleaned_data gets the stored column values (it
        # is never saved by the ORM: the admin writes through celery_dbeat.api.Schedules).
        data.update(definition.columns(), name=definition.name, enabled=definition.enabled)
        return data

    def validate_unique(self) -> None:
        """Done in :meth:`clean`, with celery-dbeat's message."""
