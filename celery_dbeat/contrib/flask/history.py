"""The fire history view: read-only, newest slot first, with lag and outcome (a backfill's fires
say so, as ``dbeat history`` does), and what the worker hook reported about each run (status,
start, run time, worker, error); filtered to one schedule by the links of the schedules view.
Each slot's row links to its explanation (``dbeat explain``: why it did or did not fire)."""

from __future__ import annotations

from typing import Any, ClassVar

import sqlalchemy as sa
from flask import abort, g, request, url_for
from flask_admin import expose
from flask_admin.contrib.sqla import filters as sqla_filters
from markupsafe import Markup
from typing_extensions import Unpack

from ...api import FireInfo, Schedules
from ...core.errors import DBeatError
from ...core.fires import FireStatus, RunStatus
from ...core.formats import parse_instant
from ...core.origins import BACKFILL_ORIGIN
from ...store.models import Fire, Schedule
from .base import (
    FIRES_ENDPOINT,
    SCHEDULES_ENDPOINT,
    Access,
    AdminSession,
    DBeatView,
    Where,
    badge,
)
from .display import duration, fire_outcome

__all__ = ["FireView", "ScheduleNameFilter"]

_FIRE_BADGES = {
    FireStatus.SENT.value: "success",
    FireStatus.PENDING.value: "info",
    FireStatus.QUEUED.value: "info",
    FireStatus.SKIPPED.value: "secondary",
    FireStatus.DROPPED.value: "warning",
    FireStatus.FAILED.value: "danger",
    FireStatus.OVERLAP.value: "secondary",
    FireStatus.BUFFERED.value: "info",
}
_RUN_BADGES = {
    RunStatus.STARTED.value: "info",
    RunStatus.RETRIED.value: "warning",
    RunStatus.SUCCEEDED.value: "success",
    RunStatus.FAILED.value: "danger",
    RunStatus.REVOKED.value: "warning",
}


class ScheduleNameFilter(sqla_filters.BaseSQLAFilter):
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
    if fire.schedule_id not in names:  # the detail page: only the name (not the whole row)
        name_of = sa.select(Schedule.name).where(Schedule.id == fire.schedule_id)
        names[fire.schedule_id] = view.session.scalar(name_of) or "?"
    url = url_for(f"{view.schedules_endpoint}.edit_view", id=fire.schedule_id)
    return Markup('<a href="{}">{}</a>').format(url, names[fire.schedule_id])


def _lag(view: FireView, context: Any, fire: Fire, name: str) -> str:
    lag = FireInfo.from_row(fire).lag  # None: not sent, or an instant cannot be read
    return "" if lag is None else duration(lag)


def _outcome(view: FireView, context: Any, fire: Fire, name: str) -> Markup:
    return badge(fire_outcome(fire), _FIRE_BADGES.get(fire.status, "light"), fire.error or "")


def _run(view: FireView, context: Any, fire: Fire, name: str) -> Markup | str:
    if fire.run_status is None:
        return ""
    return badge(fire.run_status, _RUN_BADGES.get(fire.run_status, "light"), fire.run_error or "")


def _ran(view: FireView, context: Any, fire: Fire, name: str) -> str:
    taken = FireInfo.from_row(fire).run_duration
    return "" if taken is None else duration(taken)


def _explain(view: FireView, context: Any, fire: Fire, name: str) -> Markup | str:
    if fire.manual or view.schedules is None:  # a run now is no slot
        return ""
    url = url_for(f"{view.endpoint}.explain_view", id=fire.id)
    return Markup('<a href="{}" class="dbeat-explain">why?</a>').format(url)


def _errors(view: FireView, context: Any, fire: Fire, name: str) -> str:
    return " / ".join(e for e in (fire.error, fire.run_error) if e)


