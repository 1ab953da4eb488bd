"""What a fire is, for every layer: its identity, its statuses and the rows planning works on.

Pure: no SQL, no Redis, no Celery. The store reads and writes these types, the planner makes them
and the locks key on them; none of them is imported here. A fire is identified by its schedule
and slot (:class:`FireKey`); its Celery task id (:func:`fire_task_id`) and its lock key
(:func:`fire_lock_key`) are both derived from that, each in one place.

A schedule's identity is its row, not its name: every row carries a ``uid`` (random, given when
the row is created, never changed, never reused), and a fire's task id is derived from that uid
and the slot. So a rename keeps a schedule's fires and task ids, and a schedule that later takes
an old name (after a rename, a removal, an import or a sync) is a new identity whose task ids never
collide with the old one's.
"""

from __future__ import annotations

import enum
import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple

__all__ = [
    "FINAL_RUN_STATUSES",
    "QUEUED_RUN_SLOTS",
    "TASK_ID_NAMESPACE",
    "FireKey",
    "FireStatus",
    "NewFire",
    "PublishRequest",
    "RunStatus",
    "ScheduleRow",
    "Transition",
    "decode_slots",
    "encode_slots",
    "fire_lock_key",
    "fire_task_id",
    "new_uid",
    "queued_fires",
]


class FireStatus(str, enum.Enum):
    """Outcome of a fire."""

    PENDING = "pending"  #: recorded, not yet published (a live beat publishes it)
    #: recorded, waiting for spare capacity: a catch-up (policy ``all``) or backfill fire, sent
    #: after every on-time fire, oldest slot first (``lease_until`` holds the order). One row
    #: may stand for a run of such slots of one schedule (see :func:`queued_fires`).
    QUEUED = "queued"
    SENT = "sent"  #: published to the broker
    SKIPPED = "skipped"  #: missed slots the misfire policy chose not to publish
    DROPPED = "dropped"  #: missed slots older than the grace window
    FAILED = "failed"  #: publishing failed for longer than the publish retry window
    OVERLAP = "overlap"  #: not sent: the previous run was still going (overlap policy ``skip``)
    BUFFERED = "buffered"  #: held until the previous run finishes (overlap policy ``buffer_one``)


class RunStatus(str, enum.Enum):
    """What the worker hook (:mod:`celery_dbeat.beat.worker`) reported about a sent fire's run."""

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
_NAMESPACE_BYTES = TASK_ID_NAMESPACE.bytes


def new_uid() -> str:
    """A new schedule's identity: 32 random hex digits."""
    return uuid.uuid4().hex


def fire_task_id(uid: str, slot: datetime, *, manual: bool = False) -> str:
    """The Celery task id of a fire: the same (schedule, slot) gives the same id on every beat.

    ``uuid5(TASK_ID_NAMESPACE, f"{uid}\\0slot\\0{slot in UTC as %Y-%m-%dT%H:%M:%S.%fZ}")``,
    ``manual`` instead of ``slot`` for a run-now fire; ``uid`` is the schedule's
    (:attr:`celery_dbeat.api.ScheduleInfo.uid`), so a rename does not change it.
    """
    # Slots lie in 1900-9000, so isoformat's year has the four digits %Y gives. uuid5's own
    # steps, without building a UUID object on the way: a beat computes one per fire.
    instant = slot.astimezone(timezone.utc).replace(tzinfo=None).isoformat("T", "microseconds")
    kind = "manual" if manual else "slot"
    name = f"{uid}\x00{kind}\x00{instant}Z".encode()
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + name, usedforsecurity=False).digest()[:16])
    digest[6] = digest[6] & 0x0F | 0x50  # version 5
    digest[8] = digest[8] & 0x3F | 0x80  # the RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@dataclass(frozen=True)
