"""Why a slot did or did not fire, from the record and the definition: the pure part of
``dbeat explain`` (:meth:`celery_dbeat.api.Schedules.explain` reads what it needs and asks
:func:`explain`).

The record comes first: a fire recorded for the slot says what became of it (sent, by which beat,
with what lag; skipped or dropped by the misfire policy, in the outage it fell in; excluded by a
calendar; held by the overlap policy; set aside in error). Without one, the definition and the
schedule's state say why: not a slot at all (the nearest ones given), outside the bounds, before
the schedule existed, paused (by whom, with the note), past ``max_runs``, set aside in error,
excluded by a calendar, not yet due, or due and not yet recorded. Jitter and DST changes that
moved the slot are named in every case.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from .calendars import Calendar
from .fires import FireStatus
from .formats import iso, seconds_text
from .timing import DstNote, Timing
from .timing.jitter import fire_at

__all__ = ["AuditLike", "Explanation", "FireLike", "ScheduleLike", "Verdict", "explain"]

_DAY = timedelta(days=1)


class Verdict(str, enum.Enum):
    """What became of a slot, in one word."""

    SENT = "sent"  #: published to the broker
    PENDING = "pending"  #: recorded, a beat is publishing it
    QUEUED = "queued"  #: recorded, waiting for spare capacity (catch-up of ``all``, backfill)
    NOT_YET_DUE = "not_yet_due"
    DUE = "due"  #: due, and no beat has recorded it yet (beats down or behind)
    CALENDAR = "calendar"  #: excluded by the schedule's calendar
    OUTSIDE_BOUNDS = "outside_bounds"  #: before ``start_at`` or after ``end_at``
    BEFORE_CREATED = "before_created"  #: before the schedule existed
    MAX_RUNS = "max_runs"  #: after the schedule reached ``max_runs``
    SKIPPED = "skipped"  #: missed in an outage; the misfire policy did not send it
    DROPPED = "dropped"  #: missed in an outage, older than the grace window
    OVERLAP = "overlap"  #: held by the overlap policy: the previous run was still going
    PAUSED = "paused"
    ERROR = "error"  #: set aside in error (the fire, or the whole schedule)
    NOT_A_SLOT = "not_a_slot"
    NO_RECORD = "no_record"  #: a past slot with no record left (pruned, or an older definition)


class ScheduleLike(Protocol):
    """What :func:`explain` reads of a schedule (a :class:`~celery_dbeat.api.ScheduleInfo`)."""

    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str | None: ...
    @property
    def enabled(self) -> bool: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def updated_at(self) -> datetime: ...
    @property
    def run_count(self) -> int: ...
    @property
    def max_runs(self) -> int | None: ...
    @property
    def last_slot(self) -> datetime | None: ...
    @property
    def last_error(self) -> str | None: ...
    @property
    def pause_note(self) -> str | None: ...
    @property
    def paused_at(self) -> datetime | None: ...
    @property
    def misfire_policy(self) -> str | None: ...
    @property
    def misfire_grace(self) -> float | None: ...
    @property
    def overlap_policy(self) -> str | None: ...
    @property
    def jitter(self) -> float | None: ...
    @property
    def pruned_until(self) -> datetime | None: ...


class FireLike(Protocol):
    """What :func:`explain` reads of a fire record (a :class:`~celery_dbeat.api.FireInfo`)."""

    @property
    def slot(self) -> datetime: ...
    @property
    def status(self) -> str: ...
    @property
    def slot_count(self) -> int: ...
    @property
    def first_slot(self) -> datetime | None: ...
    @property
    def beat(self) -> str | None: ...
    @property
    def recorded_at(self) -> datetime: ...
    @property
    def sent_at(self) -> datetime | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def calendar(self) -> str | None: ...
    @property
    def run_status(self) -> str | None: ...
    @property
    def task_id(self) -> str | None: ...
    @property
    def origin(self) -> str | None: ...


class AuditLike(Protocol):
    """What :func:`explain` reads of an audit entry (a :class:`~celery_dbeat.api.Entry`)."""

    @property
    def at(self) -> datetime: ...
    @property
    def actor(self) -> str: ...
    @property
    def surface(self) -> str: ...
    @property
    def action(self) -> str: ...
    @property
    def changes(self) -> dict[str, list[Any]]: ...


@dataclass(frozen=True)
class Explanation:
    """Why ``slot`` of schedule ``name`` did or did not fire."""

    name: str
    slot: datetime
    verdict: Verdict
    #: One sentence for people.
    sentence: str
    #: How the slot was chosen: ``asked``, or without one, ``latest`` (the latest slot up to
    #: now), ``next`` (none passed yet) or ``now`` (a definition that cannot be read has none).
    chosen: str = "asked"
    #: The facts behind the verdict (instants aware, durations in seconds).
    details: Mapping[str, Any] = field(default_factory=dict)
    #: The DST changes that moved the slot (or, for a non-slot, made it one no more).
    dst: tuple[DstNote, ...] = ()
    #: For a non-slot: the nearest slots before and after it.
    nearest: tuple[datetime | None, datetime | None] = (None, None)

    def as_json(self) -> dict[str, Any]:
        def plain(value: Any) -> Any:
            if isinstance(value, datetime):
                return iso(value)
            if isinstance(value, timedelta):
                return value.total_seconds()
            return value

        data: dict[str, Any] = {
            "name": self.name,
            "slot": iso(self.slot),
            "chosen": self.chosen,
            "verdict": self.verdict.value,
            "sentence": self.sentence,
            "details": {key: plain(value) for key, value in self.details.items()},
            "dst": [note.text for note in self.dst],
        }
        if self.verdict is Verdict.NOT_A_SLOT:
            data["nearest"] = {"before": iso(self.nearest[0]), "after": iso(self.nearest[1])}
        return data


def _covers(fire: FireLike, slot: datetime) -> bool:
    if fire.slot == slot:
        return True
    return (
        fire.slot_count > 1 and fire.first_slot is not None and fire.first_slot <= slot < fire.slot
    )


def _pause_around(
    entries: Sequence[AuditLike], slot: datetime
) -> tuple[AuditLike | None, AuditLike | None]:
    """The pause in force at ``slot`` (the newest pause at or before it with no resume
    between) and the resume that ended it (``None``: still paused, or no pause)."""
    pause: AuditLike | None = None
    for entry in sorted(entries, key=lambda e: e.at):
        enabled = entry.changes.get("enabled")
        paused = entry.action in ("pause", "disable") or (
            enabled is not None and enabled[1] is False
        )
        resumed = entry.action == "resume" or (enabled is not None and enabled[1] is True)
        if entry.at <= slot:
            if paused:
                pause = entry
            elif resumed:
                pause = None
        elif pause is not None and resumed:
            return pause, entry
    return pause, None


def _who(entry: AuditLike) -> str:
    note = (entry.changes.get("pause_note") or [None, None])[1]
    text = f"by {entry.actor} ({entry.surface}) at {iso(entry.at)}"
    return f"{text}: {note!r}" if note else text


def explain(
    schedule: ScheduleLike,
    timing: Timing,
    slot: datetime,
    *,
    now: datetime,
    fires: Sequence[FireLike] = (),
    previous: FireLike | None = None,
    audit: Sequence[AuditLike] = (),
    calendar: Calendar | None = None,
    chosen: str = "asked",
) -> Explanation:
    """Why ``slot`` of ``schedule`` (whose timing, bounds included, is ``timing``) did or did not
    fire at ``now``: from ``fires`` (the non-manual records that cover it), ``previous`` (the
    newest record before them: where an outage began), ``audit`` (the schedule's trail: who
    paused it) and its ``calendar``."""
    notes = tuple(note for note in timing.spec.dst_notes(slot - _DAY, slot + _DAY))
    moved = tuple(note for note in notes if slot in note.fires)
    # A record of the very instant says what became of it, even if an edit since made it no
    # slot of the definition as it is now; one standing for a range holds only the slots.
    own = next((f for f in fires if f.slot == slot), None)

    def done(verdict: Verdict, sentence: str, **details: Any) -> Explanation:
        extra = [note.text for note in moved]
        if schedule.jitter and verdict in (Verdict.SENT, Verdict.PENDING, Verdict.NOT_YET_DUE):
            after = timing.first_after(slot)
            due = fire_at(schedule.uid or "", slot, timedelta(seconds=schedule.jitter), after)
            details["due_at"] = due
            extra.append(f"moved by jitter: due at {iso(due)}, {_span(due - slot)} after the slot")
        text = "; ".join([sentence, *extra])
        return Explanation(schedule.name, slot, verdict, text + ".", chosen, details, moved)

    if own is not None:
        return _from_record(own, slot, schedule, previous, done)
    if not timing.is_slot(slot):
        before = timing.last_before(slot, slot - timedelta(days=366 * 50))
        after = timing.first_after(slot)
        around = "; ".join(note.text for note in notes if slot in note.occurrences)
        sentence = (
            f"{iso(slot)} is not a slot of {schedule.name!r}: the nearest are "
            f"{iso(before) or 'none'} before and {iso(after) or 'none'} after"
        )
        if around:
            sentence += f" ({around})"
        return Explanation(
            schedule.name,
            slot,
            Verdict.NOT_A_SLOT,
            sentence + ".",
            chosen,
            {},
            tuple(note for note in notes if slot in note.occurrences),
            (before, after),
        )
    record = next((f for f in fires if _covers(f, slot)), None)
    if record is not None:
        return _from_record(record, slot, schedule, previous, done)

    if slot < schedule.created_at:
        return done(
            Verdict.BEFORE_CREATED,
            f"Not fired: the schedule was created at {iso(schedule.created_at)}, after this slot",
            created_at=schedule.created_at,
        )
    if (timing.start_at is not None and slot < timing.start_at) or (
        timing.end_at is not None and slot > timing.end_at
    ):
        return done(
            Verdict.OUTSIDE_BOUNDS,
            f"Not fired: outside the bounds start_at={iso(timing.start_at) or '-'}, "
            f"end_at={iso(timing.end_at) or '-'}",
            start_at=timing.start_at,
            end_at=timing.end_at,
        )
    pause, resume = _pause_around(audit, slot)
    future = slot > now
    if pause is not None or (
        not schedule.enabled and schedule.paused_at is not None and schedule.paused_at <= slot
    ):
        if pause is not None:
            who = _who(pause)
        else:
            who = f"at {iso(schedule.paused_at)}" + (
                f": {schedule.pause_note!r}" if schedule.pause_note else ""
            )
        if resume is not None:
            tail = f"; resumed by {resume.actor} at {iso(resume.at)} without catching it up"
        else:
            tail = "; it fires again once resumed" if future else ""
        return done(
            Verdict.PAUSED,
            f"{'Will not fire' if future else 'Not fired'}: paused {who}{tail}",
            paused_by=pause.actor if pause else None,
        )
    last = schedule.last_slot
    if (
        schedule.max_runs is not None
        and schedule.run_count >= schedule.max_runs
        and (last is None or slot > last)
    ):
        return done(
            Verdict.MAX_RUNS,
            f"Not fired: the schedule reached max_runs={schedule.max_runs} "
            f"with the slot {iso(last) or '-'}",
            max_runs=schedule.max_runs,
        )
    if schedule.last_error is not None and (last is None or slot > last):
        return done(
            Verdict.ERROR,
            f"Not fired: the schedule is set aside in error: {schedule.last_error}",
            error=schedule.last_error,
        )
    if calendar is not None and calendar.excludes(slot):
        verb = "Will not fire" if future else "Not fired"
        return done(
            Verdict.CALENDAR,
            f"{verb}: excluded by the calendar {calendar.name!r}",
            calendar=calendar.name,
        )
    if future:
        return done(Verdict.NOT_YET_DUE, f"Not yet due: the slot is {_span(slot - now)} from now")
    if schedule.pruned_until is not None and slot <= schedule.pruned_until:
        return done(
            Verdict.NO_RECORD,
            f"No record: the history was pruned up to {iso(schedule.pruned_until)} "
            "(the slot was most likely sent)",
            pruned_until=schedule.pruned_until,
        )
    if last is None or slot > last:
        return done(
            Verdict.DUE,
            f"Due {_span(now - slot)} ago and not recorded yet: no beat has reached it "
            "(are beats running? see dbeat status)",
        )
    if schedule.updated_at > slot:
        return done(
            Verdict.NO_RECORD,
            f"No record: the definition was edited at {iso(schedule.updated_at)}, after this "
            "slot; the slots before were those of the definition then",
            updated_at=schedule.updated_at,
        )
    return done(Verdict.NO_RECORD, "No record of this slot (its record was deleted)")


def _span(delta: timedelta) -> str:
    return seconds_text(round(delta.total_seconds(), 3)) or "0s"


def _from_record(
    record: FireLike,
    slot: datetime,
    schedule: ScheduleLike,
    previous: FireLike | None,
    done: Callable[..., Explanation],
) -> Explanation:
    facts: dict[str, Any] = {
        "status": record.status,
        "recorded_at": record.recorded_at,
        "task_id": record.task_id,
    }
    status = record.status
    if status == FireStatus.SENT.value:
        lag = None if record.sent_at is None else record.sent_at - slot
        facts.update(
            beat=record.beat, sent_at=record.sent_at, lag=lag, run_status=record.run_status
        )
        how = " (a backfill)" if record.origin else ""
        run = f"; its run {record.run_status}" if record.run_status else ""
        return done(
            Verdict.SENT,
            f"Sent{how} by beat {record.beat or '?'} at {iso(record.sent_at)}, "
            f"{_span(lag or timedelta(0))} after its slot{run}",
            **facts,
        )
    if status == FireStatus.PENDING.value:
        return done(
            Verdict.PENDING,
            f"Recorded at {iso(record.recorded_at)}, not sent yet: a live beat publishes it",
            **facts,
        )
    if status == FireStatus.QUEUED.value:
        return done(
            Verdict.QUEUED,
            f"Queued at {iso(record.recorded_at)} for spare capacity (a catch-up or "
            "backfill): sent after the on-time fires",
            **facts,
        )
    if status == FireStatus.SKIPPED.value and record.calendar:
        return done(
            Verdict.CALENDAR,
            f"Not sent: excluded by the calendar {record.calendar!r} "
            f"(recorded as skipped at {iso(record.recorded_at)})",
            calendar=record.calendar,
            **facts,
        )
    if status in (FireStatus.SKIPPED.value, FireStatus.DROPPED.value):
        since = None if previous is None else (previous.sent_at or previous.slot)
        outage = f"from about {iso(since)} " if since is not None else ""
        fell = (
            f"it fell in an outage {outage}until {iso(record.recorded_at)}, when a beat came back"
        )
        group = f" ({record.slot_count} slots missed together)" if record.slot_count > 1 else ""
        facts.update(
            outage_from=since, outage_until=record.recorded_at, slots_missed=record.slot_count
        )
        if status == FireStatus.SKIPPED.value:
            policy = schedule.misfire_policy or "the default"
            return done(
                Verdict.SKIPPED,
                f"Not sent: skipped by the misfire policy ({policy}): {fell}{group}",
                misfire_policy=schedule.misfire_policy,
                **facts,
            )
        grace = seconds_text(schedule.misfire_grace) or "the default"
        return done(
            Verdict.DROPPED,
            f"Not sent: dropped, older than the misfire grace window ({grace}): {fell}{group}",
            misfire_grace=schedule.misfire_grace,
            **facts,
        )
    if status in (FireStatus.OVERLAP.value, FireStatus.BUFFERED.value):
        policy = schedule.overlap_policy or "skip"
        what = "not sent" if status == FireStatus.OVERLAP.value else "held until it finishes"
        return done(
            Verdict.OVERLAP,
            f"Held by the overlap policy ({policy}): the previous run was still going, "
            f"so it was {what}",
            overlap_policy=schedule.overlap_policy,
            **facts,
        )
    facts.update(error=record.error)
    return done(
        Verdict.ERROR,
        f"Not sent: set aside in error: {record.error or 'publishing failed'}",
        **facts,
    )
