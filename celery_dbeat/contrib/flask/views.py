"""The Flask-Admin views: schedules (list, create, edit, delete, bulk actions) and fire history.

Flask-Admin reads rows through an ORM session; it never writes them. Every write goes through
:class:`celery_dbeat.api.Schedules` (after :func:`~celery_dbeat.definitions.definition_from_form`
for forms), so validation and the ``next_run_at`` rules are those of every other surface.

On SQLite every transaction takes the database's write lock (``BEGIN IMMEDIATE``, see
``store/database.py``), so the session's read transaction is ended before each API call, which
opens its own connection; otherwise the two would wait on each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from flask import Blueprint, abort, flash, g, url_for
from flask.typing import ResponseReturnValue
from flask_admin.actions import action  # type: ignore[import-untyped]
from flask_admin.contrib.sqla import ModelView  # type: ignore[import-untyped]
from flask_admin.contrib.sqla import filters as sqla_filters  # type: ignore[import-untyped]
from flask_admin.contrib.sqla.typefmt import (  # type: ignore[import-untyped]
    DEFAULT_FORMATTERS,
)
from flask_admin.form import SecureForm  # type: ignore[import-untyped]
from flask_admin.helpers import get_form_data  # type: ignore[import-untyped]
from flask_admin.model.typefmt import DETAIL_FORMATTERS  # type: ignore[import-untyped]
from jinja2 import ChoiceLoader, FileSystemLoader
from markupsafe import Markup
from sqlalchemy.orm import Session, scoped_session

from ...api import Schedules
from ...definitions import definition_from_form
from ...errors import DBeatError, ScheduleExists, ValidationError
from ...store.manage import CONFIG_ORIGIN
from ...store.models import Fire, FireStatus, Schedule
from .display import (
    STATES,
    duration,
    fire_outcome,
    instant,
    local_instant,
    schedule_state,
    spec_summary,
)
from .forms import ScheduleForm, field_of, form_data, form_values, write_arguments

__all__ = ["FIRES_ENDPOINT", "SCHEDULES_ENDPOINT", "Access", "AdminSession", "FireView", "ScheduleView"]

SCHEDULES_ENDPOINT = "dbeat_schedules"
FIRES_ENDPOINT = "dbeat_fires"
TEMPLATES = Path(__file__).parent / "templates"
_STATE_BADGES = {"active": "success", "paused": "secondary", "finished": "dark", "error": "danger"}
_FIRE_BADGES = {
    FireStatus.SENT.value: "success",
    FireStatus.PENDING.value: "info",
    FireStatus.SKIPPED.value: "secondary",
    FireStatus.DROPPED.value: "warning",
    FireStatus.FAILED.value: "danger",
}


@dataclass(frozen=True)
class Access:
    """The host application's decision: ``is_accessible()`` is asked on every request;
    ``on_refused()`` answers a refused one (a redirect to a login page, a 401 asking for HTTP
    basic auth, ...). Without it a refused request gets 403."""

    is_accessible: Callable[[], bool]
    on_refused: Callable[[], ResponseReturnValue] | None = None


class AdminSession(scoped_session[Session]):
    """A scoped ORM session that is its own ``.session``.

    Flask-Admin 2 takes an object with a ``.session`` (Flask-SQLAlchemy's ``db``) and deprecates
    plain sessions; celery-dbeat's database is not the host's Flask-SQLAlchemy one.
    """

    @property
    def session(self) -> AdminSession:
        return self


def _datetime(view: Any, value: datetime, name: str) -> str:
    return instant(value)


def _badge(text: str, kind: str, title: str = "") -> Markup:
    return Markup('<span class="badge badge-{}" title="{}">{}</span>').format(kind, title, text)


class _DBeatView(ModelView):  # type: ignore[misc]
    """What both views share: the host's access rule, the session's lifetime, the templates."""

    form_base_class = SecureForm
    named_filter_urls = True
    can_set_page_size = True
    page_size = 50
    column_type_formatters = {**DEFAULT_FORMATTERS, datetime: _datetime}
    column_type_formatters_detail = {**DETAIL_FORMATTERS, datetime: _datetime}

    def __init__(
        self,
        model: type[Any],
        session: AdminSession,
        access: Access,
        *,
        name: str,
        category: str | None,
        endpoint: str,
        url: str,
    ) -> None:
        self.access = access
        super().__init__(model, session, name=name, category=category, endpoint=endpoint, url=url)

    def is_accessible(self) -> bool:
        return bool(self.access.is_accessible())

    def inaccessible_callback(self, name: str, **kwargs: Any) -> ResponseReturnValue:
        if self.access.on_refused is not None:
            return self.access.on_refused()
        abort(403)

    def create_blueprint(self, admin: Any) -> Blueprint:
        blueprint: Blueprint = super().create_blueprint(admin)
        # Our templates first, then Flask-Admin's; the host app's own loader comes before both,
        # so a host can override celery_dbeat/*.html.
        loaders = [FileSystemLoader(TEMPLATES)]
        if blueprint.jinja_loader is not None:
            loaders.append(blueprint.jinja_loader)  # type: ignore[arg-type]
        blueprint.jinja_loader = ChoiceLoader(loaders)  # type: ignore[assignment]
        blueprint.teardown_request(self._release_session)
        return blueprint

    def _release_session(self, exc: BaseException | None) -> None:
        self.session.remove()

    def _end_read(self) -> None:
        """End the session's read transaction (keeping loaded rows) before an API call."""
        self.session.commit()


# Schedules -------------------------------------------------------------------------------------


class StateFilter(sqla_filters.BaseSQLAFilter):  # type: ignore[misc]
    """``active``, ``paused``, ``finished`` or ``error``, as :func:`schedule_state` says."""

    def __init__(self) -> None:
        super().__init__(Schedule.enabled, "State", options=[(s, s) for s in STATES])

    def validate(self, value: Any) -> bool:
        return value in STATES

    def apply(self, query: Any, value: str, alias: Any = None) -> Any:
        unfinished = Schedule.finished_at.is_(None)
        healthy = sa.and_(unfinished, Schedule.last_error.is_(None))
        clause = {
            "finished": Schedule.finished_at.is_not(None),
            "error": sa.and_(unfinished, Schedule.last_error.is_not(None)),
            "active": sa.and_(healthy, Schedule.enabled == sa.true()),
            "paused": sa.and_(healthy, Schedule.enabled == sa.false()),
        }[value]
        return query.filter(clause)

    def operation(self) -> str:
        return "is"


def _name(view: ScheduleView, context: Any, row: Schedule, name: str) -> Markup:
    url = url_for(f"{view.endpoint}.edit_view", id=row.id)
    return Markup('<a href="{}">{}</a>').format(url, row.name)


def _spec(view: ScheduleView, context: Any, row: Schedule, name: str) -> str:
    return spec_summary(row)


def _state(view: ScheduleView, context: Any, row: Schedule, name: str) -> Markup:
    state = schedule_state(row)
    return _badge(state, _STATE_BADGES[state], row.last_error or "")


def _last_error(view: ScheduleView, context: Any, row: Schedule, name: str) -> Markup:
    error = row.last_error or ""
    short = error if len(error) <= 80 else error[:79] + "…"
    return Markup('<span title="{}">{}</span>').format(error, short)


def _history(view: ScheduleView, context: Any, row: Schedule, name: str) -> Markup:
    return Markup('<a href="{}">history</a>').format(view.history.history_url(row.name))


class ScheduleView(_DBeatView):
    """Schedules: list, search, filters, create and edit forms, delete, pause/resume/run now."""

    can_view_details = False
    form = ScheduleForm
    create_template = "celery_dbeat/schedule_create.html"
    edit_template = "celery_dbeat/schedule_edit.html"
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
    column_labels = {
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
        sqla_filters.FilterEqual(
            Schedule.kind, "Kind", options=[(k, k) for k in ("cron", "interval", "once")]
        ),
        sqla_filters.FilterEqual(
            Schedule.origin,
            "Origin",
            options=[(o, o) for o in ("api", "config", "config:removed")],
        ),
        StateFilter(),
    )
    column_formatters = {
        "name": _name,
        "spec": _spec,
        "state": _state,
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
    ) -> None:
        self.schedules = schedules
        self.history = history
        super().__init__(
            Schedule, session, access, name=name, category=category, endpoint=endpoint, url=url
        )

    # Forms -------------------------------------------------------------------------------------

    def edit_form(self, obj: Schedule | None = None) -> Any:
        values = form_values(obj) if obj is not None else {}
        return self._edit_form_class(get_form_data(), data=values)

    def create_model(self, form: Any) -> Schedule | bool:
        try:
            definition = definition_from_form(form_data(form))
            self._end_read()
            info = self.schedules.add(
                definition.name, enabled=definition.enabled, **write_arguments(definition)
            )
        except DBeatError as exc:
            self._not_saved(form, exc)
            return False
        model = self.session.get(Schedule, info.id)
        self.after_model_change(form, model, True)
        return model if model is not None else True

    def update_model(self, form: Any, model: Schedule) -> bool:
        name, was_enabled = model.name, model.enabled
        try:
            definition = definition_from_form(form_data(form))
            self._end_read()
            self.schedules.update(name, name=definition.name, **write_arguments(definition))
        except DBeatError as exc:
            self._not_saved(form, exc)
            return False
        if definition.enabled != was_enabled:
            toggle = self.schedules.resume if definition.enabled else self.schedules.pause
            try:
                toggle(definition.name)
            except DBeatError as exc:
                self._not_saved(form, exc, field="enabled", saved=True)
                return False
        self.session.refresh(model)
        self.after_model_change(form, model, False)
        return True

    def _not_saved(
        self, form: Any, exc: DBeatError, *, field: str | None = None, saved: bool = False
    ) -> None:
        if field is None and isinstance(exc, ValidationError):
            field = field_of(exc)
        elif field is None and isinstance(exc, ScheduleExists):
            field = "name"
        if field is not None:
            form[field].errors = [*form[field].errors, str(exc)]
        prefix = "Saved, except" if saved else "Schedule not saved"
        flash(f"{prefix}: {exc}", "error")

    def render(self, template: str, **kwargs: Any) -> str:
        model = kwargs.get("model")
        if template == self.edit_template and isinstance(model, Schedule):
            kwargs["dbeat"] = self._overview(model)
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
            "next_run_at": instant(row.next_run_at),
            "last_slot": instant(row.last_slot),
            "run_count": row.run_count,
            "last_error": row.last_error,
            "config": row.origin == CONFIG_ORIGIN,
            "origin": row.origin,
            "history_url": self.history.history_url(row.name),
            "preview": [],
            "preview_error": None,
        }
        self._end_read()
        try:
            slots = self.schedules.preview(row.name, count=count)
            overview["preview"] = [(instant(s), local_instant(s, zone)) for s in slots]
        except (DBeatError, LookupError, ValueError) as exc:
            overview["preview_error"] = str(exc)
        return overview

    # Deletes and bulk actions ------------------------------------------------------------------

    def delete_model(self, model: Schedule) -> bool:
        name, origin = model.name, model.origin
        self.on_model_delete(model)
        self._end_read()
        try:
            self.schedules.remove(name)
        except DBeatError as exc:
            flash(f"Schedule {name!r} not deleted: {exc}", "error")
            return False
        if origin == CONFIG_ORIGIN:
            flash(
                f"{name!r} comes from beat_schedule: the next beat start creates it again. "
                "Remove it from beat_schedule to disable it for good.",
                "warning",
            )
        self.after_model_delete(model)
        return True

    def _selected(self, ids: Iterable[str]) -> list[Schedule]:
        keys = [int(i) for i in ids if str(i).isdigit()]
        rows = list(
            self.session.scalars(
                sa.select(Schedule).where(Schedule.id.in_(keys)).order_by(Schedule.name)
            )
        )
        self._end_read()
        return rows

    def _each(self, ids: Sequence[str], done_text: str, call: Callable[[str], object]) -> None:
        done: list[str] = []
        for row in self._selected(ids):
            try:
                call(row.name)
            except DBeatError as exc:
                flash(f"{row.name}: {exc}", "error")
            else:
                done.append(row.name)
        if done:
            flash(f"{done_text} {len(done)} schedule(s): {', '.join(done)}", "success")

    @action("delete", "Delete", "Delete the selected schedules and their fire history?")
    def action_delete(self, ids: Sequence[str]) -> None:
        for row in self._selected(ids):
            self.delete_model(row)

    @action("pause", "Pause", "Pause the selected schedules?")
    def action_pause(self, ids: Sequence[str]) -> None:
        self._each(ids, "Paused", self.schedules.pause)

    @action("resume", "Resume", "Resume the selected schedules? Slots missed while paused are not sent.")
    def action_resume(self, ids: Sequence[str]) -> None:
        self._each(ids, "Resumed", self.schedules.resume)

    @action("trigger", "Run now", "Send the selected schedules' tasks once now?")
    def action_trigger(self, ids: Sequence[str]) -> None:
        self._each(ids, "Recorded a run-now fire (a running beat sends it) for", self.schedules.trigger)


