"""How the admin shows schedules and fires: instants in UTC to the second, list filters, and the
change page's slot preview and recent-fire table."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib import admin
from django.db.models import Case, CharField, Q, QuerySet, Value, When
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from ...core.calendars import PreviewSlot
from ...core.fires import FireStatus, RunStatus
from ...core.origins import BACKFILL_ORIGIN
from ...core.states import OTHERWISE, RULE, STATES

__all__ = [
    "RECENT_FIRE_COLUMNS",
    "OriginFilter",
    "RunStatusFilter",
    "StateFilter",
    "StatusFilter",
    "instant",
    "instant_of",
    "next_slots_html",
    "recent_fires_html",
    "shortened",
    "show_lag",
    "utc",
]


def utc(value: datetime | None) -> str:
    """An instant as stored and keyed: UTC, to the second (Django would show local minutes)."""
    return "-" if value is None else f"{value:%Y-%m-%d %H:%M:%S} UTC"


def show_lag(value: timedelta | None) -> str:
    return "-" if value is None else f"{value.total_seconds():.3f} s"


def instant_of(obj: Any, field: str) -> str:
    """``obj``'s instant ``field`` with :func:`utc`, or "cannot be read" (the reason on hover)
    when its stored value cannot be read (``models.py``)."""
    problem = getattr(obj, "unreadable", None)
    if problem is not None and field in problem.columns:
        unreadable: str = format_html(
            '<span class="dbeat-unreadable" title="{}">cannot be read</span>', str(problem)
        )
        return unreadable
    return utc(getattr(obj, field))


def instant(field: str, description: str) -> Callable[[Any, Any], str]:
    """An admin column or read-only field showing ``field`` with :func:`instant_of`, sortable
    by it."""

    @admin.display(description=description, ordering=field)
    def show(_admin: Any, obj: Any) -> str:
        return instant_of(obj, field)

    column: Callable[[Any, Any], str] = show
    return column


def shortened(text: str | None, length: int = 80) -> str:
    """``text`` cut to ``length`` characters, all of it on hover (``-`` for none)."""
    if not text:
        return "-"
    short = text if len(text) <= length else text[: length - 1] + "…"
    shown: str = format_html('<span title="{}">{}</span>', text, short)
    return shown


class StateFilter(admin.SimpleListFilter):
    """A schedule's ``state``: active, paused, finished or error (as ``ScheduleInfo.state``)."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(s, s) for s in STATES]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() not in STATES:
            return queryset
        whens = [
            When(Q(**{column: True} if test == "true" else {f"{column}__isnull": False}),
                 then=Value(state))
            for state, column, test in RULE
        ]  # fmt: skip
        state = Case(*whens, default=Value(OTHERWISE), output_field=CharField())
        return queryset.annotate(dbeat_state=state).filter(dbeat_state=self.value())


class _ColumnFilter(admin.SimpleListFilter):
    """The rows whose column ``parameter_name`` holds the chosen one of ``values``, offering
    each (not only those already recorded); with a ``none_label``, also ``none``: the rows where
    it is NULL."""

    values: tuple[str, ...] = ()
    none_label: str | None = None

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        none = [] if self.none_label is None else [("none", self.none_label)]
        return [*((value, value) for value in self.values), *none]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "none" and self.none_label is not None:
            return queryset.filter(**{f"{self.parameter_name}__isnull": True})
        return queryset.filter(**{self.parameter_name: self.value()}) if self.value() else queryset


class StatusFilter(_ColumnFilter):
    """A fire's status."""

    title = parameter_name = "status"
    values = tuple(s.value for s in FireStatus)


class RunStatusFilter(_ColumnFilter):
    """What the worker hook reported about a fire's run; ``none`` for fires without a report."""

    title, parameter_name = "run status", "run_status"
    values = tuple(s.value for s in RunStatus)
    none_label = "no report"


class OriginFilter(_ColumnFilter):
    """Who asked for a fire: a backfill (``origin`` ``backfill``, the word ``dbeat history``
    shows), or ``none``: beat itself, on time or catching up."""

    title = parameter_name = "origin"
    values = (BACKFILL_ORIGIN,)
    none_label = "beat's own"


