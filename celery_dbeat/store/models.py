"""The tables: ``dbeat_schedules`` (one row per schedule), ``dbeat_fires`` (one row per fire),
``dbeat_beats`` (one heartbeat row per running beat), ``dbeat_calendars`` (one row per
exclusion calendar), ``dbeat_audit`` (one row per edit) and ``dbeat_alerts`` (one row per
alert).

A fire row is both the history users read and the exactly-once record: the unique key
``(schedule_id, slot, manual)`` means a slot can be recorded once, whichever beat gets there.
Args, kwargs and options are JSON text parsed per row by the scheduler, so a row with bad JSON
marks that schedule broken instead of failing the batch it was fetched with.
"""

from __future__ import annotations

from datetime import datetime
from typing import cast

import sqlalchemy as sa
from sqlalchemy import (
    BigInteger,
    Boolean,
    Double,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from .types import UTCDateTime

__all__ = [
    "AL",
    "A",
    "Alert",
    "Audit",
    "B",
    "Base",
    "Beat",
    "C",
    "Calendar",
    "F",
    "Fire",
    "S",
    "Schedule",
]

ID = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    pass


class Schedule(Base):
    __tablename__ = "dbeat_schedules"

    id: Mapped[int] = mapped_column(ID, primary_key=True, autoincrement=True)
    #: The schedule's identity (``celery_dbeat.core.fires``): given when the row is created, kept
    #: through renames, never reused; task ids and jitter derive from it. NULL only on a row
    #: inserted by hand, which beat gives one when it first claims the row.
    uid: Mapped[str | None] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(200), unique=True)
    task: Mapped[str] = mapped_column(String(255))
    args: Mapped[str] = mapped_column(Text, default="[]")
    kwargs: Mapped[str] = mapped_column(Text, default="{}")
    #: Celery publishing options: queue, exchange, routing_key, priority, expires, headers.
    options: Mapped[str] = mapped_column(Text, default="{}")
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    #: ``config`` rows are owned by the app's ``beat_schedule``; ``api`` rows by people.
    origin: Mapped[str] = mapped_column(String(16), default="api")
    #: For config rows, the ``enabled`` value ``beat_schedule`` last asked for: a change of it is
    #: applied at sync, while a pause made elsewhere survives restarts.
    config_enabled: Mapped[bool | None] = mapped_column(Boolean)

    kind: Mapped[str] = mapped_column(String(16))
    cron: Mapped[str | None] = mapped_column(String(255))
    timezone: Mapped[str | None] = mapped_column(String(64))
    #: Cron day matching when both day fields are restricted: ``any`` (cron(8), either day field)
    #: or ``all`` (Celery's crontab: both). NULL means ``any``.
    cron_days: Mapped[str | None] = mapped_column(String(8))
    every: Mapped[float | None] = mapped_column(Double)
    #: ``rrule`` schedules: the RFC 5545 recurrence set (``core/timing/rrule.py``).
    rrule: Mapped[str | None] = mapped_column(Text)
    run_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    anchor_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    dst_gap: Mapped[str | None] = mapped_column(String(16))
    dst_fold: Mapped[str | None] = mapped_column(String(16))
    #: ``solar`` schedules: the event (``sunrise``, ``sunset``, ...) and the observer's place.
    solar_event: Mapped[str | None] = mapped_column(String(32))
    latitude: Mapped[float | None] = mapped_column(Double)
    longitude: Mapped[float | None] = mapped_column(Double)
    start_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    end_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    max_runs: Mapped[int | None] = mapped_column(Integer)
    run_count: Mapped[int] = mapped_column(Integer, default=0)

    #: ``None`` means the global default (``dbeat_misfire_*`` settings).
    misfire_policy: Mapped[str | None] = mapped_column(String(16))
    misfire_grace: Mapped[float | None] = mapped_column(Double)
    catchup_limit: Mapped[int | None] = mapped_column(Integer)

    #: Deterministic jitter window in seconds (``fire_at = slot + H(name, slot) mod jitter``).
    jitter: Mapped[float | None] = mapped_column(Double)
    #: ``allow`` (NULL), ``skip`` or ``buffer_one``: see :mod:`celery_dbeat.core.overlap`.
    overlap_policy: Mapped[str | None] = mapped_column(String(16))
    #: Seconds after which an unfinished run counts as lost; NULL means ``dbeat_max_run_time``.
    max_run_time: Mapped[float | None] = mapped_column(Double)
    #: The name of the exclusion calendar (``dbeat_calendars.name``) whose dates are skipped;
    #: the API refuses an unknown name, and the removal of a calendar still named here.
    calendar: Mapped[str | None] = mapped_column(String(200))
    #: Consecutive failed runs after which the worker hook pauses the schedule; NULL: never.
    pause_after_failures: Mapped[int | None] = mapped_column(Integer)
    #: Most fires beat's prune keeps in the history, besides ``dbeat_history_retention``.
    history_limit: Mapped[int | None] = mapped_column(Integer)
    #: Slot arguments: the keyword names each fire passes its slot and the schedule's previous
    #: slot under (NULL: not passed); see ``core/slots.py``.
    slot_kwarg: Mapped[str | None] = mapped_column(String(100))
    previous_slot_kwarg: Mapped[str | None] = mapped_column(String(100))
    #: Alerts (``celery_dbeat.core.alerts``): after how many failed runs in a row, and how many
    #: seconds after its slot a run must have succeeded (NULL: never); the task and the webhook
    #: they go to (NULL: ``dbeat_alert_task``, ``dbeat_alert_webhook``).
    alert_after_failures: Mapped[int | None] = mapped_column(Integer)
    alert_deadline: Mapped[float | None] = mapped_column(Double)
    alert_task: Mapped[str | None] = mapped_column(String(255))
    alert_webhook: Mapped[str | None] = mapped_column(String(1000))
    #: The episode the schedule is in alert for (``failing`` or ``missed``) and its slot; both
    #: NULL when not in alert. Set with the alert that opens it, cleared with the recovery.
    alert_kind: Mapped[str | None] = mapped_column(String(16))
    alert_episode: Mapped[datetime | None] = mapped_column(UTCDateTime)
    #: The slot up to which the prunes deleted the schedule's fire records (NULL: none yet; see
    #: ``store/pruning.py``): a backfill does not send again the slots at or before it that have
    #: no record, which may have been sent.
    pruned_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    #: How many of the schedule's runs failed in a row (the worker hook's reports, in the
    #: order they finished): reset by a success, kept by a retry or a revocation; what
    #: ``pause_after_failures`` is compared with, whatever the prunes left of the history.
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: While paused: who paused it and why (free text), when, and by which path (a
    #: :class:`PauseSource` value). All NULL while enabled: a resume clears them.
    pause_note: Mapped[str | None] = mapped_column(String(500))
    paused_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    pause_source: Mapped[str | None] = mapped_column(String(16))
    #: The next slot: the source of truth for what is due. NULL on an enabled, unfinished row
    #: without an error asks beat to compute it (and ``due_at``) from now.
    next_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    #: Only for schedules with jitter: when the fire of ``next_run_at`` is due. NULL means
    #: "at next_run_at", so for every other schedule ``next_run_at`` alone says what is due.
    #: (When editing a jittered row by hand, set both to NULL to have beat recompute them.)
    due_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_slot: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    #: Bumped by every edit of the definition (not by firing); beat's compare-and-set checks it.
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)

    # Serves every query beat makes: due rows without jitter (due_at IS NULL, next_run_at range),
    # due rows with jitter (due_at range), and rows asking for a recompute (both NULL).
    __table_args__ = (
        Index("ix_dbeat_schedules_due", "enabled", "due_at", "next_run_at"),
        Index("ix_dbeat_schedules_uid", "uid", unique=True),
        Index("ix_dbeat_schedules_calendar", "calendar"),
    )

    def __repr__(self) -> str:
        return f"<Schedule {self.name!r} {self.kind} next={self.next_run_at}>"