# Fire history ----------------------------------------------------------------------------------


class ScheduleNameFilter(sqla_filters.BaseSQLAFilter):  # type: ignore[misc]
    """Fires of the schedule with this name (the link from a schedule to its history)."""

    def __init__(self) -> None:
        super().__init__(Fire.schedule_id, "Schedule")

    def apply(self, query: Any, value: str, alias: Any = None) -> Any:
        ids = sa.select(Schedule.id).where(Schedule.name == value)
        return query.filter(Fire.schedule_id.in_(ids.scalar_subquery()))

    def operation(self) -> str:
        return "is"


def _schedule(view: FireView, context: Any, fire: Fire, name: str) -> Markup:
    names: dict[int, str] = g.setdefault("dbeat_schedule_names", {})
    if fire.schedule_id not in names:
        schedule = view.session.get(Schedule, fire.schedule_id)
        names[fire.schedule_id] = schedule.name if schedule is not None else "?"
    url = url_for(f"{view.schedules_endpoint}.edit_view", id=fire.schedule_id)
    return Markup('<a href="{}">{}</a>').format(url, names[fire.schedule_id])


def _lag(view: FireView, context: Any, fire: Fire, name: str) -> str:
    return "" if fire.sent_at is None else duration(fire.sent_at - fire.slot)