def next_slots_html(slots: list[PreviewSlot], zone_name: str | None) -> str:
    """An ordered list of slots in UTC, with the wall-clock time in the schedule's zone; a slot
    its calendar excludes struck through, with the calendar's name; a slot a DST change moved
    or repeated marked (the whole sentence on hover)."""
    if not slots:
        return "none: the schedule has no slot left"
    zone = None if zone_name in (None, "UTC", "Etc/UTC") else ZoneInfo(str(zone_name))
    items = []
    for shown in slots:
        slot = shown.slot
        local = "" if zone is None else f"{slot.astimezone(zone):%Y-%m-%d %H:%M:%S %Z}"
        when = format_html("{}{}", utc(slot), f" = {local} in {zone_name}" if local else "")
        if shown.dst:
            marks = format_html_join(
                "", ' <span class="dbeat-dst" title="{}">DST: {}</span>',
                ((note.text, note.mark(slot)) for note in shown.dst),
            )  # fmt: skip
            when = format_html("{}{}", when, marks)
        if shown.excluded_by is None:
            items.append(format_html("<li>{}</li>", when))
        else:
            items.append(
                format_html(
                    '<li class="dbeat-excluded"><s>{}</s> excluded by calendar <strong>{}</strong>'
                    " (not sent)</li>",
                    when,
                    shown.excluded_by,
                )
            )
    html: str = format_html('<ol class="dbeat-next-slots">{}</ol>', mark_safe("".join(items)))
    return html


#: The recent fires scroll sideways in a box of their own, as Django's own lists do. The form
#: row around them hides what overflows, and the read-only field (a flex item, ``readonly``
#: class, of the ``recent_fires`` row) would otherwise be as wide as the table: the right-hand
#: columns were cut off on a window 1400 px wide. Its flex container is a row beside the label
#: up to Django 6.0, where ``min-width: 0`` lets it shrink; from 6.1 on a column that aligns
#: its items to the start, where only ``align-self: stretch`` holds it to the row's width. No
#: static file: the app ships none.
RECENT_FIRES_STYLE = mark_safe(
    "<style>.field-recent_fires div.readonly { min-width: 0; align-self: stretch; }"
    " .dbeat-recent-fires-box { overflow-x: auto; }</style>"
)


def _asked_by(fire: Any) -> str:
    if fire.manual:
        return " (manual)"
    return f" ({fire.origin})" if fire.origin else ""


#: The columns of the recent fires: each heading, and what a fire shows under it.
RECENT_FIRE_COLUMNS: dict[str, Callable[[Any], object]] = {
    "slot": lambda f: format_html("{}{}", instant_of(f, "slot"), _asked_by(f)),
    "status": lambda f: f.status,
    "sent at": lambda f: instant_of(f, "sent_at"),
    "lag": lambda f: show_lag(f.lag),
    "beat": lambda f: f.beat or "-",
    "task id": lambda f: f.task_id or "-",
    "attempts": lambda f: f.attempts,
    "run": lambda f: f.run_status or "-",
    "started at": lambda f: instant_of(f, "started_at"),
    "run time": lambda f: show_lag(f.run_duration),
    "worker": lambda f: f.worker or "-",
    "error": lambda f: " / ".join(e for e in (f.error, f.run_error) if e),
}


def recent_fires_html(fires: Iterable[Any], all_fires_url: str) -> str:
    """A table of fires (:data:`RECENT_FIRE_COLUMNS`): slot (marked manual, or backfill as
    ``dbeat history`` marks it), status, sent at, lag, beat, task id, attempts, then the run:
    its status, start, run time and worker, and the errors."""
    more = format_html('<a href="{}">all fires</a>', all_fires_url)
    rows = [[cell(f) for cell in RECENT_FIRE_COLUMNS.values()] for f in fires]
    if not rows:
        none: str = format_html("none yet ({})", more)
        return none
    cells = "<td>{}</td>" * len(RECENT_FIRE_COLUMNS)
    html: str = format_html(
        '{}<div class="dbeat-recent-fires-box">'
        '<table class="dbeat-recent-fires"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>'
        "</div><p>{}</p>",
        RECENT_FIRES_STYLE,
        format_html_join("", "<th>{}</th>", ((h,) for h in RECENT_FIRE_COLUMNS)),
        format_html_join("", f"<tr>{cells}</tr>", rows),
        more,
    )
    return html
