"""What a fire is, for every layer: its identity, its statuses and the rows planning works on.

Pure: no SQL, no Redis, no Celery. The store reads and writes these types, the planner makes them
and the locks key on them; none of them is imported here. A fire is identified by its schedule
and slot (:class:`FireKey`); its Celery task id (:func:`fire_task_id`) and its lock key
(:func:`fire_lock_key`) are both derived from that, each in one place.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple

__all__ = [
    "FINAL_RUN_STATUSES",
    "TASK_ID_NAMESPACE",
    "FireKey",
    "FireStatus",
    "NewFire",
    "PublishRequest",
    "RunStatus",
    "ScheduleRow",
    "Transition",
    "fire_lock_key",
    "fire_task_id",
]


class FireStatus(str, enum.Enum):
    """Outcome of a fire."""

    PENDING = "pending"  #: recorded, not yet published (a live beat publishes it)
    SENT = "sent"  #: published to the broker
    SKIPPED = "skipped"  #: missed slots the misfire policy chose not to publish
    DROPPED = "dropped"  #: missed slots older than the grace window
    FAILED = "failed"  #: publishing failed for longer than the publish retry window
    OVERLAP = "overlap"  #: not sent: the previous run was still going (overlap policy ``skip``)
    BUFFERED = "buffered"  #: held until the previous run finishes (overlap policy ``buffer_one``)


class RunStatus(str, enum.Enum):
    """What the worker hook (:mod:`celery_dbeat.worker`) reported about a sent fire's run."""

    STARTED = "started"
    RETRIED = "retried"  #: raised Retry; the same task id runs again later
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    REVOKED = "revoked"


#: Run states that end a run.
FINAL_RUN_STATUSES = (RunStatus.SUCCEEDED.value, RunStatus.FAILED.value, RunStatus.REVOKED.value)


class FireKey(NamedTuple):
    """A fire: a schedule id and a slot."""

    schedule_id: int
    slot: datetime


def fire_lock_key(prefix: str, key: FireKey) -> str:
    """``{prefix}fire:{schedule_id}:{slot as integer microseconds since the epoch}``."""
    epoch_us = round(key.slot.timestamp() * 1_000_000)
    return f"{prefix}fire:{key.schedule_id}:{epoch_us}"


TASK_ID_NAMESPACE = uuid.UUID("6c1b3a8e-5d57-4b0f-9a55-2f6a3c0d9e11")


def fire_task_id(schedule_name: str, slot: datetime, *, manual: bool = False) -> str:
    """The Celery task id of a fire: the same (schedule, slot) gives the same id on every beat."""
    instant = slot.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    kind = "manual" if manual else "slot"
    return str(uuid.uuid5(TASK_ID_NAMESPACE, f"{schedule_name}\x00{kind}\x00{instant}"))


@dataclass(frozen=True)
class ScheduleRow:
    """A schedule as read for planning; JSON columns are still text."""

    id: int
    name: str
    task: str
    args: str
    kwargs: str
    options: str
    kind: str
    cron: str | None
    timezone: str | None
    every: float | None
    run_at: datetime | None
    anchor_at: datetime | None
    dst_gap: str | None
    dst_fold: str | None
    cron_days: str | None
    start_at: datetime | None
    end_at: datetime | None
    max_runs: int | None
    run_count: int
    misfire_policy: str | None
    misfire_grace: float | None
    catchup_limit: int | None
    next_run_at: datetime | None
    last_slot: datetime | None
    jitter: float | None
    version: int
    created_at: datetime
    #: Solar spec fields, defaulted so that rows of the other kinds can be built without them.
    solar_event: str | None = None
    latitude: float | None = None
    longitude: float | None = None
    #: Overlap policy (``allow``, ``skip``, ``buffer_one``; NULL is ``allow``) and the longest a
    #: run may take before it counts as lost (NULL: ``dbeat_max_run_time``).
    overlap_policy: str | None = None
    max_run_time: float | None = None
    #: The last edit, pause or resume: slots due before it were not due as the row is now.
    updated_at: datetime | None = None
    #: ``next_run_at`` exactly as stored, for the compare-and-set. Only set on SQLite, which keeps
    #: timestamps as text: a hand-written '2024-05-06 09:30:00' must match itself, not its
    #: re-formatted '...09:30:00.000000'.
    next_run_at_text: str | None = field(default=None, compare=False)

    @classmethod
    def from_row(cls, row: Any) -> ScheduleRow:
        """From a database row of the planning columns (anything with ``_asdict``)."""
        return cls(**row._asdict())


@dataclass(frozen=True)
class NewFire:
    slot: datetime
    status: FireStatus
    task_id: str | None = None
    slot_count: int = 1
    first_slot: datetime | None = None


@dataclass
class Transition:
    """What one tick decided for one schedule; applied only if the row is unchanged."""

    schedule: ScheduleRow
    next_run_at: datetime | None
    #: When the fire of ``next_run_at`` is due: the slot itself, or later with jitter.
    due_at: datetime | None = None
    fires: list[NewFire] = field(default_factory=list)
    last_slot: datetime | None = None
    runs_added: int = 0
    finished: bool = False
    error: str | None = None

    @property
    def key(self) -> FireKey:
        """The fire this transition claims: its schedule's current slot."""
        assert self.schedule.next_run_at is not None
        return FireKey(self.schedule.id, self.schedule.next_run_at)


@dataclass(frozen=True)
class PublishRequest:
    """A recorded fire that must reach the broker, with what to send."""

    task_id: str
    schedule_id: int
    schedule_name: str
    slot: datetime
    task: str
    args: str
    kwargs: str
    options: str
    attempts: int = 0
    #: A "run now" fire (a trigger), not a slot.
    manual: bool = False

    @classmethod
    def from_row(cls, r: Any) -> PublishRequest:
        """From a row of :data:`PUBLISH_COLUMNS` (a recorded fire joined with its schedule)."""
        return cls(
            r.task_id,
            r.schedule_id,
            r.name,
            r.slot,
            r.task,
            r.args,
            r.kwargs,
            r.options,
            r.attempts,
            bool(r.manual),
        )
