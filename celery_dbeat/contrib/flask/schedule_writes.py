"""The schedules view's writes (:class:`~.schedules.ScheduleView` inherits them), each through
the management API (:class:`celery_dbeat.api.Schedules`), which validates it and records it in
the audit trail: create and edit, delete, the pause, resume and run-now bulk actions, and
backfill (a page of its own: the range, then each one's report)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from flask import abort, flash, redirect, request, url_for
from flask_admin import expose

from ...api import Schedules
from ...core.definitions import definition_from_form, form_field_of, pause_note
from ...core.errors import ConfigOwned, DBeatError, ScheduleExists, ValidationError
from ...core.formats import parse_instant
from ...store.models import Schedule
from ...task_names import unknown_task_warning
from .base import DBeatView, bulk_action, flash_done
from .forms import BackfillForm, form_data

__all__ = ["FORCE_FIELD", "PAUSE_NOTE_FIELD", "ScheduleWrites", "admin_pause_note"]

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


#: The edit form's box that forces an edit of a schedule from beat_schedule (shown on theirs only).
FORCE_FIELD = "force"


class ScheduleWrites(DBeatView):
    """Saves, deletes and bulk actions of the schedules view, through :attr:`schedules`."""

    #: The management API every write goes through.
    schedules: Schedules
    task_names: Callable[[], list[str]] | None
    backfill_template = "celery_dbeat/backfill.html"

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
        force = box is not None and bool(box.data)
        try:
            definition = definition_from_form(form_data(form))
            self.end_read()
            edits_config = self.schedules.check_replace(model.name, definition, force=force)
            with self._told_here():
                self.schedules.replace(model.name, definition, force=force, actor=self.who())
        except DBeatError as exc:
            self._not_saved(form, exc)
            return False
        self._check_task(definition.task)
        self.load(model.id)  # the same object, read again
        if edits_config:
            flash(f"Saved, but {ConfigOwned.forced(model.name)}.", "warning")
        self.after_model_change(form, model, False)
        return True

    def _not_saved(self, form: Any, exc: DBeatError) -> None:
        text, field = str(exc), None
        if isinstance(exc, ValidationError):
            field = form_field_of(exc)
        elif isinstance(exc, ScheduleExists):
            field = "name"
        elif isinstance(exc, ConfigOwned):
            text = exc.told(ConfigOwned.TICK_EDIT_ANYWAY)
            field = FORCE_FIELD if getattr(form, FORCE_FIELD, None) is not None else None
        if field is not None:
            form[field].errors = [*form[field].errors, text]
        flash(f"Schedule not saved: {text}", "error")

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

    def delete_model(self, model: Schedule) -> bool:
        """Through the API, which refuses a schedule from beat_schedule."""
        return self.delete_with(model, self.schedules.remove, "Schedule")

    def _each(self, ids: Sequence[str], call: Callable[..., object]) -> list[str]:
        """Call ``call`` with each selected schedule's name (and the actor); flash each failure;
        return the names it succeeded for."""
        done: list[str] = []
        actor = self.who()
        for row in self.selected(ids):
            try:
                call(row.name, actor=actor)
            except DBeatError as exc:
                flash(f"{row.name}: {exc}", "error")
            else:
                done.append(row.name)
        return done

    @bulk_action("delete", "Delete", "Delete the selected schedules and their fire history?")
    def action_delete(self, ids: Sequence[str]) -> None:
        self.delete_selected(ids, "schedule")

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
        flash_done("Paused", done, "schedule")

    @bulk_action(
        "resume", "Resume", "Resume the selected schedules? Slots missed while paused are not sent."
    )
    def action_resume(self, ids: Sequence[str]) -> None:
        flash_done("Resumed", self._each(ids, self.schedules.resume), "schedule")

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
        rows = self.selected(request.args.getlist("id"))
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
