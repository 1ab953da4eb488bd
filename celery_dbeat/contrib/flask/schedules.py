"""The schedules view: list with search and filters, create and edit forms (with a preview of
the next slots and the registered task names as suggestions), delete, the pause, resume and
run-now bulk actions, and backfill (a page of its own: the range, then each one's report)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, ClassVar, TypeAlias, cast

import sqlalchemy as sa
from flask import abort, flash, redirect, request, url_for
from flask_admin import expose
from flask_admin.contrib.sqla import filters as sqla_filters
from flask_admin.form import rules
from flask_admin.helpers import get_form_data
from markupsafe import Markup
from wtforms import BooleanField

from ...api import Schedules
from ...core.definitions import (
    MAX_PAUSE_NOTE,
    TIMING_COLUMNS,
    definition_from_form,
    form_text,
    pause_note,
)
from ...core.errors import ConfigOwned, DBeatError, ScheduleExists, ValidationError
from ...core.fields import KINDS
from ...core.formats import parse_instant
from ...core.overlap import OverlapPolicy
from ...core.states import STATES, schedule_state, state_note
from ...store.models import Schedule
from ...store.schedules import CONFIG_ORIGIN, state_expression
from ...task_names import unknown_task_warning
from .base import SCHEDULES_ENDPOINT, Access, AdminSession, DBeatView, badge, bulk_action
from .display import (
    instant,
    local_instant,
    next_run,
    overlap_summary,
    spec_summary,
)
from .forms import BackfillForm, ScheduleForm, field_of, form_data, schedule_form_rules
from .history import FireView

__all__ = ["ScheduleView", "StateFilter", "TaskNames"]

#: Where the form's task suggestions come from: the names, or a function called at each request
#: that returns them (``lambda: celery_app.tasks.keys()``).
TaskNames: TypeAlias = Iterable[str] | Callable[[], Iterable[str]]
#: The id of the task names' ``<datalist>``, which the task field points to.
TASK_NAMES_LIST = "dbeat-task-names"

_STATE_BADGES = {"active": "success", "paused": "secondary", "finished": "dark", "error": "danger"}


class StateFilter(sqla_filters.BaseSQLAFilter):
    """``active``, ``paused``, ``finished`` or ``error``, as :func:`schedule_state` says."""

    def __init__(self) -> None:
        super().__init__(Schedule.enabled, "State", options=[(s, s) for s in STATES])

    def validate(self, value: Any) -> bool:
        return value in STATES

    def apply(self, query: Any, value: str, alias: Any = None) -> Any:
        return query.filter(state_expression(cast(sa.Table, Schedule.__table__)) == value)

    def operation(self) -> str:
        return "is"


def _name(view: ScheduleView, context: Any, row: Schedule, name: str) -> Markup:
    url = url_for(f"{view.endpoint}.edit_view", id=row.id)
    return Markup('<a href="{}">{}</a>').format(url, row.name)


def _spec(view: ScheduleView, context: Any, row: Schedule, name: str) -> str:
    problem = view.unreadable(row)
    lost = [c for c in problem.columns if c in TIMING_COLUMNS] if problem is not None else []
    unread = f" ({', '.join(lost)} cannot be read)" if lost else ""
    return spec_summary(row) + unread


def _next_run(view: ScheduleView, context: Any, row: Schedule, name: str) -> Markup:
    text = next_run(row)
    if row.enabled or row.finished_at is not None:
        return Markup("{}").format(text)
    return Markup('<span class="text-muted" title="{}">{}</span>').format(
        "Nothing is sent until the schedule is resumed", text
    )


def _state(view: ScheduleView, context: Any, row: Schedule, name: str) -> Markup:
    state = schedule_state(row)
    shown = badge(state, _STATE_BADGES[state], row.last_error or row.pause_note or "")
    if state == "active" and row.consecutive_failures:
        return Markup('{}<br><small class="text-danger dbeat-failures">{}</small>').format(
            shown, state_note(row)
        )
    if state != "paused" or not row.pause_note:
        return shown
    note = row.pause_note if len(row.pause_note) <= 80 else row.pause_note[:79] + "…"
    return Markup('{}<br><small class="text-muted dbeat-pause-note" title="{}">{}</small>').format(
        shown, row.pause_note, note
    )


#: The list page's note box, sent with the action form (``schedule_list.html``).
PAUSE_NOTE_FIELD = "pause_note"


def admin_pause_note() -> str:
    """The note of a pause made from the admin: the one typed in the list page's note box, as the
    API checks it (raises :class:`ValidationError` naming ``note``); left empty, one that says
    where it came from and, when the request was authenticated, by whom."""
    typed = pause_note(str(request.form.get(PAUSE_NOTE_FIELD, "")).strip() or None)
    if typed is not None:
        return typed
    auth = request.authorization
    user = (auth.username if auth is not None else None) or request.remote_user
    return f"paused from the admin by {user}" if user else "paused from the admin"


def _last_error(view: ScheduleView, context: Any, row: Schedule, name: str) -> Markup:
    error = row.last_error or ""
    short = error if len(error) <= 80 else error[:79] + "…"
    return Markup('<span title="{}">{}</span>').format(error, short)


def _history(view: ScheduleView, context: Any, row: Schedule, name: str) -> Markup:
    return Markup('<a href="{}">history</a>').format(view.history.history_url(row.name))


#: The edit form's box that forces an edit of a schedule from beat_schedule (shown on theirs only).
FORCE_FIELD = "force"


class _ForceBox(rules.Field):
    """The force box, where the form has one (:meth:`ScheduleView.edit_form` keeps it for a
    schedule from beat_schedule only)."""

    def __call__(self, form: Any, form_opts: Any = None, field_args: Any = None) -> Any:
        if getattr(form, self.field_name, None) is None:
            return ""
        return super().__call__(form, form_opts, field_args)


def _definition_text(row: Schedule) -> dict[str, Any]:
    """What a sync of beat_schedule puts back: every field of the form but ``enabled``."""
    return {key: value for key, value in form_text(row).items() if key != "enabled"}


class ScheduleView(DBeatView):
    """Schedules: list, search, filters, create and edit forms, delete, pause/resume/run now,
    backfill."""

    can_view_details = False
    form = ScheduleForm
    form_rules = schedule_form_rules()
    form_edit_rules = (*schedule_form_rules(), _ForceBox(FORCE_FIELD))
    list_template = "celery_dbeat/schedule_list.html"
    pause_note_field = PAUSE_NOTE_FIELD
    pause_note_length = MAX_PAUSE_NOTE
    create_template = "celery_dbeat/schedule_create.html"
    edit_template = "celery_dbeat/schedule_edit.html"
    backfill_template = "celery_dbeat/backfill.html"
    column_list = (
        "name",
        "task",
        "spec",
        "state",
        "next_run_at",
        "last_slot",
        "run_count",
        "last_error",
        "history",
    )
    column_labels: ClassVar[dict[str, str]] = {
        "spec": "When",
        "next_run_at": "Next run",
        "last_slot": "Last slot",
        "run_count": "Runs",
        "last_error": "Last error",
        "history": "Fires",
    }
    column_sortable_list = ("name", "task", "next_run_at", "last_slot", "run_count")
    column_default_sort = ("name", False)
    column_searchable_list = ("name", "task")
    column_filters = (
        sqla_filters.BooleanEqualFilter(Schedule.enabled, "Enabled"),
        sqla_filters.FilterEqual(Schedule.kind, "Kind", options=[(k, k) for k in KINDS]),
        sqla_filters.FilterEqual(
            Schedule.origin,
            "Origin",
            options=[(o, o) for o in ("api", "config", "config:removed")],
        ),
        StateFilter(),
        sqla_filters.FilterEqual(
            Schedule.overlap_policy,
            "Overlap policy",
            options=[(p.value, p.value) for p in OverlapPolicy if p is not OverlapPolicy.ALLOW],
        ),
    )
    column_formatters: ClassVar[dict[str, Any]] = {
        "name": _name,
        "spec": _spec,
        "state": _state,
        "next_run_at": _next_run,
        "last_error": _last_error,
        "history": _history,
    }

    def __init__(
        self,
        schedules: Schedules,
        session: AdminSession,
        access: Access,
        *,
        history: FireView,
        name: str = "Schedules",
        category: str | None = None,
        endpoint: str = SCHEDULES_ENDPOINT,
        url: str = "schedules",
        task_names: TaskNames | None = None,
        actor: Callable[[], str | None] | None = None,
    ) -> None:
        """``task_names``: the registered Celery task names the task field suggests (free text
        stays allowed); a saved task that is not among them gets a warning, not a refusal,
        since it may be registered only in the workers. ``actor``: the logged-in user's name,
        for the audit trail (default: the HTTP basic auth user)."""
        self.schedules = schedules
        self.actor = actor
        self.history = history
        self.task_names = _task_names(task_names)
        if self.task_names is not None:
            self.form_widget_args = {"task": {"list": TASK_NAMES_LIST}}
        super().__init__(
            Schedule, session, access, name=name, category=category, endpoint=endpoint, url=url
        )

    # Forms -------------------------------------------------------------------------------------

    def get_edit_form(self) -> type[Any]:
        """The schedule form, with the box that forces an edit of a schedule from beat_schedule
        (the API refuses it without: :class:`ConfigOwned`)."""
        box = BooleanField(ConfigOwned.EDIT_ANYWAY, default=False)
        return type("ScheduleEditForm", (self.get_form(),), {FORCE_FIELD: box})

    def edit_form(self, obj: Schedule | None = None) -> Any:
        values = form_text(obj) if obj is not None else {}
        form = self._edit_form_class(get_form_data(), data=values)
        if obj is None or obj.origin != CONFIG_ORIGIN:
            del form[FORCE_FIELD]
        return form

    def create_model(self, form: Any) -> Schedule | bool:
        try:
            definition = definition_from_form(form_data(form))
            self.end_read()
            with self._told_here():
                info = self.schedules.create(definition, actor=self.who())
        except DBeatError as exc:
            self._not_saved(form, exc)
            return False
        self._check_task(definition.task)
        model = self.load(info.id)
        self.after_model_change(form, model, True)
        return model if model is not None else True

    def update_model(self, form: Any, model: Schedule) -> bool:
        box = getattr(form, FORCE_FIELD, None)
        before = _definition_text(model)
        try:
            definition = definition_from_form(form_data(form))
            self.end_read()
            with self._told_here():
                self.schedules.replace(
                    model.name,
                    definition,
                    force=box is not None and bool(box.data),
                    actor=self.who(),
                )
        except DBeatError as exc:
            self._not_saved(form, exc)
            return False
        self._check_task(definition.task)
        self.load(model.id)  # the same object, read again
        if model.origin == CONFIG_ORIGIN and _definition_text(model) != before:
            flash(f"Saved, but {ConfigOwned.forced(model.name)}.", "warning")
        self.after_model_change(form, model, False)
        return True

    def _not_saved(
        self, form: Any, exc: DBeatError, *, field: str | None = None, saved: bool = False
    ) -> None:
        text = str(exc)
        if field is None and isinstance(exc, ValidationError):
            field = field_of(exc)
        elif field is None and isinstance(exc, ScheduleExists):
            field = "name"
        elif isinstance(exc, ConfigOwned):
            text = exc.told(ConfigOwned.TICK_EDIT_ANYWAY)
            has_box = getattr(form, FORCE_FIELD, None) is not None
            field = field or (FORCE_FIELD if has_box else None)
        if field is not None:
            form[field].errors = [*form[field].errors, text]
        prefix = "Saved, except" if saved else "Schedule not saved"
        flash(f"{prefix}: {text}", "error")

    def _told_here(self) -> AbstractContextManager[None]:
        """Around a save: with task names, this view warns about an unknown task itself
        (:meth:`_check_task`), so the API (given the app by ``Schedules.from_app``) does not log
        it a second time."""
        return (
            nullcontext() if self.task_names is None else self.schedules.quiet_about_unknown_tasks()
        )

    def _check_task(self, task: str) -> None:
        """Warn, after a save, about a task name this app has not registered."""
        known = None if self.task_names is None else self.task_names()
        if known is not None and task not in known:
            flash(f"Saved, but {unknown_task_warning([task], known=known)}.", "warning")

    def render(self, template: str, **kwargs: Any) -> str:
        model = kwargs.get("model")
        if template == self.edit_template and isinstance(model, Schedule):
            kwargs["dbeat"] = self._overview(model)
        if template in (self.create_template, self.edit_template) and self.task_names is not None:
            kwargs["dbeat_task_names"] = self.task_names()
        result: str = super().render(template, **kwargs)
        return result

    def _overview(self, row: Schedule, count: int = 5) -> dict[str, Any]:
        """What the edit page shows above the form: state, the next slots, links."""
        zone = row.timezone if row.kind == "cron" and row.timezone else "UTC"
        overview: dict[str, Any] = {
            "state": schedule_state(row),
            "badge": _STATE_BADGES[schedule_state(row)],
            "spec": spec_summary(row),
            "zone": zone,
            "next_run_at": next_run(row),
            "paused": not row.enabled and row.finished_at is None,
            "pause_note": row.pause_note,
            "paused_at": instant(row.paused_at),
            "pause_source": row.pause_source,
            "last_slot": instant(row.last_slot),
            "run_count": row.run_count,
            "failures": row.consecutive_failures,
            "pause_after_failures": row.pause_after_failures,
            "overlap": overlap_summary(row),
            "last_error": row.last_error,
            "pruned_until": instant(row.pruned_until),
            "config": ConfigOwned.ADMIN_NOTE if row.origin == CONFIG_ORIGIN else None,
            "origin": row.origin,
            "history_url": self.history.history_url(row.name),
            "preview": [],
            "preview_removes": False,
            "preview_error": None,
            "unreadable": None,
        }
        problem = self.unreadable(row)
        if problem is not None:
            overview["unreadable"] = problem.form_note()
        self.end_read()
        try:
            slots = self.schedules.preview(row.name, count=count)
            overview["preview"] = [
                (instant(p.slot), local_instant(p.slot, zone), p.excluded_by) for p in slots
            ]
            overview["preview_removes"] = any(p.excluded_by for p in slots)
        except (DBeatError, LookupError, ValueError) as exc:
            overview["preview_error"] = str(exc)
        return overview

    # Deletes and bulk actions ------------------------------------------------------------------

    def delete_model(self, model: Schedule) -> bool:
        """Delete through the API, which refuses a schedule from beat_schedule (the admin offers
        no override: the next beat start would create it again)."""
        name = model.name
        self.on_model_delete(model)
        self.end_read()
        try:
            self.schedules.remove(name, actor=self.who())
        except ConfigOwned as exc:
            flash(f"Schedule {name!r} not deleted: {exc.told(None)}", "error")
            return False
        except DBeatError as exc:
            flash(f"Schedule {name!r} not deleted: {exc}", "error")
            return False
        self.after_model_delete(model)
        return True

    def _selected(self, ids: Iterable[str]) -> list[Schedule]:
        keys = [key for key in map(self.key_of, ids) if key is not None]
        rows: list[Schedule] = (
            self.get_query().filter(Schedule.id.in_(keys)).order_by(Schedule.name).all()
        )
        self.read_instants(rows)
        self.end_read()
        return rows

    def _each(self, ids: Sequence[str], call: Callable[..., object]) -> list[str]:
        """Call ``call`` with each selected schedule's name (and the actor); flash each failure;
        return the names it succeeded for."""
        done: list[str] = []
        actor = self.who()
        for row in self._selected(ids):
            try:
                call(row.name, actor=actor)
            except DBeatError as exc:
                flash(f"{row.name}: {exc}", "error")
            else:
                done.append(row.name)
        return done

    def _flash_done(self, text: str, done: list[str]) -> None:
        if done:
            flash(f"{text} {len(done)} schedule(s): {', '.join(done)}", "success")

    @bulk_action("delete", "Delete", "Delete the selected schedules and their fire history?")
    def action_delete(self, ids: Sequence[str]) -> None:
        deleted = [row.name for row in self._selected(ids) if self.delete_model(row)]
        if deleted:
            flash(f"Deleted {len(deleted)} schedule(s): {', '.join(deleted)}", "success")

    @bulk_action("pause", "Pause", "Pause the selected schedules?")
    def action_pause(self, ids: Sequence[str]) -> None:
        """Pause with the note typed in the list page's box, else one naming the user; a note
        the API refuses pauses nothing."""
        try:
            note = admin_pause_note()
        except ValidationError as exc:
            flash(f"Nothing paused: {exc}", "error")
            return
        done = self._each(
            ids, lambda name, actor: self.schedules.pause(name, note=note, actor=actor)
        )
        self._flash_done("Paused", done)

    @bulk_action(
        "resume", "Resume", "Resume the selected schedules? Slots missed while paused are not sent."
    )
    def action_resume(self, ids: Sequence[str]) -> None:
        self._flash_done("Resumed", self._each(ids, self.schedules.resume))

    @bulk_action("trigger", "Run now", "Send the selected schedules' tasks once now?")
    def action_trigger(self, ids: Sequence[str]) -> None:
        done = self._each(ids, self.schedules.trigger)
        if not done:
            return
        listed = f"{len(done)} schedule(s): {', '.join(done)}"
        beats = [beat.name for beat in self.schedules.live_beats()]
        if beats:
            flash(
                f"Run now: {listed} (a running beat sends them now: {', '.join(beats)}).", "success"
            )
        else:
            waiting = self.schedules.no_beat_running("each is")
            flash(f"Run now recorded for {listed}, but {waiting}.", "warning")

    @bulk_action("backfill", "Backfill")
    def action_backfill(self, ids: Sequence[str]) -> Any:
        return redirect(
            url_for(".backfill_view", id=[i for i in ids if self.key_of(i) is not None])
        )

    @expose("/backfill/", methods=("GET", "POST"))
    def backfill_view(self) -> Any:
        """The selected schedules (``?id=``), a range, then each one's report: the slots
        queued (or, dry run, that would be) and those already sent or on their way."""
        if not self.can_edit:
            abort(403)
        rows = self._selected(request.args.getlist("id"))
        if not rows:
            flash("Backfill: select the schedules to backfill first.", "warning")
            return redirect(self.get_url(".index_view"))
        form = BackfillForm(request.form)
        if request.method == "POST" and form.validate():
            start, end = parse_instant(form.start.data), parse_instant(form.end.data)
            for row in rows:
                try:
                    report = self.schedules.backfill(
                        row.name,
                        start,
                        end,
                        limit=form.limit.data,
                        dry_run=form.dry_run.data,
                        resend=form.resend.data,
                        actor=self.who(),
                    )
                except DBeatError as exc:
                    flash(f"{row.name}: {exc}", "error")
                else:
                    flash(report.summary(), "success" if report.queued else "info")
            if not form.dry_run.data:
                return redirect(self.get_url(".index_view"))
        return self.render(
            self.backfill_template,
            form=form,
            rows=rows,
            return_url=self.get_url(".index_view"),
        )


def _task_names(names: TaskNames | None) -> Callable[[], list[str]] | None:
    """``names`` as a function returning them sorted (``None``: no suggestions)."""
    if names is None:
        return None
    if isinstance(names, str):
        raise TypeError("task_names: give a list of task names or a function, not one string")
    if callable(names):
        source = names
        return lambda: sorted(set(source()))
    fixed = sorted(set(names))
    return lambda: fixed
