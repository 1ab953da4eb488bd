"""The schedules view: list with search and filters, create and edit forms (with a preview of
the next slots and the registered task names as suggestions). Its writes (saves, delete, the
bulk actions, backfill) are :class:`~.schedule_writes.ScheduleWrites`, which it inherits."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypeAlias, cast

import sqlalchemy as sa
from flask_admin.contrib.sqla import filters as sqla_filters
from flask_admin.form import rules
from flask_admin.helpers import get_form_data
from markupsafe import Markup
from typing_extensions import Unpack
from wtforms import BooleanField

from ...api import Schedules
from ...core.definitions import MAX_PAUSE_NOTE, TIMING_COLUMNS, form_text
from ...core.errors import ConfigOwned, DBeatError
from ...core.fields import KINDS, ZONED
from ...core.origins import CONFIG_ORIGIN
from ...core.overlap import OverlapPolicy
from ...core.states import STATES, schedule_state, state_note
from ...store.models import Schedule
from ...store.schedules import state_expression
from .base import SCHEDULES_ENDPOINT, Access, AdminSession, Where, badge, edit_link
from .display import instant, local_instant, next_run, overlap_summary, spec_summary
from .forms import ScheduleForm, schedule_form_rules
from .history import FireView
from .schedule_writes import FORCE_FIELD, PAUSE_NOTE_FIELD, ScheduleWrites

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


def _last_error(view: ScheduleView, context: Any, row: Schedule, name: str) -> Markup:
    error = row.last_error or ""
    short = error if len(error) <= 80 else error[:79] + "…"
    return Markup('<span title="{}">{}</span>').format(error, short)


def _alert(view: ScheduleView, context: Any, row: Schedule, name: str) -> Markup:
    """The alert episode it is in (``failing`` or ``missed``, since which slot); empty."""
    if row.alert_kind is None:
        return Markup("")
    return Markup('<span class="text-danger dbeat-alert" title="since slot {}">{}</span>').format(
        instant(row.alert_episode), row.alert_kind
    )


def _history(view: ScheduleView, context: Any, row: Schedule, name: str) -> Markup:
    return Markup('<a href="{}">history</a>').format(view.history.history_url(row.name))


class _ForceBox(rules.Field):
    """The force box, where the form has one (:meth:`ScheduleView.edit_form` keeps it for a
    schedule from beat_schedule only)."""

    def __call__(self, form: Any, form_opts: Any = None, field_args: Any = None) -> Any:
        if getattr(form, self.field_name, None) is None:
            return ""
        return super().__call__(form, form_opts, field_args)


class ScheduleView(ScheduleWrites):
    """Schedules: list, search, filters, create and edit forms; the writes are inherited."""

    can_view_details = False
    form = ScheduleForm
    form_rules = schedule_form_rules()
    form_edit_rules = (*schedule_form_rules(), _ForceBox(FORCE_FIELD))
    list_template = "celery_dbeat/schedule_list.html"
    pause_note_field = PAUSE_NOTE_FIELD
    pause_note_length = MAX_PAUSE_NOTE
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
        "alert",
        "history",
    )
    column_labels: ClassVar[dict[str, str]] = {
        "spec": "When",
        "next_run_at": "Next run",
        "last_slot": "Last slot",
        "run_count": "Runs",
        "last_error": "Last error",
        "alert": "Alert",
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
        "name": edit_link,
        "spec": _spec,
        "state": _state,
        "next_run_at": _next_run,
        "last_error": _last_error,
        "alert": _alert,
        "history": _history,
    }

    row_model = Schedule
    default_name, default_endpoint, default_url = "Schedules", SCHEDULES_ENDPOINT, "schedules"

    def __init__(
        self,
        schedules: Schedules,
        session: AdminSession,
        access: Access,
        *,
        history: FireView,
        task_names: TaskNames | None = None,
        actor: Callable[[], str | None] | None = None,
        **where: Unpack[Where],
    ) -> None:
        """``task_names``: the registered Celery task names the task field suggests (free text
        stays allowed); a saved task that is not among them gets a warning, not a refusal,
        since it may be registered only in the workers. ``actor``: see :attr:`actor`."""
        self.schedules = schedules
        self.actor = actor
        self.history = history
        self.task_names = _task_names(task_names)
        if self.task_names is not None:
            self.form_widget_args = {"task": {"list": TASK_NAMES_LIST}}
        super().__init__(session, access, **where)

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
        zone = row.timezone if row.kind in ZONED and row.timezone else "UTC"
        state, problem = schedule_state(row), self.unreadable(row)
        overview: dict[str, Any] = {
            "state": state,
            "badge": _STATE_BADGES[state],
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
            "preview_dst": False,
            "preview_error": None,
            "unreadable": problem.form_note() if problem is not None else None,
        }
        self.end_read()
        try:
            slots = self.schedules.preview(row.name, count=count)
            overview["preview"] = [
                (
                    instant(p.slot),
                    local_instant(p.slot, zone),
                    p.excluded_by,
                    [(note.mark(p.slot), note.text) for note in p.dst],
                )
                for p in slots
            ]
            overview["preview_removes"] = any(p.excluded_by for p in slots)
            overview["preview_dst"] = any(p.dst for p in slots)
        except (DBeatError, LookupError, ValueError) as exc:
            overview["preview_error"] = str(exc)
        return overview


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
