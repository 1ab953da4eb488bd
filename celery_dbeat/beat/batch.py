"""The on-time batch: claim due schedules, plan them, claim their fires' locks, record the fires
and the schedules' next slots in the claim's transaction, and publish (steps 2-6 of
:mod:`.ticker`'s algorithm, and its batch bounds); ``batch_size`` halves while batches take
long."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from celery.utils.log import get_logger

from ..core.calendars import Calendar
from ..core.fires import FireKey, FireStatus, ScheduleRow, Transition
from ..core.overlap import IDLE, RunState
from ..core.planning import plan
from ..locks import FireLock
from ..store.calendars import CalendarCache
from .pacing import BATCH_SHARE_OF_LEASE, Part, next_batch_size
from .publishing import PublishAhead, log_fire

__all__ = ["RECORDED_WEIGHT", "OnTime"]

logger = get_logger(__name__)

#: What a row recorded and not published in the batch (a catch-up's queued run, skipped or dropped
#: slots, a buffered fire) weighs in a batch's fire budget, against 1 for a fire the batch
#: publishes: it costs an insert, not a publish within the lease.
RECORDED_WEIGHT = 0.1
#: The first batch after a round that ran out of time (see :meth:`OnTime.fire_due`).
_FIRST_AFTER_RUNNING_OUT = 50


class _GiveBack(Exception):
    """The batch before this one is still being published: give this one's rows back rather
    than hold two batches recorded and not yet sent (or this transaction open) any longer."""


@dataclass(eq=False)
class OnTime(Part):
    """One beat's on-time batches (see the module docstring)."""

    lock: FireLock

    def __post_init__(self) -> None:
        self.rules = self.settings.misfire_rules
        self.beat = self.settings.instance_name
        #: Rows claimed (and fires recorded) per batch: ``batch_size``, less while batches take
        #: long (see :func:`next_batch_size`).
        self.batch_size = self.settings.batch_size
        self._ahead: PublishAhead | None = None
        #: Whether the last :meth:`fire_due` ran out of time with more due.
        self._ran_out = False
        #: Schedules whose planning failed, with the error last logged.
        self._broken: dict[int, str] = {}
        #: The calendars the batches name, read again when their version moves.
        self._calendars = CalendarCache()

    def fire_due(self) -> bool:
        """Record and publish everything due now. True if due rows were left to other beats
        (locked by them, or claimed or recorded by them first)."""
        budget_end = self.clock.monotonic() + self.settings.max_interval.total_seconds()
        left_to_others = False
        # Publish each batch while the next one is claimed and recorded.
        if self.store.publishes_ahead:
            self._ahead = PublishAhead(self.publishing)
        # Behind, the publisher has been idle since the last call's final batch: a small first
        # batch sets it going sooner, and the batches double up to the batch size.
        limit = min(self.batch_size, _FIRST_AFTER_RUNNING_OUT) if self._ran_out else self.batch_size
        self._ran_out = False
        try:
            while True:
                claimed, planned, published, skipped = self._fire_batch(limit)
                left_to_others = left_to_others or skipped > 0 or claimed == 0
                if claimed == 0:
                    return left_to_others
                if self.clock.monotonic() > budget_end:
                    self._ran_out = claimed == limit and self._ahead is not None
                    return left_to_others
                if planned == claimed < limit:
                    return left_to_others  # every due row handled
                if planned and published == 0 and skipped == planned:
                    return True
                limit = min(self.batch_size, 2 * limit)
        finally:
            ahead, self._ahead = self._ahead, None
            if ahead is not None:
                ahead.wait()

    def _fire_batch(self, limit: int) -> tuple[int, int, int, int]:
        """Claim, plan, record and publish one batch: (rows claimed, rows planned, fires to
        publish, planned rows left to other beats)."""
        # The lease is measured from this instant, on both clocks: if this beat is paused
        # anywhere after it, the pause counts against the lease before anything is published.
        now, started = self.clock.now(), self.clock.monotonic()
        watched = self.watch.since(now)
        lease = self.settings.lock_ttl.total_seconds()
        won: set[FireKey] = set()
        claimed = planned = 0
        try:
            late_since = watched - self.settings.misfire_tolerance
            with self.store.claim_due(now, limit, self.beat, late_since) as batch:
                claimed = len(batch.schedules)
                self.metrics.error("schedule", batch.set_aside)
                if not claimed:
                    return 0, 0, 0, 0
                states = batch.run_states(self.settings.max_run_time)
                calendars = batch.calendars(self._calendars)
                transitions = self._plan(
                    batch.schedules, now, states, watched, limit, started + lease * 0.1, calendars
                )
                planned = len(transitions)
                keyed = {
                    t.key: t for t in transitions if t.fires and t.schedule.next_run_at is not None
                }
                won = self.lock.claim(keyed.keys(), self.settings.lock_ttl)
                self.metrics.claims(len(won), len(keyed) - len(won))
                if self.lock.degraded:
                    self.metrics.error("redis")
                chosen = [t for t in transitions if not t.fires or t.key in won]
                requests = batch.record(chosen, batch.lease_until(now, self.settings.lock_ttl))
                applied = batch.applied
                if self._ahead is not None and not self._ahead.done(lease * BATCH_SHARE_OF_LEASE):
                    raise _GiveBack
        except _GiveBack:
            self.lock.release(won)
            assert self._ahead is not None
            self._ahead.wait()
            return claimed, 0, 0, 0
        except BaseException:
            self.lock.release(won)
            raise
        finally:
            # Also after a failure: a transaction the server ended for running long must not
            # be tried again at the same size, forever.
            if planned:
                self._adapt_batch_size(planned, self.clock.monotonic() - started)
        self._log_decisions(applied)
        if self._ahead is not None:
            self._ahead.submit(requests, started)
        else:
            self.publishing(requests, started)
        return claimed, planned, len(requests), planned - len(applied)

    def _plan(
        self,
        rows: Iterable[ScheduleRow],
        now: datetime,
        states: dict[int, RunState],
        watched: datetime,
        budget: int,
        deadline: float,
        calendars: Mapping[str, Calendar | str],
    ) -> list[Transition]:
        """Plan ``rows`` in order until the fires planned would pass ``budget`` or the time
        ``deadline`` (monotonic) is passed; the rest stay due for the next batch.

        A row only recorded weighs :data:`RECORDED_WEIGHT` (a schedule's catch-up is one queued
        run, however many slots; skipped slots are one row): counted whole, a 110,000-fire
        catch-up after a week-long outage kept the on-time slots of the schedules not yet
        planned waiting for tens of seconds."""
        transitions: list[Transition] = []
        weight = 0.0
        for row in rows:
            calendar = None if row.calendar is None else calendars.get(row.calendar)
            transition = plan(row, now, self.rules, states.get(row.id, IDLE), watched, calendar)
            cost = sum(
                1.0 if f.status is FireStatus.PENDING else RECORDED_WEIGHT for f in transition.fires
            )
            if transitions and (weight + cost > budget or self.clock.monotonic() > deadline):
                break
            transitions.append(transition)
            weight += cost
        return transitions

    def _adapt_batch_size(self, planned: int, took: float) -> None:
        lease = self.settings.lock_ttl.total_seconds()
        before = self.batch_size
        self.batch_size = next_batch_size(before, took, lease, self.settings.batch_size)
        if self.batch_size < before:
            logger.warning(
                "dbeat: a batch of %d due schedules took %.1f s (lease %.0f s); claiming %d at a"
                " time",
                planned,
                took,
                lease,
                self.batch_size,
            )

    def _log_decisions(self, transitions: Sequence[Transition]) -> None:
        for t in transitions:
            name = t.schedule.name
            if t.error is not None:
                if self._broken.get(t.schedule.id) != t.error:
                    self._broken[t.schedule.id] = t.error
                    self.metrics.error("schedule")
                    logger.error("dbeat: schedule %s skipped until fixed: %s", name, t.error)
                continue
            self._broken.pop(t.schedule.id, None)
            for fire in t.fires:
                if fire.status is FireStatus.PENDING:
                    continue  # logged when sent
                self.metrics.fires(fire.status.value, fire.slot_count)
                excluded = {} if fire.calendar is None else {"calendar": fire.calendar}
                log_fire(
                    fire.status.value,
                    name,
                    fire.slot,
                    fire.task_id,
                    count=fire.slot_count,
                    first_slot=(fire.first_slot or fire.slot).isoformat(),
                    **excluded,
                )
            if t.finished:
                logger.info("dbeat: schedule %s finished (no further slot)", name)
