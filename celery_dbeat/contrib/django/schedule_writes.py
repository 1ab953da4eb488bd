"""The schedule admin's writes (:class:`~.admin.ScheduleAdmin` inherits them), each through the
management API (:class:`celery_dbeat.api.Schedules`), never Django's own SQL: save (create, or
replace, moving ``next_run_at`` by the API's rules), delete (one, or the selected through
Django's "Delete selected" page), and the actions pause, resume, run now and backfill (its range
asked on a page of its own), each recorded in the schedule's history as an edit is."""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import suppress

from django import forms as django_forms
from django.contrib import admin, messages
from django.contrib.admin import actions as django_actions
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME, ActionForm
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext_lazy

from celery_dbeat.core.audit import Actor
from celery_dbeat.core.definitions import MAX_PAUSE_NOTE
from celery_dbeat.core.errors import ConfigOwned, DBeatError, ScheduleNotFound

from .base import OnScheduleDatabase, WriteRefused, refused, request_actor
from .conf import schedules
from .forms import BackfillForm, ScheduleFormBase
from .models import Schedule
from .tasks import unknown_task_warning

__all__ = ["PauseActionForm", "ScheduleWrites"]


class PauseActionForm(ActionForm):
    """The action bar, with the note a pause carries (who paused and why)."""

    note = django_forms.CharField(
        required=False,
        max_length=MAX_PAUSE_NOTE,
        label="Pause note",
        widget=django_forms.TextInput(attrs={"size": 40, "placeholder": "who, and why (pause)"}),
    )


