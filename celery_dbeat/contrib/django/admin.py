"""Django admin for celery-dbeat: schedules (edit, pause, resume, trigger), fires, beats, the
audit trail and the exclusion calendars (edited through the API: ``calendars.py``).

Reads go through the read-only models; every write goes through
:class:`celery_dbeat.api.Schedules`, so it is validated and moves ``next_run_at`` by the same
rules as the CLI and beat's config sync (a timing edit recomputes it, a payload edit keeps it).
Until celery-dbeat's tables are there, every view shows what to do instead (see ``tables.py``).
A row holding a value that cannot be read is shown with its error (``models.py``). The actions
(pause, resume, run now, backfill) are recorded in each schedule's history, as edits are;
backfill first asks for the range on a page of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms as django_forms
from django.contrib import admin, messages
from django.contrib.admin import actions as django_actions
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME, ActionForm
from django.contrib.admin.options import csrf_protect_m
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy

from celery_dbeat.core.audit import change_text, decoded_changes, subject
from celery_dbeat.core.definitions import MAX_PAUSE_NOTE, SPEC_COLUMNS, TIMING_COLUMNS
from celery_dbeat.core.errors import ConfigOwned, DBeatError, ScheduleNotFound
from celery_dbeat.core.fields import KIND_FIELDS
from celery_dbeat.core.specs import spec_from_fields
from celery_dbeat.core.states import state_note
from celery_dbeat.store.schedules import CONFIG_ORIGIN

from .base import OnScheduleDatabase, ReadOnly, WriteRefused, request_actor
from .calendars import CalendarAdmin
from .conf import schedules
from .display import (
    OriginFilter,
    RunStatusFilter,
    StateFilter,
    StatusFilter,
    instant,
    instant_of,
    next_slots_html,
    recent_fires_html,
    shortened,
    show_lag,
)
from .forms import BackfillForm, ScheduleForm, ScheduleFormBase
from .load import load_view
from .models import AuditEntry, Beat, Calendar, Fire, Schedule
from .tasks import unknown_task_warning

__all__ = ["AuditAdmin", "BeatAdmin", "CalendarAdmin", "FireAdmin", "ScheduleAdmin"]

#: Slots shown by the change page's preview, and fires in its recent history.
PREVIEW_COUNT = 5
RECENT_FIRES = 10


class PauseActionForm(ActionForm):
    """The action bar, with the note a pause carries (who paused and why)."""

    note = django_forms.CharField(
        required=False,
        max_length=MAX_PAUSE_NOTE,
        label="Pause note",
        widget=django_forms.TextInput(attrs={"size": 40, "placeholder": "who, and why (pause)"}),
    )


@admin.register(Schedule)
class ScheduleAdmin(OnScheduleDatabase):
    form = ScheduleForm
    list_display = (
        "name",
        "task",
        "spec",
        "state",
        "next_run",
        "last_fired",
        "run_count",
        "note",
        "error",
    )
    list_filter = (StateFilter, "kind", "origin", "misfire_policy", "overlap_policy")
    search_fields = ("name", "task")

    actions = ("delete_selected", "pause", "resume", "trigger", "backfill")
    action_form = PauseActionForm
    save_on_top = True
    #: Each kind's fieldset: shown alone by the kind menu's script (class dbeat-kind-<kind>).
    kind_fieldsets = (
        ("cron", "Cron"),
        ("interval", "Interval"),
        ("once", "Once"),
        ("solar", "Solar"),
    )
    bound_fields = ("start_at", "end_at", "max_runs", "jitter")
    state_fields = (
        "state",
        "paused",
        "next_run",
        "due",
        "next_slots",
        "last_fired",
        "run_count",
        "failures",
        "finished",
        "last_error",
        "pruned",
        "origin",
        "created",
        "updated",
    )

    last_fired = instant("last_slot", "last slot")
    finished = instant("finished_at", "finished at")
    pruned = instant("pruned_until", "history pruned until")
    created = instant("created_at", "created at")
    updated = instant("updated_at", "updated at")

    def get_urls(self) -> list[Any]:
        """``load/``: the next 24 hours drawn (:mod:`.load`), linked from the list's tools."""
        page = self.admin_site.admin_view(lambda request: load_view(self, request))
        name = f"{self.opts.app_label}_{self.opts.model_name}_load"
        return [path("load/", page, name=name), *super().get_urls()]

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets: list[tuple[str | None, dict[str, Any]]] = [
            (None, {"fields": ("name", "task", "enabled")}),
            ("When", {"fields": ("kind",)}),
        ]
        for kind, title in self.kind_fieldsets:
            fieldsets.append(
                (
                    f"{title} (used when the kind is {kind})",
                    {"fields": KIND_FIELDS[kind], "classes": ("dbeat-kind", f"dbeat-kind-{kind}")},
                )
            )
        fieldsets += [
            ("Bounds and jitter", {"fields": self.bound_fields}),
            ("Exclusion calendar", {"fields": ("calendar",)}),
            ("Payload", {"fields": ("args", "kwargs", "options")}),
            ("Misfires", {"fields": ("misfire_policy", "misfire_grace", "catchup_limit")}),
            ("Overlapping runs", {"fields": ("overlap_policy", "max_run_time")}),
            ("Failures and history", {"fields": ("pause_after_failures", "history_limit")}),
        ]
        if obj is not None and obj.origin == CONFIG_ORIGIN:
            fieldsets.append(("beat_schedule", {"fields": ("force",)}))
        if obj is not None:
            fieldsets.append(("State", {"fields": self.state_fields}))
            fieldsets.append(("Recent fires", {"fields": ("recent_fires",)}))
        return fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return (*self.state_fields, "recent_fires") if obj is not None else ()

    @admin.display(description="spec")
    def spec(self, obj: Schedule) -> str:
        """The spec's own text, as on the command line (``every 1h30m``)."""
        spec = spec_from_fields({column: getattr(obj, column) for column in SPEC_COLUMNS})
        text = spec.text() if spec is not None else f"{obj.kind} (incomplete)"
        lost = [c for c in obj.unreadable.columns if c in TIMING_COLUMNS] if obj.unreadable else []
        return f"{text} ({', '.join(lost)} cannot be read)" if lost else text

    @admin.display(description="last error")
    def error(self, obj: Schedule) -> str:
        return shortened(obj.last_error)

    @admin.display(description="failed runs in a row")
    def failures(self, obj: Schedule) -> str:
        """The count ``pause_after_failures`` is compared with, and that number if set."""
        limit = obj.pause_after_failures
        paused_at = f" (pauses at {limit})" if limit is not None else ""
        return f"{obj.consecutive_failures}{paused_at}"

    @admin.display(description="state")
    def state(self, obj: Schedule) -> str:
        return str(obj.state)

    @admin.display(description="note")
    def note(self, obj: Schedule) -> str:
        """Beside the state, as ``dbeat list`` shows it: a paused schedule's note (all of it on
        hover), an active one's failed runs in a row."""
        return shortened(state_note(obj), 60)

    @admin.display(description="paused")
    def paused(self, obj: Schedule) -> str:
        """When, by what and why it was paused (``-`` unless paused)."""
        if obj.state != "paused" or obj.paused_at is None:
            return "-"
        source = f" ({obj.pause_source})" if obj.pause_source else ""
        note = f": {obj.pause_note}" if obj.pause_note else ""
        return f"{instant_of(obj, 'paused_at')}{source}{note}"

    @admin.display(description="next run at", ordering="next_run_at")
    def next_run(self, obj: Schedule) -> str:
        """None unless active: a paused, finished or failing schedule does not fire (the stored
        ``next_run_at`` of a paused one is recomputed when it resumes)."""
        return self._upcoming(obj, "next_run_at")

    @admin.display(description="due at (with jitter)", ordering="due_at")
    def due(self, obj: Schedule) -> str:
        return self._upcoming(obj, "due_at")

    def _upcoming(self, obj: Schedule, field: str) -> str:
        if obj.unreadable is not None and field in obj.unreadable.columns:
            return instant_of(obj, field)
        return instant_of(obj, field) if obj.state == "active" else f"none ({obj.state})"

    @admin.display(description="next slots")
    def next_slots(self, obj: Schedule) -> str:
        if obj.state == "finished":
            return "none: the schedule has finished"
        try:
            slots = schedules().preview(obj.name, count=PREVIEW_COUNT)
        except DBeatError as exc:
            return f"cannot be computed: {exc}"
        listed = next_slots_html(slots, obj.timezone if obj.kind == "cron" else None)
        if obj.unreadable is not None:
            unreadable: str = format_html(
                "none while its stored values cannot be read; saved as shown, it would fire at: {}",
                listed,
            )
            return unreadable
        if obj.state == "paused":
            paused: str = format_html(
                "none while paused; resumed now (without catch-up), it would fire at: {}", listed
            )
            return paused
        return listed

    @admin.display(description="recent fires")
    def recent_fires(self, obj: Schedule) -> str:
        fires = obj.fires.order_by("-slot", "-id")[:RECENT_FIRES]
        url = reverse("admin:celery_dbeat_fire_changelist", current_app=self.admin_site.name)
        return recent_fires_html(fires, f"{url}?schedule__id__exact={obj.pk}")

    # Writes: all through celery_dbeat.api.Schedules -----------------------------------------

    @csrf_protect_m
    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        missing = self.tables_missing(request)
        if missing is not None:
            return missing
        if object_id is not None and request.method == "GET":
            obj = self.get_object(request, object_id)
            if obj is not None and obj.origin == CONFIG_ORIGIN:
                self.message_user(request, ConfigOwned.ADMIN_NOTE, messages.WARNING)
            if obj is not None and obj.unreadable is not None:
                self.message_user(request, obj.unreadable.form_note(), messages.ERROR)
        return self.api_changeform_view(request, object_id, form_url, extra_context)

    @csrf_protect_m
    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # As changeform_view: the API deletes in its own transaction.
        return self.tables_missing(request) or self.api_delete_view(
            request, object_id, extra_context
        )

    def save_model(
        self, request: HttpRequest, obj: Schedule, form: ScheduleFormBase, change: bool
    ) -> None:
        definition = form.definition
        assert definition is not None  # the form validated
        api = schedules()
        force = bool(form.cleaned_data.get("force"))
        try:
            if not change:
                info = api.create(definition, actor=request_actor(request))
            else:
                assert form.original_name is not None
                info = api.replace(
                    form.original_name, definition, force=force, actor=request_actor(request)
                )
        except ConfigOwned as exc:  # it came from beat_schedule after the form's check
            raise WriteRefused(exc.told(ConfigOwned.TICK_EDIT_ANYWAY)) from exc
        except DBeatError as exc:
            raise WriteRefused(str(exc)) from exc
        warning = unknown_task_warning(definition.task)
        if warning is not None:
            self.message_user(request, warning, messages.WARNING)
        if change and form.edits_config:
            self.message_user(request, f"{ConfigOwned.forced(info.name)}.", messages.WARNING)
        fresh = self.get_queryset(request).get(pk=info.id)
        for field in Schedule._meta.concrete_fields:
            setattr(obj, field.attname, getattr(fresh, field.attname))
        obj._state.adding, obj._state.db = False, fresh._state.db

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Nothing: a schedule has no related rows to save."""

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        """Through the API, which refuses a schedule from beat_schedule (the admin offers no
        override: the next beat start would create it again)."""
        try:
            schedules().remove(obj.name, actor=request_actor(request))
        except ScheduleNotFound:
            pass  # removed meanwhile
        except ConfigOwned as exc:
            raise WriteRefused(exc.told(None)) from exc
        except DBeatError as exc:
            raise WriteRefused(str(exc)) from exc

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

    # Actions ----------------------------------------------------------------------------------

    def _each(
        self,
        request: HttpRequest,
        queryset: QuerySet,
        call: Callable[[str], object],
        logged: Callable[[object], str],
    ) -> list[str]:
        """Apply ``call`` to each selected schedule's name; report what was refused, record
        what was done in the schedule's history (``logged(what call returned)``), and return it
        (each name, with what ``call`` returned if anything)."""
        done: list[str] = []
        for schedule in queryset:
            name = schedule.name
            try:
                detail = call(name)
            except DBeatError as exc:
                self.message_user(request, f"{name}: {exc}", messages.ERROR)
                continue
            self.log_change(request, schedule, logged(detail))
            done.append(name if detail is None else f"{name} ({detail})")
        return done

    @admin.action(description="Pause the selected schedules", permissions=["change"])
    def pause(self, request: HttpRequest, queryset: QuerySet) -> None:
        """Pause with the note typed beside the action menu, else one naming the user."""
        api = schedules()
        typed = str(request.POST.get("note", "")).strip()
        note = typed or f"paused from the admin by {request.user.get_username()}"

        def pause(name: str) -> None:
            api.pause(name, note=note, actor=request_actor(request))

        done = self._each(request, queryset, pause, lambda _: f"Paused: {note}.")
        if done:
            self.message_user(request, f"Paused: {', '.join(done)}.", messages.SUCCESS)

    @admin.action(
        description="Resume the selected schedules (from now, without catch-up)",
        permissions=["change"],
    )
    def resume(self, request: HttpRequest, queryset: QuerySet) -> None:
        api = schedules()

        def resume(name: str) -> None:
            api.resume(name, actor=request_actor(request))

        resumed = "Resumed from now, without catch-up."
        done = self._each(request, queryset, resume, lambda _: resumed)
        if done:
            self.message_user(request, f"Resumed: {', '.join(done)}.", messages.SUCCESS)

    @admin.action(description="Trigger the selected schedules now", permissions=["change"])
    def trigger(self, request: HttpRequest, queryset: QuerySet) -> None:
        """One extra fire each, recorded now; sent by a running beat, or when one starts."""
        api = schedules()

        def trigger(name: str) -> str:
            return f"task id {api.trigger(name, actor=request_actor(request))}"

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

            def backfill(name: str) -> str:
                report = api.backfill(
                    name,
                    data["start"],
                    data["end"],
                    limit=data["limit"],
                    dry_run=data["dry_run"],
                    resend=data["resend"],
                    actor=request_actor(request),
                )
                level = messages.SUCCESS if report.queued else messages.INFO
                self.message_user(request, report.summary(), level)
                return f"Backfill: {report.summary()}."

            if data["dry_run"]:
                for schedule in queryset:
                    try:
                        backfill(schedule.name)
                    except DBeatError as exc:
                        self.message_user(request, f"{schedule.name}: {exc}", messages.ERROR)
            else:
                self._each(request, queryset, backfill, str)
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


@admin.register(Fire)
class FireAdmin(ReadOnly):
    list_display = (
        "slot_utc",
        "schedule_link",
        "status",
        "manual",
        "origin",
        "sent",
        "lag",
        "beat",
        "task_id",
        "attempts",
        "run_status",
        "started",
        "ran",
        "worker",
        "errors",
    )
    list_filter = (StatusFilter, RunStatusFilter, "manual", OriginFilter, "slot")
    search_fields = ("schedule__name", "task_id", "beat", "worker")
    list_select_related = ("schedule",)
    fields = (
        "schedule",
        "slot_utc",
        "manual",
        "origin",
        "status",
        "slot_count",
        "first",
        "task_id",
        "beat",
        "recorded",
        "sent",
        "lag",
        "lease",
        "attempts",
        "error",
        "run_status",
        "started",
        "finished",
        "ran",
        "worker",
        "run_error",
    )

    slot_utc = instant("slot", "slot")
    first = instant("first_slot", "oldest slot of the group")
    recorded = instant("recorded_at", "recorded at")
    sent = instant("sent_at", "sent at")
    lease = instant("lease_until", "lease until")
    started = instant("started_at", "run started at")
    finished = instant("finished_at", "run finished at")

    @admin.display(description="schedule", ordering="schedule__name")
    def schedule_link(self, obj: Fire) -> str:
        url = reverse(
            "admin:celery_dbeat_schedule_change",
            args=[obj.schedule_id],
            current_app=self.admin_site.name,
        )
        link: str = format_html('<a href="{}">{}</a>', url, obj.schedule.name)
        return link

    @admin.display(description="lag")
    def lag(self, obj: Fire) -> str:
        return show_lag(obj.lag)

    @admin.display(description="run time", ordering="runtime")
    def ran(self, obj: Fire) -> str:
        return show_lag(obj.run_duration)

    @admin.display(description="error")
    def errors(self, obj: Fire) -> str:
        """The publish error and the run's error, whichever there are."""
        return " / ".join(e for e in (obj.error, obj.run_error) if e) or "-"


