"""Pure misfire resolution: which of a schedule's overdue slots are published.

Given the schedule's slots from its first unrecorded one onwards, the current instant and the
policy, :func:`resolve` splits the overdue slots as ``SEMANTICS.md`` defines (``eps`` is the
on-time tolerance, ``W`` the grace window)::

    late     L = { t : now - eps <= t <= now }           fire normally, whatever the policy
    missed   M = { t : t < now - eps }

``eps`` is small (``dbeat_misfire_tolerance``, 5 s) because lateness while some beat was running
is never a miss: the planner widens ``eps`` for each schedule to cover the stretch in which beats
were running (:func:`watched_since`), up to :data:`LATE_WHILE_WATCHED`. Only slots that came due
while every beat was down (or stalled) are missed.
    eligible E = { t in M : now - t <= W }
    dropped  D = M \\ E                                   recorded, never published

and the policy picks from E what is published; what it does not pick is recorded as skipped. The
next regular slot is always the first slot after ``now``.

After a long outage the slots no policy can choose may arrive as one :class:`Bulk` each run of
them (counted by the caller, not listed), so resolving costs what the policy keeps, not what
was missed.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar, cast

__all__ = [
    "LATE_WHILE_WATCHED",
    "Bulk",
    "MisfirePolicy",
    "MisfireRules",
    "Resolution",
    "SlotGroup",
    "resolve",
    "watched_since",
]

#: A slot that came due while some beat was running is merely late however late it is, up to
#: this long (a herd, a beat that died holding a claim): a fleet further behind than this
#: catches up through the misfire policy instead of sending an ever older backlog.
LATE_WHILE_WATCHED = timedelta(minutes=10)


class MisfirePolicy(str, enum.Enum):
    """What is published for slots missed while every beat was down."""

    SKIP = "skip"  #: nothing
    LATEST = "latest"  #: one fire, the newest eligible slot (default)
    EARLIEST = "earliest"  #: one fire, the oldest eligible slot
    ALL = "all"  #: every eligible slot, oldest first, at most ``catchup_limit`` (newest kept)


@dataclass(frozen=True)
class MisfireRules:
    policy: MisfirePolicy = MisfirePolicy.LATEST
    tolerance: timedelta = timedelta(seconds=5)
    grace: timedelta | None = None
    catchup_limit: int = 100


#: A slot, or anything standing for one (the planner passes ``(slot, fire_at)`` pairs).
T = TypeVar("T")


@dataclass
class SlotGroup(Generic[T]):
    """Consecutive slots sharing an outcome, kept as bounds and a count rather than a list."""

    first: T
    last: T
    count: int = 1

    def add(self, slot: T) -> None:
        self.last = slot
        self.count += 1


@dataclass
class Resolution(Generic[T]):
    send: list[T] = field(default_factory=list)  #: slots to publish, ascending
    #: How many of ``send`` (its first ones) are missed slots the policy chose; the rest are
    #: late, and fire as on time.
    catch_up: int = 0
    skipped: SlotGroup[T] | None = None  #: missed slots the policy chose not to publish
    dropped: SlotGroup[T] | None = None  #: missed slots older than the grace window
    next_slot: T | None = None  #: first slot after ``now``; ``None`` if none is left

    @property
    def missed(self) -> int:
        return sum(g.count for g in (self.skipped, self.dropped) if g is not None) + (
            len(self.send)
        )


@dataclass(frozen=True)
class Bulk(Generic[T]):
    """``count`` consecutive missed slots from ``first`` to ``last``, given to :func:`resolve` as
    one item. The caller guarantees that none of them can be chosen: all are ``dropped`` (older
    than the grace window), or all are eligible with at least two eligible slots before them
    and more eligible slots after them than the policy keeps."""

    first: T
    last: T
    count: int
    dropped: bool


def _add_bulk(group: SlotGroup[T] | None, bulk: Bulk[T]) -> SlotGroup[T]:
    if group is None:
        return SlotGroup(bulk.first, bulk.last, bulk.count)
    group.last = bulk.last
    group.count += bulk.count
    return group


def _add(group: SlotGroup[T] | None, slot: T) -> SlotGroup[T]:
    if group is None:
        return SlotGroup(slot, slot)
    group.add(slot)
    return group


def _itself(slot: Any) -> datetime:
    return cast(datetime, slot)


def resolve(
    slots: Iterable[T | Bulk[T]],
    now: datetime,
    rules: MisfireRules,
    when: Callable[[T], datetime] = _itself,
) -> Resolution[T]:
    """Resolve every slot of ``slots`` up to ``now``.

    ``slots`` must be ascending and start at the schedule's first unrecorded slot. It is consumed
    up to and including the first slot after ``now``. ``when(slot)`` is the instant a slot is
    due (the slot itself, or later with jitter); lateness is measured from it. A :class:`Bulk`
    stands for a run of slots none of which can be chosen.
    """
    result: Resolution[T] = Resolution()
    late: list[T] = []
    # The newest eligible slots (one more than can be chosen, to know where skipping ends), and
    # the two oldest.
    window = (rules.catchup_limit if rules.policy is MisfirePolicy.ALL else 1) + 1
    newest: deque[T] = deque(maxlen=window)
    oldest: list[T] = []
    count = 0
    on_time_from = now - rules.tolerance
    grace_from = None if rules.grace is None else now - rules.grace

    for slot in slots:
        if isinstance(slot, Bulk):
            if slot.dropped:
                result.dropped = _add_bulk(result.dropped, slot)
            else:
                count += slot.count
            continue
        due = when(slot)
        if due > now:
            result.next_slot = slot
            break
        if due >= on_time_from:
            late.append(slot)
        elif grace_from is not None and due < grace_from:
            result.dropped = _add(result.dropped, slot)
        else:
            count += 1
            newest.append(slot)
            if len(oldest) < 2:
                oldest.append(slot)

    chosen: list[T] = []
    if count:
        policy = rules.policy
        if policy is MisfirePolicy.SKIP:
            result.skipped = SlotGroup(oldest[0], newest[-1], count)
        elif policy is MisfirePolicy.LATEST:
            chosen = [newest[-1]]
            if count > 1:
                result.skipped = SlotGroup(oldest[0], newest[-2], count - 1)
        elif policy is MisfirePolicy.EARLIEST:
            chosen = [oldest[0]]
            if count > 1:
                result.skipped = SlotGroup(oldest[1], newest[-1], count - 1)
        else:
            kept = min(count, rules.catchup_limit)
            chosen = list(newest)[len(newest) - kept :]
            if count > kept:
                result.skipped = SlotGroup(oldest[0], newest[-kept - 1], count - kept)
    result.send = chosen + late
    result.catch_up = len(chosen)
    return result


def watched_since(
    now: datetime,
    own: datetime | None,
    lifetimes: Iterable[tuple[datetime, datetime]],
    slack: timedelta,
) -> datetime:
    """The earliest instant from which, up to ``now``, some beat was running without a break.

    ``own`` is when this beat's current stretch of ticking began; ``lifetimes`` are the beats'
    heartbeats, ``(started_at, last_seen_at)``, each beat counting as running until ``slack``
    after it was last seen (it may have died just after, holding a claim).
    """
    since = now if own is None else min(own, now)
    spans = sorted((start, seen + slack) for start, seen in lifetimes)
    moved = True
    while moved:
        moved = False
        for start, end in spans:
            if start < since <= end:
                since, moved = start, True
    return since
