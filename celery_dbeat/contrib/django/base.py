"""What every celery-dbeat admin shares: reads from the Django database that holds the tables,
writes through the API outside Django's transaction, and the page saying what to do while the
tables are not usable."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.options import csrf_protect_m
from django.contrib.admin.utils import unquote
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from celery_dbeat.core.audit import Actor, Surface
from celery_dbeat.core.errors import ConfigOwned, DBeatError

from .conf import database_alias
from .tables import tables_problem, unavailable_response

__all__ = ["OnScheduleDatabase", "ReadOnly", "WriteRefused", "refused", "request_actor"]


def request_actor(request: HttpRequest) -> Actor:
    """The logged-in user, as the audit trail records them."""
    return Actor(request.user.get_username() or "anonymous", Surface.DJANGO_ADMIN.value)


class WriteRefused(Exception):
    """The API refused a write after the form validated (a concurrent edit, a name taken, a
    calendar in use): raised by ``save_model`` or ``delete_model``, shown by
    :meth:`OnScheduleDatabase.changeform_view`."""


@contextmanager
def refused(edit_anyway: str | None = None) -> Iterator[None]:
    """Around an API write: what the API refuses raised as :class:`WriteRefused`, in its words
    (a schedule from beat_schedule: offering ``edit_anyway``, if given, as the way round)."""
    try:
        yield
    except ConfigOwned as exc:
        raise WriteRefused(exc.told(edit_anyway)) from exc
    except DBeatError as exc:
        raise WriteRefused(str(exc)) from exc


class OnScheduleDatabase(admin.ModelAdmin):
    """Reads from the Django database that holds celery-dbeat's tables; every view shows what to
    do instead while they are missing (or at another revision than this celery-dbeat's)."""

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).using(database_alias())

    def tables_missing(self, request: HttpRequest) -> HttpResponse | None:
        """The page saying what to do, while the tables are not usable; to users allowed to see
        this model's pages (others get the views' own refusal)."""
        if not (self.has_view_or_change_permission(request) or self.has_add_permission(request)):
            return None
        problem = tables_problem()
        if problem is None:
            return None
        return unavailable_response(request, self.admin_site, self.opts, problem)

    def log_deleted(self, request: HttpRequest, objects: Sequence[Model]) -> None:
        """Record the deletions in Django's admin log, as its own delete views do."""
        if hasattr(self, "log_deletions"):  # Django 5.1+
            self.log_deletions(request, objects)
        else:  # pragma: no cover - Django < 5.1
            for obj in objects:
                self.log_deletion(request, obj, str(obj))

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return self.tables_missing(request) or super().changelist_view(request, extra_context)

    @csrf_protect_m
    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The change form outside Django's transaction (ModelAdmin opens one for POSTs): the
        API writes in its own. On a SQLite file shared with the tables, Django's would keep a
        read snapshot from before the API's commit, or hold the write lock the API waits for. A
        write the API refuses is shown, and nothing is saved."""
        if missing := self.tables_missing(request):
            return missing
        try:
            return self._changeform_view(request, object_id, form_url, extra_context)
        except WriteRefused as exc:
            self.message_user(request, f"Not saved: {exc}", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    @csrf_protect_m
    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The confirmation page as Django's; the confirmed deletion goes through the API (in
        ``delete_model``, outside Django's transaction, as :meth:`changeform_view`). A
        deletion the API refuses is shown on the change page, and nothing is deleted."""
        if missing := self.tables_missing(request):
            return missing
        obj = self.get_object(request, unquote(object_id))
        if request.method != "POST" or obj is None or not self.has_delete_permission(request, obj):
            return self._delete_view(request, object_id, extra_context)
        try:
            self.delete_model(request, obj)
        except WriteRefused as exc:
            self.message_user(request, f"Not deleted: {exc}", messages.ERROR)
            change = reverse(
                f"admin:{self.opts.app_label}_{self.opts.model_name}_change",
                args=[obj.pk],
                current_app=self.admin_site.name,
            )
            return HttpResponseRedirect(change)
        self.log_deleted(request, [obj])
        return self.response_delete(request, str(obj), obj.pk)

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return self.tables_missing(request) or super().history_view(
            request, object_id, extra_context
        )

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Nothing: the API writes the whole row, which has no related rows to save."""

    def adopt(self, request: HttpRequest, obj: Model, **key: Any) -> None:
        """Make ``obj`` (unsaved by Django) the row the API wrote, found by ``key``, as Django's
        own save would have left it."""
        fresh = self.get_queryset(request).get(**key)
        for field in type(obj)._meta.concrete_fields:
            setattr(obj, field.attname, getattr(fresh, field.attname))
        obj._state.adding, obj._state.db = False, fresh._state.db


def _denied(*_args: Any, **_kwargs: Any) -> bool:
    return False


class ReadOnly(OnScheduleDatabase):
    """List and detail pages only: nobody adds, changes or deletes a row."""

    has_add_permission = has_change_permission = has_delete_permission = _denied