class ScheduleRow:
    """A schedule as read for planning; JSON columns are still text."""

    id: int
    #: The schedule's identity (see the module docstring); task ids and jitter derive from it.
    uid: str
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
    #: The recurrence set of an ``rrule`` schedule.
    rrule: str | None = None
    #: Overlap policy (``allow``, ``skip``, ``buffer_one``; NULL is ``allow``) and the longest a
    #: run may take before it counts as lost (NULL: ``dbeat_max_run_time``).
    overlap_policy: str | None = None
    max_run_time: float | None = None
    #: The exclusion calendar's name (NULL: none).
    calendar: str | None = None
    #: Read by the worker hook and the prune, not by planning; here as every field is.
    pause_after_failures: int | None = None
    history_limit: int | None = None
    #: Slot arguments (:mod:`.slot_arguments`): read when its fires are published.
    slot_kwarg: str | None = None
    previous_slot_kwarg: str | None = None
    #: Read by the worker hook and the beat's alerts, not by planning.
    alert_after_failures: int | None = None
    alert_deadline: float | None = None
    alert_task: str | None = None
    alert_webhook: str | None = None
    #: The last edit, pause or resume: slots due before it were not due as the row is now.
    updated_at: datetime | None = None
    #: ``next_run_at`` exactly as stored, for the compare-and-set. Only set on SQLite, which keeps
    #: timestamps as text: a hand-written '2024-05-06 09:30:00' must match itself, not its
    #: re-formatted '...09:30:00.000000'.
    next_run_at_text: str | None = field(default=None, compare=False)

    @classmethod
    def from_row(cls, row: Any) -> ScheduleRow:
        """From a database row of the planning columns, in the order of this class's fields
        (``celery_dbeat.store.reading.PLAN_COLUMNS``, then ``next_run_at_text`` if read)."""
        return cls(*row)


@dataclass(frozen=True)
class NewFire:
    slot: datetime
    status: FireStatus
    task_id: str | None = None
    slot_count: int = 1
    first_slot: datetime | None = None
    #: For a SKIPPED fire: the calendar that excluded its slots (``None``: the misfire policy).
    calendar: str | None = None
    #: For a queued run (:func:`queued_fires`): each of its slots, oldest first.
    slots: tuple[datetime, ...] = ()


#: Most slots one queued row stands for: a catch-up or backfill of more is several rows, so
#: that no row (its JSON list of slots) grows past what every backend's TEXT holds.
QUEUED_RUN_SLOTS = 500


def queued_fires(uid: str, slots: Sequence[datetime]) -> list[NewFire]:
    """``slots`` (ascending) of the schedule ``uid`` as QUEUED fires to record.

    A run of several slots is one row, a *queued run*: ``slot`` its newest, ``first_slot`` its
    oldest, ``slot_count`` how many, ``slots`` each of them; it has no task id of its own. So a
    week's catch-up costs an insert per schedule, not one per slot, and the on-time slots of the
    schedules planned after it are recorded without waiting for it. Beats turn a run into fires
    (each with its :func:`fire_task_id`) as they publish them, oldest first. A single slot is an
    ordinary queued fire.
    """
    fires = []
    for start in range(0, len(slots), QUEUED_RUN_SLOTS):
        run = tuple(slots[start : start + QUEUED_RUN_SLOTS])
        if len(run) == 1:
            fires.append(NewFire(run[0], FireStatus.QUEUED, fire_task_id(uid, run[0])))
        else:
            fires.append(
                NewFire(
                    run[-1],
                    FireStatus.QUEUED,
                    slot_count=len(run),
                    first_slot=run[0],
                    slots=run,
                )
            )
    return fires


def encode_slots(slots: Sequence[datetime]) -> str:
    """A queued run's slots as stored (``dbeat_fires.slots``): a JSON list of ISO-8601 UTC
    instants."""
    return json.dumps([slot.astimezone(timezone.utc).isoformat() for slot in slots])


def decode_slots(text: str) -> list[datetime]:
    """The slots :func:`encode_slots` stored, aware in UTC."""
    return [datetime.fromisoformat(value).astimezone(timezone.utc) for value in json.loads(text)]


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
    #: The lease this beat holds on the fire, as recorded (on the database's clock): the
    #: publisher extends it while it publishes, and only as long as it still holds that value.
    lease_until: datetime | None = None
    #: The keywords its schedule passes the slot and the previous slot under
    #: (:mod:`.slot_arguments`), and that previous slot, found as the fire is leased to be
    #: published (only when ``previous_slot_kwarg`` asks for it).
    slot_kwarg: str | None = None
    previous_slot_kwarg: str | None = None
    previous_slot: datetime | None = None

    @classmethod
    def from_row(cls, r: Any, lease_until: datetime | None = None) -> PublishRequest:
        """From a row of :data:`PUBLISH_COLUMNS` (a recorded fire joined with its schedule),
        leased until ``lease_until``."""
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
            lease_until,
            r.slot_kwarg,
            r.previous_slot_kwarg,
        )