def _outcome(view: FireView, context: Any, fire: Fire, name: str) -> Markup:
    return _badge(fire_outcome(fire), _FIRE_BADGES.get(fire.status, "light"), fire.error or "")


class FireView(_DBeatView):
    """Read-only fire history, newest slot first; filter by schedule, status or run-now."""

    can_create = False
    can_edit = False
    can_delete = False
    can_view_details = True
    list_template = "celery_dbeat/fire_list.html"
    column_list = (
        "schedule",
        "slot",
        "sent_at",
        "lag",
        "status",
        "attempts",
        "beat",
        "task_id",
        "error",
    )
    column_details_list = (
        "schedule",
        "slot",
        "manual",
        "status",
        "slot_count",
        "first_slot",
        "recorded_at",
        "sent_at",
        "lag",
        "lease_until",
        "attempts",
        "beat",
        "task_id",
        "error",
    )
    column_labels = {
        "sent_at": "Published",
        "lag": "Lag",
        "status": "Outcome",
        "task_id": "Task id",
        "manual": "Run now",
    }
    column_sortable_list = ("slot", "sent_at", "status", "attempts", "beat")
    column_default_sort = [("slot", True), ("id", True)]
    column_searchable_list = ("task_id", "beat")
    column_filters = (
        ScheduleNameFilter(),
        sqla_filters.FilterEqual(Fire.status, "Outcome", options=[(s.value, s.value) for s in FireStatus]),
        sqla_filters.BooleanEqualFilter(Fire.manual, "Run now"),
    )
    column_formatters = {"schedule": _schedule, "lag": _lag, "status": _outcome}

    def __init__(
        self,
        session: AdminSession,
        access: Access,
        *,
        name: str = "Fire history",
        category: str | None = None,
        endpoint: str = FIRES_ENDPOINT,
        url: str = "fires",
        schedules_endpoint: str = SCHEDULES_ENDPOINT,
    ) -> None:
        self.schedules_endpoint = schedules_endpoint
        super().__init__(
            Fire, session, access, name=name, category=category, endpoint=endpoint, url=url
        )

    def history_url(self, schedule: str) -> str:
        """The history page filtered to one schedule."""
        index = next(i for i, f in enumerate(self._filters) if isinstance(f, ScheduleNameFilter))
        key = f"flt0_{self.get_filter_arg(index, self._filters[index])}"
        return url_for(f"{self.endpoint}.index_view", **{key: schedule})

    def get_list(self, *args: Any, **kwargs: Any) -> Any:
        count, fires = super().get_list(*args, **kwargs)
        ids = {fire.schedule_id for fire in fires}
        if ids:
            rows = self.session.execute(
                sa.select(Schedule.id, Schedule.name).where(Schedule.id.in_(ids))
            )
            g.dbeat_schedule_names = {row.id: row.name for row in rows}
        return count, fires