class Fire(Base):
    __tablename__ = "dbeat_fires"

    id: Mapped[int] = mapped_column(ID, primary_key=True, autoincrement=True)
    schedule_id: Mapped[int] = mapped_column(
        ID, ForeignKey("dbeat_schedules.id", ondelete="CASCADE")
    )
    #: The nominal instant. For SKIPPED/DROPPED rows, the newest slot of the group.
    slot: Mapped[datetime] = mapped_column(UTCDateTime)
    #: ``True`` for "run now" triggers, which are not slots and never collide with one.
    manual: Mapped[bool] = mapped_column(Boolean, default=False)
    #: Who asked for the fire: NULL for beat's own (on time, catch-up), ``backfill`` for a
    #: backfill's (``Schedules.backfill``).
    origin: Mapped[str | None] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    #: For a SKIPPED row: the calendar that excluded its slots (NULL: the misfire policy).
    calendar: Mapped[str | None] = mapped_column(String(200))
    #: For SKIPPED/DROPPED rows and queued runs: how many slots the row stands for, and the
    #: oldest of them.
    slot_count: Mapped[int] = mapped_column(Integer, default=1)
    first_slot: Mapped[datetime | None] = mapped_column(UTCDateTime)
    #: For a queued run (a QUEUED row standing for several slots of one catch-up or backfill,
    #: so that recording it costs one insert, not one per slot): each of its slots, oldest
    #: first, as a JSON list of ISO-8601 instants (:func:`celery_dbeat.core.fires.queued_fires`).
    #: Its ``task_id`` is NULL; beats turn its slots into fires as they publish them. NULL on
    #: every other row.
    slots: Mapped[str | None] = mapped_column(Text)
    task_id: Mapped[str | None] = mapped_column(String(36))
    beat: Mapped[str | None] = mapped_column(String(255))
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    #: A PENDING fire is left to the beat that recorded it until then; after, any beat retries.
    #: A QUEUED fire is not published before then, and queued fires go out in its order (its
    #: slot, for a catch-up), so one index serves both: ``ix_dbeat_fires_pending``.
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    #: The run, as the worker hook reports it (all NULL without the hook): a :class:`RunStatus`,
    #: when the task started and finished, its run time in seconds, the worker, and the error of
    #: a failed run.
    run_status: Mapped[str | None] = mapped_column(String(16))
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    runtime: Mapped[float | None] = mapped_column(Double)
    worker: Mapped[str | None] = mapped_column(String(255))
    run_error: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        UniqueConstraint("schedule_id", "slot", "manual", name="uq_dbeat_fires_schedule_slot"),
        Index("ix_dbeat_fires_pending", "status", "lease_until"),
        Index("ix_dbeat_fires_task_id", "task_id", unique=True),
        # History pruning (by age) and the last-success metric (recently finished runs).
        Index("ix_dbeat_fires_slot", "slot"),
        Index("ix_dbeat_fires_finished", "finished_at"),
    )

    def __repr__(self) -> str:
        return f"<Fire schedule={self.schedule_id} slot={self.slot} {self.status}>"


