"""Backfill's writes: the slots a backfill asks for
(:func:`celery_dbeat.core.backfill.backfill_slots`) recorded as queued runs (one row for up to
500 slots, :mod:`.queue`), marked ``origin = 'backfill'``, which beats publish like a catch-up,
with the capacity on-time fires leave.

A slot that has a fire on its way or sent (pending, queued, buffered, sent) is left alone: so a
second backfill of the same range sends nothing. A fire that failed for good is queued again,
under its recorded task id. Slots the misfire or overlap policy held back are recorded as one row
per run of them (``slot_count``, ``first_slot``): a backfill publishes those in its range and
shortens the record of the run to the slots it still stands for, so that every slot is counted
once, as sent or as held back.

A paused schedule's backfill is queued as well: its fires wait for the resume (:mod:`.queue`), and
the report says so. The slots its calendar excludes are listed apart: they are never sent.

A slot without a record at or before the schedule's ``pruned_until`` (the slot up to which the
prunes deleted its records) may have been sent: it is reported as pruned and sent only when the
backfill asks for a ``resend``.

The slots are drawn before the transaction (:func:`plan`): the schedule's row is locked only
to read and write its records, never while a long range is walked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.backfill import backfill_slots
from ..core.definitions import Definition
from ..core.fires import FireStatus
from ..core.formats import iso
from ..core.origins import BACKFILL_ORIGIN
from ..core.states import schedule_state
from ..core.timing import Timing
from .calendars import load_calendar
from .models import F, S
from .queue import queue_slots, queued_slots
from .schedules import ensure_uid, load_schedule

__all__ = ["BackfillReport", "Plan", "audit_detail", "backfill", "plan"]


_ON_ITS_WAY = {
    FireStatus.PENDING.value,
    FireStatus.QUEUED.value,
    FireStatus.BUFFERED.value,
    FireStatus.SENT.value,
}
_HELD_BACK = {FireStatus.SKIPPED.value, FireStatus.DROPPED.value, FireStatus.OVERLAP.value}
_ONE_MICROSECOND = timedelta(microseconds=1)
#: How many excluded slots a summary names.
_EXCLUDED_SHOWN = 3
_RUN_COLUMNS = (
    F.c.id,
    F.c.schedule_id,
    F.c.slot,
    F.c.status,
    F.c.slot_count,
    F.c.first_slot,
    F.c.recorded_at,
)


@dataclass
class BackfillReport:
    """What a backfill of ``[start, end]`` found and did (or, ``dry_run``, would do)."""

    name: str
    start: datetime
    end: datetime
    dry_run: bool
    #: Slots of the schedule in the range.
    slots: int = 0
    #: Slots queued now: sent by the beats with the capacity on-time fires leave.
    queued: list[datetime] = field(default_factory=list)
    #: Slots whose fire was already on its way or sent: left alone.
    already: int = 0
    #: Slots without a record at or before ``pruned_until``: their history was pruned, they
    #: may have been sent; queued only with ``resend``.
    pruned: int = 0
    pruned_until: datetime | None = None
    resend: bool = False
    #: The schedule's calendar, and the slots of the range it excludes (not counted in
    #: ``slots``: they are not slots of the schedule, and are never sent).
    calendar: str | None = None
    excluded: list[datetime] = field(default_factory=list)
    #: Whether the schedule is paused: its queued fires then wait for its resume.
    paused: bool = False

    def summary(self) -> str:
        """One line saying what was (or, dry run, would be) queued, as every surface says it."""
        if not self.queued:
            return (
                f"nothing to backfill: {self.slots} slot(s) of {self.name!r} in the range, "
                f"{self.already} already sent or on their way{self._pruned_text()}"
                f"{self._excluded_text()}"
            )
        verb = "would queue" if self.dry_run else "queued"
        if self.paused:
            when = f"{self.name!r} is paused: they wait, and once it is resumed beats send them"
        else:
            when = "beats send them"
        return (
            f"{verb} {len(self.queued)} fire(s) of {self.name!r} from {iso(self.queued[0])} to "
            f"{iso(self.queued[-1])} ({self.already} of the {self.slots} slot(s) in the range "
            f"already sent or on their way{self._pruned_text()}{self._excluded_text()}); "
            f"{when} behind on-time fires"
        )

    def _excluded_text(self) -> str:
        if not self.excluded:
            return ""
        shown = ", ".join(iso(slot) for slot in self.excluded[:_EXCLUDED_SHOWN])
        more = ", ..." if len(self.excluded) > _EXCLUDED_SHOWN else ""
        return (
            f"; {len(self.excluded)} excluded by calendar {self.calendar!r}, never sent"
            f" ({shown}{more})"
        )

    def _pruned_text(self) -> str:
        if not self.pruned:
            return ""
        pruned = f"at or before {iso(self.pruned_until)}, whose history was pruned"
        if self.resend:
            return f"; {self.pruned} of them {pruned}, sent again"
        return (
            f", {self.pruned} {pruned} (they may have been sent: backfill with resend to send "
            "them anyway)"
        )


def audit_detail(report: BackfillReport) -> dict[str, list[Any]]:
    """What the audit trail records of a backfill (``{field: [old, new]}``): its range and how
    many fires it queued and found already sent; nothing for a dry run or a backfill that found
    every slot sent, which change nothing."""
    if report.dry_run or not report.queued:
        return {}
    detail: dict[str, list[Any]] = {
        "from": [None, iso(report.start)],
        "to": [None, iso(report.end)],
        "queued": [None, len(report.queued)],
        "already": [None, report.already],
    }
    if report.pruned:
        detail["pruned"] = [None, report.pruned]
        detail["resend"] = [None, report.resend]
    return detail


@dataclass(frozen=True)
class Plan:
    """The slots a backfill asks for, drawn from one version of the schedule's row."""

    schedule_id: int
    version: int
    slots: list[datetime]


