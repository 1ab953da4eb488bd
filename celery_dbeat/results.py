"""What the management API (:class:`celery_dbeat.api.Schedules`) returns: a schedule
(:class:`ScheduleInfo`), a running beat (:class:`BeatInfo`) and a fire (:class:`FireInfo`), read
from their rows. Re-exported by :mod:`celery_dbeat.api`, where callers import them."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Row

from .core.fields import FIELDS, Form
from .core.origins import CONFIG_ORIGIN
from .core.specs import Spec, spec_from_fields
from .core.states import schedule_state

__all__ = ["BeatInfo", "FireInfo", "ScheduleInfo"]

_JSON_FIELDS = frozenset(f.name for f in FIELDS if f.form is Form.JSON)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        # Not JSON, or nested too deeply to decode (a row written by hand): shown as stored;
        # beat marks such a row with its error.
        return text


@dataclass(frozen=True)
class ScheduleInfo:
    """A schedule as stored, with JSON decoded."""

    id: int
    #: The schedule's identity, kept through renames: its fires' task ids are
    #: ``celery_dbeat.fire_task_id(uid, slot)``. ``None`` only on a row inserted by hand that
    #: no beat has claimed yet.
    uid: str | None
    name: str
    task: str
    schedule: Spec | None
    args: Any
    kwargs: Any
    options: Any
    enabled: bool
    origin: str
    start_at: datetime | None
    end_at: datetime | None
    max_runs: int | None
    run_count: int
    misfire_policy: str | None
    misfire_grace: float | None
    catchup_limit: int | None
    jitter: float | None
    overlap_policy: str | None
    max_run_time: float | None
    pause_after_failures: int | None
    history_limit: int | None
    #: The keywords its fires pass their slot and the previous slot under (``None``: not passed).
    slot_kwarg: str | None
    previous_slot_kwarg: str | None
    #: Alerts (``celery_dbeat.core.alerts``): after how many failed runs in a row, how many
    #: seconds after its slot a run must have succeeded, the task and webhook they go to.
    alert_after_failures: int | None
    alert_deadline: float | None
    alert_task: str | None
    alert_webhook: str | None
    #: The exclusion calendar's name (``Schedules.calendars``), or ``None``.
    calendar: str | None
    next_run_at: datetime | None
    last_slot: datetime | None
    last_error: str | None
    finished_at: datetime | None
    created_at: datetime
    updated_at: datetime
    version: int
    #: While paused: who paused it and why, when, and what paused it (a
    #: :class:`~celery_dbeat.core.states.PauseSource` value: ``person``, ``config``,
    #: ``failures``). ``None`` while enabled, and on a pause made before celery-dbeat 0010.
    pause_note: str | None = None
    paused_at: datetime | None = None
    pause_source: str | None = None
    #: How many of its runs failed in a row, as the worker hook reported them (reset by a
    #: success); ``pause_after_failures`` pauses the schedule when it reaches that number.
    consecutive_failures: int = 0
    #: The slot up to which the prunes deleted the schedule's fire records (``None``: none
    #: yet). A backfill leaves the slots at or before it that have no record unless asked to
    #: resend them.
    pruned_until: datetime | None = None
    #: The alert episode the schedule is in (``failing``, ``missed``) and the slot that opened
    #: it; ``None`` when not in alert (its runs succeed again).
    alert_kind: str | None = None
    alert_episode: datetime | None = None

    @classmethod
    def from_row(cls, row: Row[Any]) -> ScheduleInfo:
        """From a row of every ``dbeat_schedules`` column."""
        values = row._mapping
        return cls(
            **{
                f.name: _json(values[f.name]) if f.name in _JSON_FIELDS else values[f.name]
                for f in fields(cls)
                if f.name != "schedule"
            },
            schedule=spec_from_fields(values),
        )

    @property
    def state(self) -> str:
        """``active``, ``paused``, ``finished`` or ``error`` (:mod:`celery_dbeat.core.states`)."""
        return schedule_state(self)

    @property
    def next_run(self) -> datetime | None:
        """When it fires next: ``next_run_at`` while ``active``; ``None`` when paused (the
        stored value is not a promise: resuming recomputes it), finished or in error."""
        return self.next_run_at if self.state == "active" else None

    @property
    def from_beat_schedule(self) -> bool:
        """Whether it comes from the app's ``beat_schedule``, whose next sync puts its definition
        back: a write that changes or removes it needs ``force=True``
        (:class:`~celery_dbeat.core.errors.ConfigOwned`)."""
        return self.origin == CONFIG_ORIGIN


@dataclass(frozen=True)
class BeatInfo:
    """A running beat's heartbeat: written every ``dbeat_max_interval``, removed on a clean stop."""

    name: str
    hostname: str
    pid: int
    version: str
    started_at: datetime
    last_seen_at: datetime


@dataclass(frozen=True)
class FireInfo:
    """One row of a schedule's fire history: what beat did with the fire (``status``, a
    :class:`~celery_dbeat.store.models.FireStatus` value) and, when the worker hook
    (:mod:`celery_dbeat.beat.worker`) is on, what became of its run (``run_status``, a
    :class:`~celery_dbeat.store.models.RunStatus` value, and the ``started_at`` ...
    ``run_error`` columns; all ``None`` without the hook or before the run starts)."""

    slot: datetime
    manual: bool
    status: str
    slot_count: int
    first_slot: datetime | None
    task_id: str | None
    beat: str | None
    recorded_at: datetime
    sent_at: datetime | None
    attempts: int
    error: str | None
    run_status: str | None = None
    #: Who asked for the fire: ``None`` for the beat's own, ``"backfill"`` for a backfill's.
    origin: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    #: Seconds the task ran, as the worker measured it.
    runtime: float | None = None
    worker: str | None = None
    run_error: str | None = None
    #: For a skipped fire: the calendar that excluded its slots (``None``: the misfire policy).
    calendar: str | None = None

    @classmethod
    def from_row(cls, row: Row[Any] | Any) -> FireInfo:
        """From a ``dbeat_fires`` row: a query's, or an ORM object (the Flask admin's)."""
        return cls(**{f.name: getattr(row, f.name) for f in fields(cls)})

    @property
    def lag(self) -> timedelta | None:
        """How long after its slot the fire reached the broker (``None`` until sent, or for a
        Django model row, which shares this property, whose slot cannot be read)."""
        if self.sent_at is None or self.slot is None:
            return None
        return self.sent_at - self.slot

    @property
    def outcome(self) -> str:
        """One word for the whole fire: its run's status once the worker reported on it
        (``started``, ``retried``, ``succeeded``, ``failed``, ``revoked``), else its fire status
        (``pending``, ``sent``, ``skipped``, ``dropped``, ``failed`` (never published),
        ``overlap``, ``buffered``)."""
        return self.run_status or self.status

    @property
    def run_duration(self) -> timedelta | None:
        """How long the task ran: the worker's measure, else from start to finish."""
        if self.runtime is not None:
            return timedelta(seconds=self.runtime)
        if self.started_at is not None and self.finished_at is not None:
            return self.finished_at - self.started_at
        return None

    @property
    def queue_wait(self) -> timedelta | None:
        """How long the message waited between the broker and a worker starting it."""
        if self.sent_at is None or self.started_at is None:
            return None
        return self.started_at - self.sent_at