class FireView(DBeatView):
    """Read-only fire history, newest slot first; filter by schedule, status, run-now or
    origin."""

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
        "run_status",
        "started_at",
        "runtime",
        "worker",
        "error",
        "explain",
    )
    column_details_list = (
        "schedule",
        "slot",
        "manual",
        "origin",
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
        "run_status",
        "started_at",
        "finished_at",
        "runtime",
        "worker",
        "run_error",
        "explain",
    )
    column_labels: ClassVar[dict[str, str]] = {
        "explain": "Explain",
        "sent_at": "Published",
        "lag": "Lag",
        "status": "Outcome",
        "task_id": "Task id",
        "manual": "Run now",
        "run_status": "Run",
        "started_at": "Started",
        "finished_at": "Finished",
        "runtime": "Run time",
        "run_error": "Run error",
    }
    column_sortable_list = (
        "slot",
        "sent_at",
        "status",
        "run_status",
        "started_at",
        "runtime",
        "attempts",
        "beat",
        "worker",
    )
    column_default_sort: ClassVar[list[tuple[str, bool]]] = [("slot", True), ("id", True)]
    column_searchable_list = ("task_id", "beat", "worker")
    column_filters = (
        ScheduleNameFilter(),
        sqla_filters.FilterEqual(
            Fire.status, "Outcome", options=[(s.value, s.value) for s in FireStatus]
        ),
        sqla_filters.FilterEqual(
            Fire.run_status, "Run", options=[(s.value, s.value) for s in RunStatus]
        ),
        sqla_filters.BooleanEqualFilter(Fire.manual, "Run now"),
        sqla_filters.FilterEqual(
            Fire.origin, "Origin", options=[(BACKFILL_ORIGIN, BACKFILL_ORIGIN)]
        ),
    )
    column_formatters: ClassVar[dict[str, Any]] = {
        "schedule": _schedule,
        "lag": _lag,
        "status": _outcome,
        "run_status": _run,
        "runtime": _ran,
        "error": _errors,
        "explain": _explain,
    }
    #: The detail page shows the publish error and the run error in their own rows.
    column_formatters_detail: ClassVar[dict[str, Any]] = {
        key: value for key, value in column_formatters.items() if key != "error"
    }

    row_model = Fire
    default_name, default_endpoint, default_url = "Fire history", FIRES_ENDPOINT, "fires"
    explain_template = "celery_dbeat/explain.html"

    def __init__(
        self,
        session: AdminSession,
        access: Access,
        *,
        schedules_endpoint: str = SCHEDULES_ENDPOINT,
        schedules: Schedules | None = None,
        **where: Unpack[Where],
    ) -> None:
        self.schedules_endpoint = schedules_endpoint
        #: The API the explanations are read through (``None``: no explanation links).
        self.schedules = schedules
        super().__init__(session, access, **where)

    @expose("/explain/")
    def explain_view(self) -> Any:
        """Why a slot did or did not fire (:meth:`Schedules.explain`): the slot of the fire
        ``?id=``, or ``?schedule=NAME`` and ``?slot=INSTANT`` (without a slot: its latest)."""
        if self.schedules is None:
            abort(404)
        name, slot = request.args.get("schedule"), request.args.get("slot")
        if "id" in request.args:
            key = self.key_of(request.args["id"])
            fire = None if key is None else self.load(key)
            if fire is None or fire.manual:
                abort(404)
            name = self.session.scalar(
                sa.select(Schedule.name).where(Schedule.id == fire.schedule_id)
            )
            slot = fire.slot.isoformat()
        self.end_read()
        if not name:
            abort(404)
        try:
            said = self.schedules.explain(name, slot=None if not slot else parse_instant(slot))
        except (DBeatError, LookupError, ValueError) as exc:
            return self.render(self.explain_template, name=name, error=str(exc), said=None), 404
        return self.render(
            self.explain_template,
            name=name,
            said=said,
            error=None,
            history_url=self.history_url(name),
        )

    def history_url(self, schedule: str) -> str:
        """The history page filtered to one schedule."""
        index = next(i for i, f in enumerate(self._filters) if isinstance(f, ScheduleNameFilter))
        key = f"flt0_{self.get_filter_arg(index, self._filters[index])}"
        arguments: dict[str, Any] = {key: schedule}
        return url_for(f"{self.endpoint}.index_view", **arguments)

    def get_list(self, *args: Any, **kwargs: Any) -> Any:
        count, fires = super().get_list(*args, **kwargs)
        ids = {fire.schedule_id for fire in fires}
        if ids:
            rows = self.session.execute(
                sa.select(Schedule.id, Schedule.name).where(Schedule.id.in_(ids))
            )
            g.dbeat_schedule_names = {row.id: row.name for row in rows}
        return count, fires