class Beat(Base):
    """A running beat's heartbeat, written at most once per ``max_interval``; removed on a clean
    shutdown."""

    __tablename__ = "dbeat_beats"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    hostname: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    version: Mapped[str] = mapped_column(String(32))
    #: When the beat's current stretch of ticking began: its start, or its return from a stall
    #: or a database outage. Other beats read ``[started_at, last_seen_at]`` as "running".
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime)

    def __repr__(self) -> str:
        return f"<Beat {self.name!r} seen {self.last_seen_at}>"


class Calendar(Base):
    """A named exclusion calendar (:mod:`celery_dbeat.core.calendars`): the dates, in its zone,
    on which the schedules naming it do not fire."""

    __tablename__ = "dbeat_calendars"
    __table_args__ = (Index("ix_dbeat_calendars_uid", "uid", unique=True),)

    id: Mapped[int] = mapped_column(ID, primary_key=True, autoincrement=True)
    #: The calendar's identity: given when the row is created, never reused, so a calendar
    #: removed and created again under its name is another one to the beats that cache it by
    #: ``(uid, version)``. NULL only on a row inserted by hand, which beats read at every batch.
    uid: Mapped[str | None] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(200), unique=True)
    timezone: Mapped[str] = mapped_column(String(64))
    #: JSON list of ``YYYY-MM-DD`` and ``YYYY-MM-DD..YYYY-MM-DD``, sorted and merged.
    dates: Mapped[str] = mapped_column(Text, default="[]")
    description: Mapped[str | None] = mapped_column(Text)
    #: Bumped by every edit; beats cache a calendar by ``(uid, version)`` and read it again when
    #: either changes.
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)

    def __repr__(self) -> str:
        return f"<Calendar {self.name!r} v{self.version}>"


