"""The schedule form: plain text fields validated by ``definition_from_form``, nothing else.

Every field is a ``CharField`` (the choice fields only look like menus) so that a bad value gets
the one message every surface gives (``cron='61 * * * *': minute field '61' ...``), shown on the
field it names, rather than a Django message of its own. The model's own validation never runs:
it would judge the typed text (``90s``) as the stored column (a float) and report a valid value.

The shared validation stops at the first bad field; :func:`form_errors` then checks each other
field on its own against a valid schedule, so that every bad field shows its error and no good
field shows one. Only the fields of the chosen kind are read (and shown, with JavaScript on).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms
from django.utils.html import escapejs, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from celery_dbeat.definitions import FORM_FIELDS, Definition, definition_from_form
from celery_dbeat.errors import ScheduleExists, ValidationError
from celery_dbeat.misfire import MisfirePolicy
from celery_dbeat.overlap import OverlapPolicy
from celery_dbeat.timing.cron import DstFold, DstGap
from celery_dbeat.timing.solar import EVENTS

from .conf import database_alias
from .models import Schedule
from .tasks import suggested_task_names

__all__ = ["KIND_FIELDS", "ScheduleForm", "form_errors", "form_field_of"]

KINDS = (
    ("cron", "cron"),
    ("interval", "interval (every N seconds)"),
    ("once", "once"),
    ("solar", "solar (sunrise, sunset, dawn, dusk, noon)"),
)
#: The fields each kind reads; the others are ignored (and hidden).
KIND_FIELDS = {
    "cron": ("cron", "timezone", "cron_days", "dst_gap", "dst_fold"),
    "interval": ("every",),
    "once": ("run_at",),
    "solar": ("solar_event", "latitude", "longitude"),
}
_SPEC_FIELDS = {"kind", *(name for names in KIND_FIELDS.values() for name in names)}
#: Fields the shared validation also checks together.
_BOUNDS = ("start_at", "end_at")
#: A valid schedule each other field is checked against, on its own.
_PROBE = {"name": "probe", "task": "probe", "kind": "interval", "every": "60"}
#: Valid values of each kind's required fields, to check one of its fields on its own.
_NEUTRAL: dict[str, dict[str, str]] = {
    "cron": {"cron": "* * * * *"},
    "interval": {"every": "60"},
    "once": {"run_at": "2000-01-01T00:00:00+00:00"},
    "solar": {"solar_event": "sunrise", "latitude": "0", "longitude": "0"},
}
WIDE = {"class": "vTextField"}
JSON = {"rows": 2, "cols": 60, "class": "vLargeTextField"}

#: Shows only the fieldset of the chosen kind (class ``dbeat-kind-<kind>``). Without JavaScript
#: every fieldset shows, its heading naming its kind; the others' values are ignored.
KIND_SCRIPT = """<script>
(function () {
  var kind = document.getElementById("%s");
  if (!kind) { return; }
  function show() {
    var fieldsets = document.querySelectorAll("fieldset.dbeat-kind");
    Array.prototype.forEach.call(fieldsets, function (fieldset) {
      var chosen = fieldset.classList.contains("dbeat-kind-" + kind.value);
      fieldset.style.display = chosen ? "" : "none";
    });
  }
  kind.addEventListener("change", show);
  document.addEventListener("DOMContentLoaded", show);
})();
</script>"""


class KindSelect(forms.Select):
    """The kind menu, followed by :data:`KIND_SCRIPT`."""

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        html = super().render(name, value, attrs, renderer)
        element = (attrs or {}).get("id") or f"id_{name}"
        script = KIND_SCRIPT % escapejs(element)
        return mark_safe(html + script)  # the id is escaped for the script


class TaskInput(forms.TextInput):
    """A text input suggesting the project's registered task names (an HTML ``datalist``);
    any other name may still be typed."""

    def __init__(self) -> None:
        super().__init__(WIDE)

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        names = suggested_task_names()
        if not names:
            return SafeString(super().render(name, value, attrs, renderer))
        listed = f"{(attrs or {}).get('id') or f'id_{name}'}_names"
        html = super().render(name, value, {**(attrs or {}), "list": listed}, renderer)
        options = format_html_join("", '<option value="{}"></option>', ((n,) for n in names))
        datalist: SafeString = format_html('<datalist id="{}">{}</datalist>', listed, options)
        return SafeString(html + datalist)


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


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def form_errors(values: dict[str, Any]) -> tuple[Definition | None, dict[str | None, str]]:
    """The definition of the form's ``values``, or the error of each bad field.

    The first error is the shared validation's, on the field it names (it may be about two
    fields, e.g. ``end_at`` before ``start_at``). Past it the others are found by checking the
    chosen kind's fields together, the bounds together, then each field that has a value on its
    own, each time with valid values for the rest: an error is only ever shown on a field whose
    own value is bad, or on the one of a pair that the shared validation names.
    """
    try:
        return definition_from_form(values), {}
    except ValidationError as exc:
        errors: dict[str | None, str] = {form_field_of(exc): str(exc)}
    kind = str(values.get("kind"))
    own = KIND_FIELDS.get(kind, ())
    # (values checked, the fields whose errors count)
    probes: list[tuple[dict[str, Any], set[str]]] = [
        ({name: values.get(name) for name in ("kind", *own)}, {"kind", *own}),
        ({name: values.get(name) for name in _BOUNDS}, set(_BOUNDS)),
    ]
    for name in own:
        if not _blank(values.get(name)):
            probes.append(({"kind": kind, **_NEUTRAL[kind], name: values[name]}, {name}))
    for name, value in values.items():
        if name not in _SPEC_FIELDS and not _blank(value):
            probes.append(({name: value}, {name}))
    for probe, tested in probes:
        try:
            definition_from_form({**_PROBE, **probe})
        except ValidationError as exc:
            field = form_field_of(exc)
            if field in tested:
                errors.setdefault(field, str(exc))
    return None, errors


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
        "solar_event": schedule.solar_event or "",
        "latitude": _number(schedule.latitude),
        "longitude": _number(schedule.longitude),
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
    task = _text(
        "The Celery task name, e.g. proj.tasks.report (the names your Celery app registers are "
        "suggested as you type; any other is allowed).",
        TaskInput(),
    )
    enabled = forms.BooleanField(required=False, initial=True)
    kind = _text(
        "Only the fields of this kind are used: the others are ignored (and hidden).",
        KindSelect(choices=KINDS),
    )
    cron = _text("5 fields, or 6 with seconds last; @hourly-style aliases.")
    timezone = _text(
        "An IANA zone such as Europe/Paris (default UTC).", initial="UTC", label="Time zone"
    )
    cron_days = _menu(
        _choices("any (either day field)", ["all"]),
        "When both day fields are restricted, 'all' fires only on days matching both "
        "(Celery's crontab).",
    )
    dst_gap = _menu(
        _choices("default (cron(8))", [g.value for g in DstGap]),
        "A slot in the spring-forward gap.",
        label="DST gap",
    )
    dst_fold = _menu(
        _choices("default (cron(8))", [f.value for f in DstFold]),
        "A slot in the repeated fall-back hour.",
        label="DST fold",
    )
    every = _text("Seconds, or a duration such as 30s, 5m, 1h30m.")
    run_at = _text(f"The instant. {INSTANT_HELP}")
    solar_event = _menu(
        _choices("(choose an event)", list(EVENTS)),
        "Computed as Celery's solar schedule does, to the second; a day without it (polar "
        "day or night) is skipped.",
        label="Event",
    )
    latitude = _text("Degrees north of the place, -90 to 90 (e.g. 48.85).")
    longitude = _text("Degrees east of the place, -180 to 180 (e.g. 2.35).")
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
        definition, errors = form_errors({name: data.get(name) for name in FORM_FIELDS})
        for field, message in errors.items():
            self.add_error(field, message)
        if definition is None:
            return data
        clash = Schedule.objects.using(database_alias()).filter(name=definition.name)
        if self.instance.pk is not None:
            clash = clash.exclude(pk=self.instance.pk)
        if clash.exists():
            self.add_error("name", str(ScheduleExists(definition.name)))
            return data
        self.definition = definition
        return data

    def _post_clean(self) -> None:
        """No model validation (see the module's docstring), nor Django's uniqueness check
        (:meth:`clean` gives celery-dbeat's message): the admin writes the row through
        celery_dbeat.api.Schedules, never from this form's instance."""
