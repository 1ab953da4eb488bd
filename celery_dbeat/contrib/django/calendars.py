"""The exclusion calendars in the Django admin: list, add, change and delete, every write through
:attr:`celery_dbeat.api.Schedules.calendars`.

The form is plain text validated by the API's own parsing (:meth:`Calendar.create`), so a date
is read as the CLI's ``--dates`` reads it (one ``YYYY-MM-DD`` or ``YYYY-MM-DD..YYYY-MM-DD`` per
line, or comma-separated) and a bad one gets the same message, on its field. A calendar keeps
its name (schedules name it; the API has no rename). A deletion is refused while schedules name
the calendar, with a message naming them, and nothing is deleted.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from celery_dbeat.core.calendars import Calendar as CalendarSpec
from celery_dbeat.core.calendars import stored_dates
from celery_dbeat.core.errors import CalendarExists, CalendarNotFound, ValidationError

from .base import OnScheduleDatabase, refused, request_actor
from .conf import database_alias, schedules
from .display import instant
from .models import Calendar

__all__ = ["CalendarAdmin", "CalendarForm"]

_FIELDS = ("name", "timezone", "description", "dates")


class CalendarForm(forms.ModelForm):
    """A calendar's fields as text; :meth:`clean` validates them as the API does. On a change
    the name is not a field (it is shown read-only)."""

    name = forms.CharField(
        required=False,
        label="Name",
        help_text="Schedules name the calendar by it (calendar=).",
        widget=forms.TextInput({"class": "vTextField"}),
    )
    timezone = forms.CharField(
        required=False,
        initial="UTC",
        label="Time zone",
        help_text="The zone the dates are days of (IANA name).",
    )
    description = forms.CharField(
        required=False,
        label="Description",
        widget=forms.TextInput({"size": 60, "class": "vTextField"}),
        help_text="Optional: what it is for, in one line.",
    )
    dates = forms.CharField(
        required=False,
        label="Dates",
        widget=forms.Textarea({"rows": 10, "cols": 40}),
        help_text="One YYYY-MM-DD or YYYY-MM-DD..YYYY-MM-DD (both days included) per line, or "
        "comma-separated.",
    )

    class Meta:
        model = Calendar
        fields = _FIELDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        instance = kwargs.get("instance")
        if instance is not None and instance.pk is not None:
            kwargs["initial"] = {
                "timezone": instance.timezone,
                "description": instance.description or "",
                "dates": "\n".join(stored_dates(instance.dates)),
                **(kwargs.get("initial") or {}),
            }
        super().__init__(*args, **kwargs)
        #: The calendar's name before this edit (``None`` when adding).
        self.original_name: str | None = None
        if instance is not None and instance.pk is not None:
            self.original_name = instance.name
            self.fields.pop("name", None)
        #: The validated calendar, once :meth:`clean` accepted the form.
        self.calendar: CalendarSpec | None = None

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean()
        name = self.original_name or data.get("name") or ""
        try:
            calendar = CalendarSpec.create(
                name,
                timezone=data.get("timezone") or "",
                dates=data.get("dates") or "",
                description=data.get("description") or "",
            )
        except ValidationError as exc:
            field = exc.field if exc.field in self.fields else None
            self.add_error(field, str(exc))
            return data
        if self.original_name is None:
            taken = Calendar.objects.using(database_alias()).filter(name=name).exists()
            if taken:
                self.add_error("name", str(CalendarExists(name)))
                return data
        self.calendar = calendar
        return data

    def _post_clean(self) -> None:
        """No model validation: the admin writes the row through the API, never from this
        form's instance."""


class CalendarAdmin(OnScheduleDatabase):
    """Exclusion calendars: the dates (in their zone) on which the schedules naming them do not
    fire. Every write goes through ``Schedules.calendars``; permissions are the model's."""

    form = CalendarForm
    list_display = ("name", "timezone", "entries", "description", "version", "updated")
    search_fields = ("name", "description")

    updated = instant("updated_at", "last edit")

    @admin.display(description="dates and ranges")
    def entries(self, obj: Calendar) -> int:
        return len(stored_dates(obj.dates))

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return _FIELDS if obj is None else (*_FIELDS, "version", "updated")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ("name", "version", "updated") if obj is not None else ()

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> dict[str, Any]:
        """No bulk delete: Django's would report calendars deleted that the API kept in use.
        ``action_location``: where the actions show, which Django passes from 6.1 on (and warns
        about an override that does not take it); ``None`` before."""
        where = {} if action_location is None else {"action_location": action_location}
        actions: dict[str, Any] = super().get_actions(request, **where)
        actions.pop("delete_selected", None)
        return actions

    def save_model(
        self, request: HttpRequest, obj: Calendar, form: CalendarForm, change: bool
    ) -> None:
        calendar = form.calendar
        assert calendar is not None  # the form validated
        api = schedules().calendars
        with refused():  # the name is the calendar's own on a change (the form does not rename)
            (api.update if change else api.add)(
                calendar.name,
                timezone=calendar.timezone,
                dates=calendar.ranges,
                description=calendar.description,
                actor=request_actor(request),
            )
        self.adopt(request, obj, name=calendar.name)

    def delete_model(self, request: HttpRequest, obj: Calendar) -> None:
        """Through the API, which refuses a calendar still in use (the message names its
        schedules; nothing is deleted)."""
        with refused(), suppress(CalendarNotFound):  # not found: removed meanwhile
            schedules().calendars.remove(obj.name, actor=request_actor(request))
