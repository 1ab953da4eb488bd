"""The exclusion calendars view: list, create and edit forms, delete.

The form is plain text, read by :meth:`celery_dbeat.api.Calendars.add` and ``update``, so a
date is parsed by the same code as the CLI's ``--dates`` (one ``YYYY-MM-DD`` or
``YYYY-MM-DD..YYYY-MM-DD`` per line, or comma-separated) and a bad one is refused with the same
message, shown on its field. A calendar keeps its name (the API has no rename: schedules name
it); a removal is refused while schedules name it, and the refusal names them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from flask import flash
from flask_admin.form import SecureForm
from flask_admin.helpers import get_form_data
from typing_extensions import Unpack
from wtforms import StringField, TextAreaField

from ...api import Schedules
from ...core.calendars import stored_dates
from ...core.errors import CalendarExists, DBeatError, ValidationError
from ...store.models import Calendar
from .base import Access, AdminSession, DBeatView, Where, bulk_action, edit_link

__all__ = ["CALENDARS_ENDPOINT", "CalendarForm", "CalendarView"]

CALENDARS_ENDPOINT = "dbeat_calendars"
_FIELDS = ("name", "timezone", "description", "dates")


class CalendarForm(SecureForm):
    """A calendar's fields as text; the API validates them."""

    name = StringField("Name", description="Schedules name the calendar by it (calendar=).")
    timezone = StringField(
        "Time zone", default="UTC", description="The zone the dates are days of (IANA name)."
    )
    description = StringField("Description", description="Optional: what it is for, in one line.")
    dates = TextAreaField(
        "Dates",
        render_kw={"rows": 10},
        description="One YYYY-MM-DD or YYYY-MM-DD..YYYY-MM-DD (both days included) per line, "
        "or comma-separated.",
    )


def _entries(view: CalendarView, context: Any, row: Calendar, name: str) -> int:
    return len(stored_dates(row.dates))


class CalendarView(DBeatView):
    """Exclusion calendars: list, search, create and edit forms, delete, all through
    ``Schedules.calendars``."""

    can_view_details = False
    form = CalendarForm
    column_list = ("name", "timezone", "entries", "description", "version", "updated_at")
    column_labels: ClassVar[dict[str, str]] = {
        "timezone": "Zone",
        "entries": "Dates and ranges",
        "updated_at": "Last edit",
    }
    column_sortable_list = ("name", "timezone", "version", "updated_at")
    column_default_sort = ("name", False)
    column_searchable_list = ("name", "description")
    column_formatters: ClassVar[dict[str, Any]] = {"name": edit_link, "entries": _entries}

    row_model = Calendar
    default_name, default_endpoint, default_url = "Calendars", CALENDARS_ENDPOINT, "calendars"

    def __init__(
        self,
        schedules: Schedules,
        session: AdminSession,
        access: Access,
        *,
        actor: Callable[[], str | None] | None = None,
        **where: Unpack[Where],
    ) -> None:
        self.schedules = schedules
        self.actor = actor
        super().__init__(session, access, **where)

    def edit_form(self, obj: Calendar | None = None) -> Any:
        values: dict[str, Any] = {}
        if obj is not None:
            values = {
                "name": obj.name,
                "timezone": obj.timezone,
                "description": obj.description or "",
                "dates": "\n".join(stored_dates(obj.dates)),
            }
        form = self._edit_form_class(get_form_data(), data=values)
        form.name.render_kw = {"readonly": True}  # schedules name it: no rename
        return form

    def create_model(self, form: Any) -> Calendar | bool:
        if not self._save(form, self.schedules.calendars.add, form.name.data or ""):
            return False
        model = self._by_name(form.name.data or "")
        self.after_model_change(form, model, True)
        return model if model is not None else True

    def update_model(self, form: Any, model: Calendar) -> bool:
        if form.name.data != model.name:
            form.name.errors = [*form.name.errors, "a calendar cannot be renamed"]
            flash("Calendar not saved: a calendar cannot be renamed", "error")
            return False
        if not self._save(form, self.schedules.calendars.update, model.name):
            return False
        self.load(model.id)  # the same object, read again
        self.after_model_change(form, model, False)
        return True

    def _save(self, form: Any, write: Callable[..., object], name: str) -> bool:
        """Write the form's calendar ``name`` with ``write`` (the API's ``add`` or ``update``);
        a refusal is shown, on its field if it names one."""
        try:
            self.end_read()
            write(
                name,
                timezone=form.timezone.data or "",
                dates=form.dates.data or "",
                description=form.description.data or "",
                actor=self.who(),
            )
        except DBeatError as exc:
            self._not_saved(form, exc)
            return False
        return True

    def _not_saved(self, form: Any, exc: DBeatError) -> None:
        field = None
        if isinstance(exc, ValidationError) and exc.field in _FIELDS:
            field = exc.field
        elif isinstance(exc, CalendarExists):
            field = "name"
        if field is not None:
            form[field].errors = [*form[field].errors, str(exc)]
        flash(f"Calendar not saved: {exc}", "error")

    def _by_name(self, name: str) -> Calendar | None:
        row: Calendar | None = self.get_query().filter(Calendar.name == name).one_or_none()
        if row is not None:
            self.read_instants([row])
        return row

    def delete_model(self, model: Calendar) -> bool:
        """Through the API, which refuses a calendar that schedules name (and names them)."""
        return self.delete_with(model, self.schedules.calendars.remove, "Calendar")

    @bulk_action("delete", "Delete", "Delete the selected calendars?")
    def action_delete(self, ids: Sequence[str]) -> None:
        self.delete_selected(ids, "calendar")