def plan(row: Any, start: datetime, end: datetime, now: datetime, limit: int) -> Plan:
    """The slots of the schedule ``row`` (every ``dbeat_schedules`` column) in ``[start, end]``,
    refused as :func:`~celery_dbeat.core.backfill.backfill_slots` refuses; no I/O, so that the
    caller draws them outside any transaction."""
    return Plan(row.id, row.version, backfill_slots(_timing(row), start, end, now, limit))


def _timing(row: Any) -> Timing:
    return Definition.from_columns(row._mapping).timing(
        row.start_at or row.anchor_at or row.created_at
    )


def backfill(
    conn: Connection,
    name: str,
    start: datetime,
    end: datetime,
    now: datetime,
    *,
    limit: int,
    dry_run: bool = False,
    resend: bool = False,
    planned: Plan | None = None,
) -> BackfillReport:
    """Queue the slots of schedule ``name`` in ``[start, end]`` that were never sent (see the
    module docstring); ``dry_run`` reports the same without writing; ``resend`` queues the
    slots whose history was pruned too. ``planned``: the slots drawn by :func:`plan` before
    the transaction, drawn again here (under the lock) only if the row changed since."""
    query = sa.select(S).where(S.c.name == name)
    if conn.dialect.name != "sqlite":  # wait for a beat recording this schedule's fires
        query = query.with_for_update()
    row = conn.execute(query).first() or load_schedule(conn, name)  # load raises if absent
    timing = _timing(row)
    if planned is None or (planned.schedule_id, planned.version) != (row.id, row.version):
        planned = plan(row, start, end, now, limit)
    slots, excluded = planned.slots, list[datetime]()
    if row.calendar is not None:  # the days its calendar removes are not its slots
        calendar = load_calendar(conn, row.calendar)
        kept: list[datetime] = []
        for slot in slots:
            (excluded if calendar.excludes(slot) else kept).append(slot)
        slots = kept
    report = BackfillReport(
        name,
        start,
        end,
        dry_run,
        slots=len(slots),
        resend=resend,
        calendar=row.calendar,
        excluded=excluded,
        paused=schedule_state(row) == "paused",
    )
    if not slots:
        return report
    its_own = sa.select(*_RUN_COLUMNS).where(F.c.schedule_id == row.id, F.c.manual.is_(False))
    recorded = list(conn.execute(its_own.where(F.c.slot >= start, F.c.slot <= end)))
    # Rows of runs of held-back slots that reach into the range from after it.
    reaching = its_own.where(F.c.slot > end, F.c.first_slot <= end, F.c.status.in_(_HELD_BACK))
    recorded += list(conn.execute(reaching))
    wanted = set(slots)
    on_its_way = {r.slot for r in recorded if r.status in _ON_ITS_WAY}
    on_its_way |= queued_slots(conn, row.id, start, end)  # those of queued runs too
    report.already = len(wanted & on_its_way)
    todo = sorted(wanted - on_its_way)
    todo = _leave_pruned(report, todo, recorded, row.pruned_until)
    report.queued = todo
    if dry_run or not todo:
        return report
    uid = ensure_uid(conn, row.id, row.uid)
    for r in recorded:
        if r.status in _HELD_BACK:
            _shorten(conn, timing, r, start, end)
        elif r.status == FireStatus.FAILED.value and r.slot in wanted:
            conn.execute(sa.delete(F).where(F.c.id == r.id))  # queued again below, same id
    queue_slots(conn, row.id, uid, todo, now=now, origin=BACKFILL_ORIGIN)
    return report


def _leave_pruned(
    report: BackfillReport, todo: list[datetime], recorded: list[Any], pruned_until: datetime | None
) -> list[datetime]:
    """``todo`` without the slots whose record a prune may have deleted (no record, at or before
    ``pruned_until``), counted in ``report``; with them when it asks for a resend."""
    if pruned_until is None or not todo or todo[0] > pruned_until:
        return todo
    recorded_slots = {r.slot for r in recorded}
    # Rows standing for several slots (runs of held-back slots): few, whatever the range.
    runs = [(r.first_slot, r.slot) for r in recorded if r.first_slot not in (None, r.slot)]
    pruned = {
        slot
        for slot in todo
        if slot <= pruned_until
        and slot not in recorded_slots
        and not any(first <= slot <= last for first, last in runs)
    }
    report.pruned, report.pruned_until = len(pruned), pruned_until
    return todo if report.resend else [slot for slot in todo if slot not in pruned]


def _shorten(conn: Connection, timing: Timing, run: Any, start: datetime, end: datetime) -> None:
    """The row of a run of held-back slots ``[first_slot, slot]``, without the slots a backfill
    of ``[start, end]`` takes out of it: kept for the part after the range, and a new row for
    the part before it; deleted when nothing is left."""
    first = run.first_slot or run.slot
    if run.slot < start or first > end:
        return
    before = (
        timing.count(first - _ONE_MICROSECOND, start - _ONE_MICROSECOND) if first < start else 0
    )
    after = timing.count(end, run.slot) if run.slot > end else 0
    if after:
        conn.execute(
            sa.update(F)
            .where(F.c.id == run.id)
            .values(slot_count=after, first_slot=timing.first_after(end))
        )
    else:
        conn.execute(sa.delete(F).where(F.c.id == run.id))
    if before:
        last = timing.last_before(start, first - _ONE_MICROSECOND)
        assert last is not None
        conn.execute(
            sa.insert(F).values(
                schedule_id=run.schedule_id,
                slot=last,
                manual=False,
                status=run.status,
                slot_count=before,
                first_slot=first,
                recorded_at=run.recorded_at,
                attempts=0,
            )
        )
