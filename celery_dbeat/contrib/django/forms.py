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

from typing import Any

from django import forms
from django.utils.html import escapejs, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from celery_dbeat.core.backfill import MAX_BACKFILL
from celery_dbeat.core.calendars import unknown_calendar
from celery_dbeat.core.definitions import (
    FORM_FIELDS,
    SPEC_COLUMNS,
    Definition,
    definition_from_form,
    form_field_of,
    form_text,
)
from celery_dbeat.core.errors import (
    ConfigOwned,
    ScheduleExists,
    ScheduleNotFound,
    ValidationError,
)
from celery_dbeat.core.fields import FIELDS, KIND_FIELDS, KINDS, Field, Form
from celery_dbeat.core.formats import parse_instant

from .conf import database_alias, schedules
from .models import Calendar, Schedule
from .tasks import check_slot_parameters, suggested_task_names

__all__ = ["BackfillForm", "ScheduleForm", "ScheduleFormBase", "form_errors"]

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
    "rrule": {"rrule": "FREQ=DAILY"},
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
        if name not in SPEC_COLUMNS and not _blank(value):
            probes.append(({name: value}, {name}))
    for probe, tested in probes:
        try:
            definition_from_form({**_PROBE, **probe})
        except ValidationError as exc:
            field = form_field_of(exc)
            if field in tested:
                errors.setdefault(field, str(exc))
    return None, errors


def _form_field(f: Field) -> forms.Field:
    """The form field of ``f``, from its definition (:mod:`celery_dbeat.core.fields`): text, or a
    checkbox for a flag, whatever the column's type (see the module's docstring)."""
    if f.form is Form.FLAG:
        return forms.BooleanField(required=False, initial=True, label=f.label, help_text=f.help)
    widget: forms.Widget
    if f.name == "kind":
        widget = KindSelect(choices=[(kind, f"{kind} ({what})") for kind, what in KINDS.items()])
    elif f.name == "task":
        widget = TaskInput(WIDE)
    elif f.form is Form.CHOICE:
        widget = forms.Select(choices=[("", f.blank), *((value, value) for value in f.choices)])
    elif f.form is Form.JSON:
        widget = forms.Textarea(JSON)
    else:
        widget = forms.TextInput(WIDE)
    return forms.CharField(
        required=False, label=f.label, help_text=f.help, widget=widget, initial=f.default or None
    )


class ScheduleFormBase(forms.ModelForm):
    """What :data:`ScheduleForm` does; its fields come from the field definitions."""

    #: Forces an edit of a schedule from beat_schedule, which the API refuses without it
    #: (:class:`ConfigOwned`); the admin shows it on those schedules only.
    force = forms.BooleanField(required=False, label=ConfigOwned.EDIT_ANYWAY)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        instance = kwargs.get("instance")
        if instance is not None and instance.pk is not None:
            kwargs["initial"] = {**form_text(instance), **(kwargs.get("initial") or {})}
        super().__init__(*args, **kwargs)
        #: The row's name before this edit (``None`` when adding).
        self.original_name: str | None = instance.name if instance is not None else None
        self.definition: Definition | None = None
        #: Whether the edit changes a schedule from beat_schedule (forced, until the next sync).
        self.edits_config = False

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean()
        definition, errors = form_errors({name: data.get(name) for name in FORM_FIELDS})
        for field, message in errors.items():
            self.add_error(field, message)
        if definition is None:
            return data
        try:  # what the API refuses on writing: a serializer the workers would not take
            schedules().check(definition)
            # ... and, the project's app known, slot arguments its task cannot take
            check_slot_parameters(definition)
        except ValidationError as exc:
            self.add_error(form_field_of(exc), str(exc))
            return data
        calendar = definition.calendar
        if calendar is not None and not (
            Calendar.objects.using(database_alias()).filter(name=calendar).exists()
        ):
            known = Calendar.objects.using(database_alias()).values_list("name", flat=True)
            self.add_error("calendar", str(unknown_calendar(calendar, known)))
            return data
        clash = Schedule.objects.using(database_alias()).filter(name=definition.name)
        if self.instance.pk is not None:
            clash = clash.exclude(pk=self.instance.pk)
        if clash.exists():
            self.add_error("name", str(ScheduleExists(definition.name)))
            return data
        if self.original_name is not None:
            try:  # what the API refuses on writing: an edit of a schedule from beat_schedule
                force = bool(data.get("force"))
                self.edits_config = schedules().check_replace(
                    self.original_name, definition, force=force
                )
            except ConfigOwned as exc:
                self.add_error("force", exc.told(ConfigOwned.TICK_EDIT_ANYWAY))
                return data
            except ScheduleNotFound:
                pass  # removed meanwhile: saving says so
        self.definition = definition
        return data

    def _post_clean(self) -> None:
        """No model validation (see the module's docstring), nor Django's uniqueness check
        (:meth:`clean` gives celery-dbeat's message): the admin writes the row through
        celery_dbeat.api.Schedules, never from this form's instance."""


class _Meta:
    model = Schedule
    fields = FORM_FIELDS


#: The schedule form: one field per :data:`celery_dbeat.core.fields.FIELDS` entry, in its order.
ScheduleForm: type[ScheduleFormBase] = forms.models.ModelFormMetaclass(
    "ScheduleForm",
    (ScheduleFormBase,),
    {"__module__": __name__, "Meta": _Meta, **{f.name: _form_field(f) for f in FIELDS}},
)


class BackfillForm(forms.Form):
    """The backfill action's page: the range (ISO-8601 instants, parsed as the CLI parses
    them), the limit, whether to only count, and whether to resend pruned slots."""

    start = forms.CharField(
        label="From",
        widget=forms.TextInput(attrs=WIDE),
        help_text="The first slot's earliest instant, e.g. 2026-11-30T00:00:00Z (inclusive).",
    )
    end = forms.CharField(
        label="To",
        widget=forms.TextInput(attrs=WIDE),
        help_text="The last slot's latest instant (inclusive); not after now.",
    )
    limit = forms.IntegerField(
        label="At most",
        min_value=1,
        max_value=MAX_BACKFILL,
        initial=10_000,
        help_text="Refuse a range holding more slots than this, for each schedule.",
    )
    dry_run = forms.BooleanField(
        label="Dry run: count the slots, record nothing", required=False, initial=True
    )
    resend = forms.BooleanField(
        label="Resend: also the slots whose history was pruned",
        required=False,
        initial=False,
        help_text="They may have been sent already: without this, they are left alone.",
    )

    def clean_start(self) -> Any:
        return _instant(self.cleaned_data["start"])

    def clean_end(self) -> Any:
        return _instant(self.cleaned_data["end"])


def _instant(text: str) -> Any:
    try:
        return parse_instant(text)
    except ValueError as exc:
        raise forms.ValidationError(str(exc)) from None
