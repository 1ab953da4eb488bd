"""The schedule form: one field per :data:`~celery_dbeat.core.definitions.FORM_FIELDS` entry, all
plain text, so that :func:`~celery_dbeat.core.definitions.definition_from_form` validates every
value with the same code and messages as the CLI and the Python API. The form itself checks only
its CSRF token.

The form is built from :data:`celery_dbeat.core.fields.FIELDS`, in its order, each widget from its
field's definition (label, help, choices). The fields of each spec kind (``KIND_FIELDS``) are
grouped in a fieldset labelled with the kind (:func:`schedule_form_rules`); a small script on
the page shows only the chosen kind's, and without it every group shows, each saying which kind
it is for.
"""

from __future__ import annotations

from typing import Any

from flask_admin.form import SecureForm, rules
from markupsafe import Markup
from wtforms import (
    BooleanField,
    IntegerField,
    SelectField,
    StringField,
    TextAreaField,
)
from wtforms.validators import InputRequired, NumberRange, StopValidation

from ...core.backfill import MAX_BACKFILL
from ...core.definitions import FORM_FIELDS
from ...core.fields import FIELDS, KINDS, Field, Form
from ...core.formats import parse_instant

__all__ = [
    "BackfillForm",
    "ScheduleForm",
    "form_data",
    "schedule_form_rules",
]

try:  # WTForms 3.3 deprecates (value, label) tuples; older versions only take those.
    from wtforms.fields.choices import SelectChoice
except ImportError:  # pragma: no cover - WTForms < 3.3
    SelectChoice = None


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


def _widget(f: Field) -> Any:
    """The form field of ``f``, from its definition (:mod:`celery_dbeat.core.fields`)."""
    default = f.default or None
    if f.name == "kind":
        kinds = ((kind, f"{kind}: {what}") for kind, what in KINDS.items())
        return _select(f.label, None, *kinds, default=default, description=f.help)
    if f.form is Form.CHOICE:
        return _select(f.label, f.blank, *f.choices, default=default, description=f.help)
    if f.form is Form.JSON:
        return TextAreaField(f.label, default=default, description=f.help)
    if f.form is Form.FLAG:
        return BooleanField(f.label, default=True, description=f.help)
    return StringField(f.label, default=default, description=f.help)


_KINDS_OF = {f.name: " ".join(f.kinds) for f in FIELDS if f.kinds}
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
        kinds = _KINDS_OF.get(name)
        if kinds != current:
            if current is not None:
                shown.append(rules.HTML("</fieldset>"))
            if kinds is not None:
                shown.append(rules.HTML(_FIELDSET.format(kinds, kinds.replace(" ", " or "))))
            current = kinds
        shown.append(rules.Field(name))
    if current is not None:
        shown.append(rules.HTML("</fieldset>"))
    return shown


#: The schedule form class (a Flask-Admin ``SecureForm``: CSRF-checked).
ScheduleForm: type[Any] = type("ScheduleForm", (SecureForm,), {f.name: _widget(f) for f in FIELDS})


def form_data(form: Any) -> dict[str, Any]:
    """The plain values ``definition_from_form`` reads."""
    return {name: form[name].data for name in FORM_FIELDS}


class BackfillForm(SecureForm):
    """The backfill page's form: the range (ISO-8601 instants, parsed as the CLI parses them),
    the limit, whether to only count, and whether to resend pruned slots."""

    start = StringField(
        "From",
        [InputRequired()],
        description="The first slot's earliest instant, e.g. 2026-11-30T00:00:00Z (inclusive).",
    )
    end = StringField(
        "To",
        [InputRequired()],
        description="The last slot's latest instant (inclusive); not after now.",
    )
    limit = IntegerField(
        "At most",
        [InputRequired(), NumberRange(1, MAX_BACKFILL)],
        default=10_000,
        description="Refuse a range holding more slots than this, for each schedule.",
    )
    dry_run = BooleanField("Dry run: count the slots, record nothing", default=True)
    resend = BooleanField(
        "Resend: also the slots whose history was pruned",
        default=False,
        description="They may have been sent already: without this, they are left alone.",
    )

    def validate_start(self, field: StringField) -> None:
        _instant(field)

    def validate_end(self, field: StringField) -> None:
        _instant(field)


def _instant(field: StringField) -> None:
    try:
        parse_instant(field.data or "")
    except ValueError as exc:
        raise StopValidation(str(exc)) from None
