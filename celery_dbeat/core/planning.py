"""Pure fire planning: from a schedule row and ``now``, the transition beat should record.

No I/O and no Celery: the ticker reads rows, asks :func:`plan` what to do with each, and records
the answer. The rows and fires it works on, and their identity, are :mod:`celery_dbeat.core`'s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from itertools import chain, islice, pairwise
from typing import overload

from .calendars import Calendar
from .errors import ValidationError, one_of
from .fires import FireStatus, NewFire, ScheduleRow, Transition, fire_task_id, queued_fires
from .misfire import LATE_WHILE_WATCHED, Bulk, MisfirePolicy, MisfireRules, SlotGroup, resolve
from .overlap import IDLE, OverlapPolicy, RunState, split_for_overlap
from .timing import Timing, build_timing
from .timing.jitter import fire_at
from .validation import check_payload

__all__ = [
    "catch_up_slots",
    "due_times",
    "overlap_of",
    "plan",
    "rules_of",
    "timing_of",
]


def timing_of(row: ScheduleRow, *, bounds: bool = True) -> Timing:
    """The row's timing, as beat computes it; without ``bounds``, its spec alone (no
    ``start_at``/``end_at``: the load picture clips each row to its span itself)."""
    return build_timing(
        kind=row.kind,
        cron=row.cron,
        timezone=row.timezone,
        every=row.every,
        run_at=row.run_at,
        anchor_at=row.anchor_at or row.created_at,
        start_at=row.start_at if bounds else None,
        end_at=row.end_at if bounds else None,
        dst_gap=row.dst_gap,
        dst_fold=row.dst_fold,
        cron_days=row.cron_days,
        solar_event=row.solar_event,
        latitude=row.latitude,
        longitude=row.longitude,
        rrule=row.rrule,
    )


def rules_of(row: ScheduleRow, defaults: MisfireRules) -> MisfireRules:
    policy = defaults.policy
    if row.misfire_policy is not None:
        policy = one_of("misfire_policy", row.misfire_policy, MisfirePolicy)
    grace = defaults.grace
    if row.misfire_grace is not None:
        if not math.isfinite(row.misfire_grace) or row.misfire_grace <= 0:
            raise ValidationError("misfire_grace", row.misfire_grace, "must be > 0 seconds")
        grace = timedelta(seconds=row.misfire_grace)
    limit = defaults.catchup_limit
    if row.catchup_limit is not None:
        if row.catchup_limit < 0:
            raise ValidationError("catchup_limit", row.catchup_limit, "must be >= 0")
        limit = row.catchup_limit
    return MisfireRules(policy, defaults.tolerance, grace, limit)


def _watched(
    rules: MisfireRules, row: ScheduleRow, now: datetime, watched: datetime | None
) -> MisfireRules:
    """``rules`` with the tolerance widened to the slots that came due while beats were running
    and the schedule was as it is now: an edit or a resume (``updated_at``) starts its stretch
    anew, so the slots of a pause resumed with catch-up go through the policy."""
    if watched is None:
        return rules
    since = watched if row.updated_at is None else max(watched, row.updated_at)
    widened = min(now - since, LATE_WHILE_WATCHED)
    return replace(rules, tolerance=widened) if widened > rules.tolerance else rules


def _group(group: SlotGroup[tuple[datetime, datetime]] | None, status: FireStatus) -> list[NewFire]:
    if group is None:
        return []
    return [NewFire(group.last[0], status, slot_count=group.count, first_slot=group.first[0])]


def _run(
    slots: Sequence[datetime], status: FireStatus, calendar: str | None = None
) -> list[NewFire]:
    """One fire standing for ``slots`` (ascending), or none without any."""
    if not slots:
        return []
    first, last = slots[0], slots[-1]
    return [NewFire(last, status, slot_count=len(slots), first_slot=first, calendar=calendar)]


def overlap_of(row: ScheduleRow) -> OverlapPolicy:
    if row.overlap_policy is None:
        return OverlapPolicy.ALLOW
    return one_of("overlap_policy", row.overlap_policy, OverlapPolicy)


def plan(
    row: ScheduleRow,
    now: datetime,
    defaults: MisfireRules,
    runs: RunState = IDLE,
    watched: datetime | None = None,
    calendar: Calendar | str | None = None,
) -> Transition:
    """Decide what to record for ``row`` at ``now``, given what it has running (``runs``, which
    only matters under an overlap policy), since when some beat has been running without a
    break (``watched``, see :func:`~celery_dbeat.core.misfire.watched_since`) and the calendar
    ``row.calendar`` names (``calendar``: as read, why it cannot be read, or ``None`` if no
    calendar has that name). Never raises for bad stored data."""
    try:
        return _plan(row, now, defaults, runs, watched, calendar)
    except (ArithmeticError, ValueError, TypeError) as exc:
        # Validation should have caught it; whatever a hand-edited row holds, beat goes on.
        return Transition(row, next_run_at=None, error=f"cannot compute slots: {exc!r}")


def _plan(
    row: ScheduleRow,
    now: datetime,
    defaults: MisfireRules,
    runs: RunState,
    watched: datetime | None,
    calendar: Calendar | str | None,
) -> Transition:
    if row.calendar is None:
        calendar = None
    elif calendar is None:
        return Transition(row, next_run_at=None, error=f"calendar {row.calendar!r} does not exist")
    elif isinstance(calendar, str):
        return Transition(row, next_run_at=None, error=calendar)
    try:
        timing = timing_of(row)
        rules = _watched(rules_of(row, defaults), row, now, watched)
        overlap = overlap_of(row)
        check_payload(row.args, row.kwargs, row.options)
        if row.max_runs is not None and row.max_runs < 1:
            raise ValidationError("max_runs", row.max_runs, "must be >= 1")
    except ValidationError as exc:
        return Transition(row, next_run_at=None, error=str(exc))

    remaining = None if row.max_runs is None else row.max_runs - row.run_count
    if remaining is not None and remaining <= 0:
        return Transition(row, next_run_at=None, finished=True)

    jitter = timedelta(seconds=row.jitter) if row.jitter else None
    if row.next_run_at is None:
        # Asked to compute from now; never before a slot that was already recorded.
        after = now if row.last_slot is None else max(now, row.last_slot)
        first = next(due_times(row.uid, timing.slots_after(after), jitter), None)
        if first is None:
            return Transition(row, next_run_at=None, finished=True)
        return Transition(row, next_run_at=first[0], due_at=first[1] if jitter else None)

    slots = catch_up_slots(timing, row.next_run_at, now, rules, jitter)
    excluded: list[datetime] = []
    if calendar is not None:
        slots = _without_excluded(slots, calendar, now, excluded)
    result = resolve(due_times(row.uid, slots, jitter), now, rules, when=_due)
    due = [slot for slot, _ in result.send]
    sending, buffering, _ = split_for_overlap(len(due), overlap, runs)
    send, buffer = due[:sending], due[sending : sending + buffering]
    overlapped = due[sending + buffering :]
    finished = result.next_slot is None
    if remaining is not None and len(send) + len(buffer) >= remaining:
        # The run limit is reached; overlapped slots after the last run are not recorded.
        send = send[:remaining]
        buffer = buffer[: remaining - len(send)]
        overlapped = [slot for slot in overlapped if slot < max(send + buffer)]
        finished = True
    # A catch-up of policy ``all`` waits in the queue for spare capacity, so that it never holds
    # back another schedule's on-time fire (under an overlap policy at most one is sent anyway),
    # recorded as one queued run rather than a row per slot.
    queue = rules.policy is MisfirePolicy.ALL and overlap is OverlapPolicy.ALLOW
    queued = result.catch_up if queue else 0
    fires = queued_fires(row.uid, send[:queued])
    fires += [
        NewFire(slot, FireStatus.PENDING, fire_task_id(row.uid, slot)) for slot in send[queued:]
    ]
    fires += [NewFire(slot, FireStatus.BUFFERED, fire_task_id(row.uid, slot)) for slot in buffer]
    fires += _run(overlapped, FireStatus.OVERLAP)
    fires += _group(result.skipped, FireStatus.SKIPPED)
    fires += _group(result.dropped, FireStatus.DROPPED)
    if calendar is not None:
        fires += _run(excluded, FireStatus.SKIPPED, calendar.name)
    handled = [f.slot for f in fires]
    upcoming = None if finished or result.next_slot is None else result.next_slot
    return Transition(
        row,
        next_run_at=None if upcoming is None else upcoming[0],
        due_at=None if upcoming is None or jitter is None else upcoming[1],
        fires=fires,
        last_slot=max(handled) if handled else None,
        runs_added=len(send) + len(buffer),
        finished=finished,
    )


def _without_excluded(
    slots: Iterable[datetime | Bulk[datetime]],
    calendar: Calendar,
    now: datetime,
    excluded: list[datetime],
) -> Iterator[datetime | Bulk[datetime]]:
    """``slots`` without those up to ``now`` that ``calendar`` excludes, which are appended to
    ``excluded``: they are never due and never missed. The slots after ``now`` all stay, so that
    ``next_run_at`` is the next slot of the spec and an edit of the calendar decides about it
    when it comes due. (A :class:`Bulk` of a long outage passes whole: its slots are counted as
    dropped or skipped, excluded or not.)"""
    for slot in slots:
        if isinstance(slot, datetime) and slot <= now and calendar.excludes(slot):
            excluded.append(slot)
            continue
        yield slot


#: A schedule less than this far behind is resolved slot by slot without counting first.
_WALK_WITHIN = timedelta(minutes=5)
#: ...and so is one at most this many slots behind; further behind, runs of slots that no
#: policy can choose are counted (:meth:`Timing.count`) instead of walked.
_WALK_AT_MOST = 1000
_ONE_MICROSECOND = timedelta(microseconds=1)


def catch_up_slots(
    timing: Timing,
    first: datetime,
    now: datetime,
    rules: MisfireRules,
    jitter: timedelta | None,
) -> Iterator[datetime | Bulk[datetime]]:
    """``first`` (a schedule's next slot) and the slots after it, for :func:`resolve`.

    After a long outage, slots certainly older than the grace window, and eligible slots that
    no policy can choose (all but the two oldest and more than the policy keeps of the newest),
    come as one :class:`Bulk` per run: a schedule 30 days behind costs what the policy keeps,
    not a step per missed slot. "Certainly" allows for jitter: a slot is due at most ``jitter``
    after it.
    """
    yield first
    if now - first <= _WALK_WITHIN or timing.count(first, now) <= _WALK_AT_MOST:
        yield from timing.slots_after(first)
        return
    spread = jitter or timedelta(0)
    runs: list[tuple[datetime, datetime, bool]] = []  # (after, before, dropped): slots between
    eligible_from = first
    if rules.grace is not None:
        # Dropped: due before the grace window and not merely late.
        runs.append((first, now - max(rules.grace, rules.tolerance) - spread, True))
        eligible_from = max(first, now - rules.grace - _ONE_MICROSECOND)
    heads = list(islice(timing.slots_after(eligible_from), 2))
    eligible_before = now - rules.tolerance - spread
    keep = (rules.catchup_limit if rules.policy is MisfirePolicy.ALL else 1) + 1
    if len(heads) == 2:
        span = timedelta(seconds=1)
        while (before := eligible_before - span) > heads[1]:
            if timing.count(before - _ONE_MICROSECOND, eligible_before - _ONE_MICROSECOND) > keep:
                runs.append((heads[1], before, False))
                break
            span *= 2

    position = first
    for after, before, dropped in runs:
        for slot in timing.slots_after(position):
            if slot > after:
                break
            yield slot
            position = slot
        start = max(position, after)
        count = timing.count(start, before - _ONE_MICROSECOND)
        if count:
            last = timing.last_before(before, start)
            assert last is not None
            yield Bulk(timing.first_after(start) or last, last, count, dropped)
            position = last
    yield from timing.slots_after(position)


@overload
def due_times(
    uid: str, slots: Iterable[datetime], jitter: timedelta | None
) -> Iterator[tuple[datetime, datetime]]: ...


@overload
def due_times(
    uid: str, slots: Iterable[datetime | Bulk[datetime]], jitter: timedelta | None
) -> Iterator[tuple[datetime, datetime] | Bulk[tuple[datetime, datetime]]]: ...


def due_times(
    uid: str, slots: Iterable[datetime | Bulk[datetime]], jitter: timedelta | None
) -> Iterator[tuple[datetime, datetime] | Bulk[tuple[datetime, datetime]]]:
    """``(slot, instant it is due)`` for each slot: the slot itself, or later with jitter (hashed
    on the schedule's ``uid``). A bulk's bounds are paired with themselves (its slots are never
    due one by one). Without jitter no slot is looked at before it is asked for."""
    if jitter is None:
        for slot in slots:
            yield _paired(slot) if isinstance(slot, Bulk) else (slot, slot)
        return
    ahead: Iterable[datetime | Bulk[datetime] | None] = chain(slots, [None])
    for current, following in pairwise(ahead):
        assert current is not None
        if isinstance(current, Bulk):
            yield _paired(current)
            continue
        nxt = following.first if isinstance(following, Bulk) else following
        yield current, fire_at(uid, current, jitter, nxt)


def _paired(bulk: Bulk[datetime]) -> Bulk[tuple[datetime, datetime]]:
    return Bulk((bulk.first, bulk.first), (bulk.last, bulk.last), bulk.count, bulk.dropped)


def _due(pair: tuple[datetime, datetime]) -> datetime:
    return pair[1]