class ScheduleWrites(OnScheduleDatabase):
    """Saves, deletes and actions of the schedule admin, through the API (``conf.schedules()``)."""

    actions = ("delete_selected", "pause", "resume", "trigger", "backfill")
    action_form = PauseActionForm

    def save_model(
        self, request: HttpRequest, obj: Schedule, form: ScheduleFormBase, change: bool
    ) -> None:
        definition = form.definition
        assert definition is not None  # the form validated
        api = schedules()
        force = bool(form.cleaned_data.get("force"))
        with refused(ConfigOwned.TICK_EDIT_ANYWAY):  # beat_schedule's: since the form's check
            if not change:
                info = api.create(definition, actor=request_actor(request))
            else:
                assert form.original_name is not None
                info = api.replace(
                    form.original_name, definition, force=force, actor=request_actor(request)
                )
        warning = unknown_task_warning(definition.task)
        if warning is not None:
            self.message_user(request, warning, messages.WARNING)
        if change and form.edits_config:
            self.message_user(request, f"{ConfigOwned.forced(info.name)}.", messages.WARNING)
        self.adopt(request, obj, pk=info.id)

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        """Through the API, which refuses a schedule from beat_schedule (the admin offers no
        override: the next beat start would create it again)."""
        with refused(), suppress(ScheduleNotFound):  # not found: removed meanwhile
            schedules().remove(obj.name, actor=request_actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        """Each through :meth:`delete_model` (the API), never Django's own SQL."""
        for schedule in queryset:
            self.delete_model(request, schedule)

    @admin.action(
        description=gettext_lazy("Delete selected %(verbose_name_plural)s"),
        permissions=["delete"],
    )
    def delete_selected(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        """Django's "Delete selected" (an action of this name replaces the site's), through the
        API: its confirmation page, then each schedule deleted but those the API refuses (one
        from beat_schedule), each named with the reason."""
        if not request.POST.get("post"):
            confirm: HttpResponse | None = django_actions.delete_selected(self, request, queryset)
            return confirm
        deleted = []
        for schedule in queryset:
            try:
                self.delete_model(request, schedule)
            except WriteRefused as exc:
                self.message_user(
                    request, f"Schedule {schedule.name!r} not deleted: {exc}", messages.ERROR
                )
            else:
                deleted.append(schedule)
        if deleted:
            self.log_deleted(request, deleted)
            names = ", ".join(schedule.name for schedule in deleted)
            self.message_user(request, f"Deleted: {names}.", messages.SUCCESS)
        return None

    def _each(
        self,
        request: HttpRequest,
        queryset: QuerySet,
        call: Callable[..., object],
        logged: Callable[[object], str] | None,
    ) -> list[str]:
        """Call ``call`` with each selected schedule's name and ``actor=`` the user; report what
        was refused, record what was done in the schedule's history (``logged(what call
        returned)``; ``None``: nothing to record, as for a dry run), and return it (each name,
        with what ``call`` returned if it is text)."""
        done: list[str] = []
        actor = request_actor(request)
        for schedule in queryset:
            name = schedule.name
            try:
                detail = call(name, actor=actor)
            except DBeatError as exc:
                self.message_user(request, f"{name}: {exc}", messages.ERROR)
                continue
            if logged is not None:
                self.log_change(request, schedule, logged(detail))
            done.append(f"{name} ({detail})" if isinstance(detail, str) else name)
        return done

    @admin.action(description="Pause the selected schedules", permissions=["change"])
    def pause(self, request: HttpRequest, queryset: QuerySet) -> None:
        """Pause with the note typed beside the action menu, else one naming the user."""
        typed = str(request.POST.get("note", "")).strip()
        note = typed or f"paused from the admin by {request.user.get_username()}"
        pause = functools.partial(schedules().pause, note=note)
        done = self._each(request, queryset, pause, lambda _: f"Paused: {note}.")
        if done:
            self.message_user(request, f"Paused: {', '.join(done)}.", messages.SUCCESS)

    @admin.action(
        description="Resume the selected schedules (from now, without catch-up)",
        permissions=["change"],
    )
    def resume(self, request: HttpRequest, queryset: QuerySet) -> None:
        resumed = "Resumed from now, without catch-up."
        done = self._each(request, queryset, schedules().resume, lambda _: resumed)
        if done:
            self.message_user(request, f"Resumed: {', '.join(done)}.", messages.SUCCESS)

    @admin.action(description="Trigger the selected schedules now", permissions=["change"])
    def trigger(self, request: HttpRequest, queryset: QuerySet) -> None:
        """One extra fire each, recorded now; sent by a running beat, or when one starts."""
        api = schedules()

        def trigger(name: str, actor: Actor) -> str:
            return f"task id {api.trigger(name, actor=actor)}"

        done = self._each(request, queryset, trigger, lambda detail: f"Run now: {detail}.")
        if not done:
            return
        triggered = f"Triggered: {', '.join(done)}"
        live = [beat.name for beat in api.live_beats()]
        if live:
            by = f"the running beat{'s' if len(live) > 1 else ''} {', '.join(live)}"
            self.message_user(request, f"{triggered}: being sent now by {by}.", messages.SUCCESS)
            return
        waiting = api.no_beat_running("the fire is" if len(done) == 1 else "the fires are")
        self.message_user(request, f"{triggered}, but {waiting}.", messages.WARNING)

    @admin.action(
        description="Backfill a past range of the selected schedules", permissions=["change"]
    )
    def backfill(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        """First the range (a page of its own, as Django's delete confirmation is), then each
        schedule's report: a dry run stays on the page, a backfill goes back to the list."""
        form = BackfillForm(request.POST if "apply" in request.POST else None)
        if form.is_bound and form.is_valid():
            api = schedules()
            data = form.cleaned_data

            def backfill(name: str, actor: Actor) -> str:
                report = api.backfill(
                    name,
                    data["start"],
                    data["end"],
                    limit=data["limit"],
                    dry_run=data["dry_run"],
                    resend=data["resend"],
                    actor=actor,
                )
                level = messages.SUCCESS if report.queued else messages.INFO
                self.message_user(request, report.summary(), level)
                return f"Backfill: {report.summary()}."

            self._each(request, queryset, backfill, None if data["dry_run"] else str)
            if not data["dry_run"]:
                return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Backfill",
            "opts": self.model._meta,
            "form": form,
            "schedules": list(queryset),
            "selected": request.POST.getlist(ACTION_CHECKBOX_NAME),
            "action": "backfill",
        }
        return TemplateResponse(request, "admin/celery_dbeat/backfill.html", context)
