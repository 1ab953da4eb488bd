"""Django admin for celery-dbeat: schedules (edit, pause, resume, trigger), fires, beats, the
audit trail and the exclusion calendars (edited through the API: ``calendars.py``).

Reads go through the read-only models, and this module says how each admin lists and shows
them; every write goes through :class:`celery_dbeat.api.Schedules` (the schedule admin's in
``schedule_writes.py``). Until celery-dbeat's tables are there, every view shows what to do
instead (see ``tables.py``). A row holding a value that cannot be read is shown with its error
(``models.py``).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse
from django.urls import path, reverse
from django.utils.html import format_html

from celery_dbeat.core.audit import change_text, decoded_changes, subject
from celery_dbeat.core.definitions import SPEC_COLUMNS, TIMING_COLUMNS
from celery_dbeat.core.errors import ConfigOwned, DBeatError
from celery_dbeat.core.fields import KIND_GROUPS, ZONED
from celery_dbeat.core.specs import spec_from_fields
from celery_dbeat.core.states import state_note

from .base import ReadOnly
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
from .explain import explain_link, explain_view
from .forms import ScheduleForm
from .load import load_view
from .models import AuditEntry, Beat, Calendar, Fire, Schedule
from .schedule_writes import ScheduleWrites
from .tables import tables_problem

__all__ = ["AuditAdmin", "BeatAdmin", "CalendarAdmin", "FireAdmin", "ScheduleAdmin"]

#: Slots shown by the change page's preview, and fires in its recent history.
PREVIEW_COUNT = 5
RECENT_FIRES = 10


@admin.register(Schedule)
class ScheduleAdmin(ScheduleWrites):
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
        "alert",
    )
    list_filter = (StateFilter, "kind", "origin", "misfire_policy", "overlap_policy")
    search_fields = ("name", "task")

    save_on_top = True
    state_fields = (
        "state",
        "paused",
        "next_run",
        "due",
        "next_slots",
        "last_fired",
        "run_count",
        "failures",
        "alert",
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

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        """The edit page says when the schedule comes from beat_schedule, and which of its
        values cannot be read."""
        if request.method == "GET" and tables_problem() is None:
            obj = self.get_object(request, object_id)
            if obj is not None and obj.from_beat_schedule:
                self.message_user(request, ConfigOwned.ADMIN_NOTE, messages.WARNING)
            if obj is not None and obj.unreadable is not None:
                self.message_user(request, obj.unreadable.form_note(), messages.ERROR)
        return super().change_view(request, object_id, form_url, extra_context)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets: list[tuple[str | None, dict[str, Any]]] = [
            (None, {"fields": ("name", "task", "enabled")}),
            ("When", {"fields": ("kind",)}),
        ]
        for kinds, fields in KIND_GROUPS:  # shown by the kind menu's script (dbeat-kind-<kind>)
            classes = ("dbeat-kind", *(f"dbeat-kind-{kind}" for kind in kinds))
            title = " and ".join(kind.title() for kind in kinds)
            used = " or ".join(kinds)
            fieldsets.append(
                (f"{title} (used when the kind is {used})", {"fields": fields, "classes": classes})
            )
        fieldsets += [
            ("Bounds and jitter", {"fields": ("start_at", "end_at", "max_runs", "jitter")}),
            ("Exclusion calendar", {"fields": ("calendar",)}),
            ("Payload", {"fields": ("args", "kwargs", "options")}),
            ("Slot arguments", {"fields": ("slot_kwarg", "previous_slot_kwarg")}),
            ("Misfires", {"fields": ("misfire_policy", "misfire_grace", "catchup_limit")}),
            ("Overlapping runs", {"fields": ("overlap_policy", "max_run_time")}),
            ("Failures and history", {"fields": ("pause_after_failures", "history_limit")}),
            (
                "Alerts",
                {
                    "fields": (
                        "alert_after_failures",
                        "alert_deadline",
                        "alert_task",
                        "alert_webhook",
                    )
                },
            ),
        ]
        if obj is not None and obj.from_beat_schedule:
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

    @admin.display(description="alert")
    def alert(self, obj: Schedule) -> str:
        """The alert episode it is in (``failing`` or ``missed``, since which slot); ``-``."""
        if obj.alert_kind is None:
            return "-"
        since = obj.alert_episode.isoformat() if obj.alert_episode is not None else "?"
        return f"{obj.alert_kind} since {since}"

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
        listed = next_slots_html(slots, obj.timezone if obj.kind in ZONED else None)
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
        "why",
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
        "why",
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

    @admin.display(description="explain")
    def why(self, obj: Fire) -> str:
        """A link to why the slot did or did not fire (:mod:`.explain`)."""
        return explain_link(self, obj)

    def get_urls(self) -> list[Any]:
        """``explain/``: why a slot did or did not fire (:mod:`.explain`)."""
        page = self.admin_site.admin_view(lambda request: explain_view(self, request))
        name = f"{self.opts.app_label}_{self.opts.model_name}_explain"
        return [path("explain/", page, name=name), *super().get_urls()]


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