@admin.register(Beat)
class BeatAdmin(ReadOnly):
    """Running beats: heartbeats written every ``dbeat_max_interval`` (the last tick) and
    removed on a clean stop; live when :meth:`Schedules.live_beats` counts them (seen within 3 x
    ``dbeat_max_interval`` on the database's clock), as the trigger action tells."""

    list_display = ("name", "hostname", "pid", "version", "started", "last_seen", "liveness")
    search_fields = ("name", "hostname")
    fields = ("name", "hostname", "pid", "version", "started", "last_seen", "liveness")

    started = instant("started_at", "started at")
    last_seen = instant("last_seen_at", "last tick (heartbeat)")

    @admin.display(description="state")
    def liveness(self, obj: Beat) -> str:
        api = schedules()
        age = api.clock.now() - obj.last_seen_at
        live = obj.name in {beat.name for beat in api.live_beats()}  # the trigger action's rule
        return f"{'live' if live else 'silent'}, seen {age.total_seconds():.0f} s ago"


@admin.register(AuditEntry)
class AuditAdmin(ReadOnly):
    """The audit trail, newest first: read-only, as every surface writes it with its edits."""

    list_display = ("when", "actor", "surface", "action", "about", "changed")
    list_filter = ("surface", "action")
    search_fields = ("schedule_name", "schedule_uid", "actor")
    fields = ("when", "actor", "surface", "action", "about", "schedule_uid", "changed")

    when = instant("at", "at")

    @admin.display(description="schedule or calendar", ordering="schedule_name")
    def about(self, obj: AuditEntry) -> str:
        return subject(obj.action, obj.schedule_name)

    @admin.display(description="changes")
    def changed(self, obj: AuditEntry) -> str:
        """As ``dbeat log`` shows them: ``field: old -> new; ...``."""
        return change_text(decoded_changes(obj.changes)) or "-"


admin.site.register(Calendar, CalendarAdmin)