class Audit(Base):
    """One edit of a schedule: who (``actor``, through ``surface``), when (the database's
    clock), what (``action``) and the change, ``{column: [old, new]}`` as JSON
    (:mod:`celery_dbeat.core.audit`). Written in the edit's transaction, insert only, with no
    foreign key (no lock on the schedule; the trail of a removed schedule stays); pruned by
    age (``dbeat_audit_retention``)."""

    __tablename__ = "dbeat_audit"

    id: Mapped[int] = mapped_column(ID, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    actor: Mapped[str] = mapped_column(String(255))
    surface: Mapped[str] = mapped_column(String(32))
    action: Mapped[str] = mapped_column(String(32))
    #: The schedule's name after the edit (before it, for a removal) and its identity.
    schedule_name: Mapped[str | None] = mapped_column(String(200))
    schedule_uid: Mapped[str | None] = mapped_column(String(32))
    changes: Mapped[str] = mapped_column(Text)

    __table_args__ = (
        Index("ix_dbeat_audit_at", "at"),
        Index("ix_dbeat_audit_schedule_name", "schedule_name"),
        Index("ix_dbeat_audit_schedule_uid", "schedule_uid"),
    )

    def __repr__(self) -> str:
        return f"<Audit {self.action} {self.schedule_name!r} by {self.actor}>"


class Alert(Base):
    """One alert (``celery_dbeat.core.alerts``): an episode's start (``failing``, ``missed``) or
    end (``recovered``), and its delivery. The unique key ``(schedule_id, kind, episode_slot)``
    records each at most once, whichever worker or beat gets there; ``alert_id`` is derived from
    it, the same at every delivery. Undelivered while ``next_attempt_at`` is set: a beat leases
    it (``lease_until``), delivers it, and clears it (``delivered_at``) or sets the next try;
    after ``dbeat_alert_retries`` it gives up (``gave_up_at``, the reason in ``last_error``)."""

    __tablename__ = "dbeat_alerts"

    id: Mapped[int] = mapped_column(ID, primary_key=True, autoincrement=True)
    alert_id: Mapped[str] = mapped_column(String(36))
    schedule_id: Mapped[int] = mapped_column(
        ID, ForeignKey("dbeat_schedules.id", ondelete="CASCADE")
    )
    #: The schedule's name when the alert was raised.
    schedule_name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(16))
    #: The slot that names the episode; for a recovery, that of the episode it ends.
    episode_slot: Mapped[datetime] = mapped_column(UTCDateTime)
    #: The slot of the run that raised it (for ``missed``, the slot that missed its deadline).
    slot: Mapped[datetime | None] = mapped_column(UTCDateTime)
    #: The error of the failed run that raised it; the failed runs in a row then.
    error: Mapped[str | None] = mapped_column(Text)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    raised_at: Mapped[datetime] = mapped_column(UTCDateTime)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    gave_up_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    #: Why the last delivery failed.
    last_error: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        UniqueConstraint("schedule_id", "kind", "episode_slot", name="uq_dbeat_alerts_episode"),
        Index("ix_dbeat_alerts_alert_id", "alert_id", unique=True),
        Index("ix_dbeat_alerts_next_attempt", "next_attempt_at"),
        Index("ix_dbeat_alerts_raised", "raised_at"),
    )

    def __repr__(self) -> str:
        return f"<Alert {self.kind} {self.schedule_name!r} {self.episode_slot}>"


#: The tables, for the store's SQL (Core statements, not the ORM).
S = cast(sa.Table, Schedule.__table__)
F = cast(sa.Table, Fire.__table__)
B = cast(sa.Table, Beat.__table__)
C = cast(sa.Table, Calendar.__table__)
A = cast(sa.Table, Audit.__table__)
AL = cast(sa.Table, Alert.__table__)
