"""The tick algorithm: find due fires, claim, record, publish. Core logic, no Celery imports.

One tick (see README "How a fire is published exactly once"):

1. Every ``max_interval`` at most, take over recorded fires whose recording beat did not publish
   them within their lease (it died or was paused) and publish them with their recorded task id;
   publish buffered fires whose previous run finished; prune old history.
2. Open a transaction and lock up to ``batch_size`` due schedules (``next_run_at <= now``), skipping
   rows another beat has locked: those that came due while beats ran first, then those every
   beat missed (so after a long outage, a schedule already planned in the first pass over the
   others has its next slot taken before the rest of that pass).
3. Plan each: misfire resolution, overlap policy, the slots to publish, the next slot (pure,
   :mod:`planning`).
4. Claim each fire's lock (one Redis pipeline); drop the schedules another beat holds.
5. In the same transaction, advance ``next_run_at`` with a compare-and-set on its old value and
   the definition version, and insert the fire rows (unique per schedule and slot) as PENDING.
   Commit. From here the fire cannot be lost: if this beat dies, step 1 of any beat publishes it.
6. Publish each fire with its deterministic task id, unless this beat was paused so long that its
   lease ran out (then step 1 of some beat owns it), and mark it SENT; the lease is extended
   while it publishes (:mod:`.publishing`).
7. Repeat 2-6 while more is due, then, with the time left before the next on-time fire, publish
   queued slots (catch-up of policy ``all``, backfill; a schedule's catch-up is recorded in step 5
   as one queued run, see :mod:`celery_dbeat.store.queue`), oldest first, in chunks of what this
   beat publishes in a fraction of a second; then sleep until the earliest ``next_run_at``, at
   most ``max_interval``.

A batch is bounded by the fires it records (``batch_size``) and by time (a share of the lease),
not by the schedules it claims: the rows it claimed but did not plan stay due for the next batch.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

import sqlalchemy as sa
from celery.utils.log import get_logger

from .._version import __version__
from ..clock import Clock, Outage, SharedClock
from ..config import Settings
from ..core.calendars import Calendar
from ..core.fires import FireKey, FireStatus, ScheduleRow, Transition
from ..core.misfire import watched_since
from ..core.overlap import IDLE, RunState
from ..core.planning import plan
from ..locks import FireLock
from ..store import Store, audit, runs
from ..store.calendars import CalendarCache
from ..store.failures import (
    driver_message,
    is_auth_failure,
    is_conflict,
    is_disconnect,
    is_refusal,
)
from ..store.queue import queued_backlog
from ..store.schedules import count_due, paused_counts
from .metrics import NO_METRICS, Metrics
from .pacing import BATCH_SHARE_OF_LEASE, Allowance, Behind, next_batch_size
from .publishing import PublishAhead, Publisher, Publishing, log_fire

__all__ = ["Publisher", "Ticker", "log_fire"]

logger = get_logger(__name__)

_BUSY_RETRY = 0.5  # seconds before looking again at due rows other beats are working on
_MAX_OUTAGE_BACKOFF = 30.0
#: While the database is unreachable or refuses the tick, the log line repeats this often.
_REMIND_EVERY = 60.0
#: What a row recorded and not published in the batch (a catch-up's queued run, skipped or dropped
#: slots, a buffered fire) weighs in a batch's fire budget, against 1 for a fire the batch
#: publishes: it costs an insert, not a publish within the lease.
RECORDED_WEIGHT = 0.1
#: Queued fires (catch-up, backfill) are published in chunks of about this many seconds of this
#: beat's publishing, for at most :data:`_DRAIN_FOR` per tick, so an on-time fire that comes due
#: meanwhile waits no longer than a chunk.
_DRAIN_CHUNK = 0.25
_DRAIN_FOR = 1.0
#: Fires taken over from other beats, per tick: about this many seconds of publishing.
_RECOVER_CHUNK = 1.0
_PRUNE_EVERY = 60.0  # seconds between history prunes of one beat
#: ... and while a pass over the schedules' ``history_limit`` is not over: a prune is 0.2 s at
#: most, so a beat gives it 4% of its time until the limits hold again.
_PRUNE_GOING_ON = 5.0
#: A host clock this many seconds from the database server's is logged (once per episode).
_SKEW_WARNING = 1.0
#: How far back the last-success metric looks when beat starts.
_SUCCESS_LOOKBACK = timedelta(hours=1)


class _GiveBack(Exception):
    """The batch before this one is still being published: give this one's rows back rather
    than hold two batches recorded and not yet sent (or this transaction open) any longer."""


class Ticker:
    def __init__(
        self,
        store: Store,
        lock: FireLock,
        publish: Publisher,
        settings: Settings,
        clock: Clock,
        metrics: Metrics = NO_METRICS,
    ) -> None:
        self.store = store
        self.lock = lock
        self.settings = settings
        #: "Now" for every decision is the database server's clock, carried on this host's
        #: monotonic clock between readings (:class:`SharedClock`): a beat whose wall clock is
        #: wrong or stepped neither fires early nor skips slots. Local on SQLite, whose beats
        #: share a host.
        self.clock = SharedClock(clock)
        self.metrics = metrics
        self.publishing = Publishing(store, publish, settings, self.clock, metrics)
        self.rules = settings.misfire_rules
        self.beat = settings.instance_name
        self._last_recovery: float | None = None
        self._more_to_recover = False
        self._last_prune: float | None = None
        #: Where the next prune of the schedules' ``history_limit`` goes on from (a schedule id).
        self._limits_from = 0
        self._ahead: PublishAhead | None = None
        self._successes_since = clock.now() - _SUCCESS_LOOKBACK
        self._database = Outage(longest=_MAX_OUTAGE_BACKOFF, monotonic=clock.monotonic)
        #: Ticks the database refused for another reason than lost connectivity.
        self._refused = Outage(longest=_MAX_OUTAGE_BACKOFF, monotonic=clock.monotonic)
        self._refusal: str | None = None
        self._broken: dict[int, str] = {}
        #: The calendars the batches name, read again when their version moves.
        self._calendars = CalendarCache()
        self._skewed = False
        self._behind = Behind(settings)
        self._catchup = Allowance(settings.catchup_rate, clock.monotonic)
        self._draining_since: float | None = None
        self._drained = 0
        #: When this beat's current stretch of ticking began (on the shared clock); ``None``
        #: after a stall or a database outage, until the next tick. Slots due since then, or
        #: while other beats ran (their heartbeats, ``_lifetimes``), are late, never missed.
        self._up_since: datetime | None = None
        self._lifetimes: list[tuple[datetime, datetime]] = []
        self._tick_ended: float | None = None
        #: Rows claimed (and fires recorded) per batch: ``batch_size``, less while batches take
        #: long (see :func:`next_batch_size`).
        self.batch_size = settings.batch_size
        self._identity = {
            "name": self.beat,
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "version": __version__,
            "started_at": clock.now(),
        }

    # One tick --------------------------------------------------------------------------------

    def tick(self) -> float:
        """Do everything that is due; return how many seconds to sleep."""
        try:
            return self._tick()
        finally:
            self._tick_ended = self.clock.monotonic()

    def _tick(self) -> float:
        max_sleep = self.settings.max_interval.total_seconds()
        mono = self.clock.monotonic()
        if self._tick_ended is not None and mono - self._tick_ended > 2 * max_sleep:
            # Away far longer than any sleep it asked for (paused, suspended): this beat was
            # not watching meanwhile, so what came due then is missed unless another beat ran.
            self._up_since = None
        if not self._database.may_try():
            return min(self._database.wait(), max_sleep)
        if not self._refused.may_try():
            return min(self._refused.wait(), max_sleep)
        try:
            if not self.clock.synced and self.store.clock.available:
                self._read_clock()
            if self._up_since is None:
                self._up_since = self.clock.now()
                self._identity["started_at"] = self._up_since
                self._last_recovery = None  # tell the other beats at once
            if self._last_recovery is None or mono - self._last_recovery >= max_sleep:
                self._last_recovery = mono
                self.housekeeping()
            # Every tick, not with housekeeping: a trigger is recorded with its lease already
            # over, and the write that recorded it has just woken this beat (celery_dbeat.notify).
            self.recover_pending()
            busy = self.fire_due()
            earliest, needs_compute, queued_at = self._read_clock()
            drained = 0
            if not needs_compute and not self._due(earliest):  # on-time work first
                if self._due(queued_at):
                    drained = self.drain_queued(earliest)
                    if drained:
                        earliest, needs_compute, queued_at = self._read_clock()
                elif queued_at is None:
                    self._drain_ended()
            now = self.clock.now()
            # Behind is lateness while beats watched: a row due since before that (every beat
            # was down) is a misfire its policy resolves, not a fire the beats are late with.
            watched = watched_since(now, self._up_since, self._lifetimes, self.settings.lock_ttl)
            late_since = None if earliest is None else max(earliest, watched)
            self._behind.observe(late_since, now, self.publishing.rate)
            self.metrics.behind(self._behind.seconds)
            self.metrics.tick(self.clock.monotonic() - mono)
        except (sa.exc.StatementError, sa.exc.TimeoutError) as exc:
            if is_conflict(exc):
                # Another beat or an edit won a row lock; nothing is wrong, look again shortly.
                logger.debug("dbeat: transaction conflict, retrying: %s", driver_message(exc))
                return _BUSY_RETRY
            self.metrics.error("database")
            if is_disconnect(exc):
                return self._database_outage(exc)
            return self._tick_refused(exc)
        except Exception:
            # A bug or data no validation foresaw must not stop beat: log it, back off, go on.
            logger.exception("dbeat: tick failed; retrying in %.1f s", max_sleep)
            return max_sleep
        self._database_recovered()
        if self._more_to_recover:
            return 0.0  # a dead beat's fires left to take over, after on-time work
        if self._due(earliest) or needs_compute:
            # Still due: more than a batch budget (go on at once), or rows other beats hold
            # locked or won (look again shortly rather than spin on them).
            return _BUSY_RETRY if busy else 0.0
        wake = [t for t in (earliest, queued_at) if t is not None]
        if queued_at is not None and self._due(queued_at):
            # Queued fires left: go on with them once the allowance (if any) allows; at once if
            # this tick sent some, shortly if other beats hold them.
            wake = [t for t in (earliest,) if t is not None]
            sleep = self._catchup.wait()
            if sleep <= 0.0:
                return 0.0 if drained else _BUSY_RETRY
            max_sleep = min(max_sleep, sleep)
        if not wake:
            return max_sleep
        return max(0.0, min((min(wake) - self.clock.now()).total_seconds(), max_sleep))

    def _due(self, instant: datetime | None) -> bool:
        return instant is not None and instant <= self.clock.now()

    def _read_clock(self) -> tuple[datetime | None, bool, datetime | None]:
        """Peek at what is due next; the same query reads the database server's clock."""
        sent = self.clock.monotonic()
        peek = self.store.peek()
        self.metrics.error("schedule", peek.set_aside)
        if peek.database_now is not None:
            self.clock.observe(peek.database_now, sent, self.clock.monotonic())
            self._check_skew()
        return peek.earliest, peek.needs_compute, peek.queued_at

    def _check_skew(self) -> None:
        # Harmless now that due times follow the database server, but worth an operator's look
        # (log times, and other software on the host, still follow the host's clock).
        skew = self.clock.offset().total_seconds()
        skewed = abs(skew) >= _SKEW_WARNING
        if skewed and not self._skewed:
            logger.warning(
                "dbeat: this host's clock is %.1f s %s the database server's; due times follow "
                "the database server's clock",
                abs(skew),
                "behind" if skew > 0 else "ahead of",
            )
        elif self._skewed and not skewed:
            logger.info("dbeat: this host's clock agrees with the database server's again")
        self._skewed = skewed

    # On-time fires ---------------------------------------------------------------------------

    def fire_due(self) -> bool:
        """Record and publish everything due now. True if due rows were left to other beats
        (locked by them, or claimed or recorded by them first)."""
        budget_end = self.clock.monotonic() + self.settings.max_interval.total_seconds()
        left_to_others = False
        # Publish each batch while the next one is claimed and recorded (not on SQLite, whose
        # one writer at a time gains nothing from it).
        if self.store.engine.dialect.name != "sqlite":
            self._ahead = PublishAhead(self.publishing)
        try:
            while True:
                limit = self.batch_size
                claimed, planned, published, skipped = self._fire_batch(limit)
                left_to_others = left_to_others or skipped > 0 or claimed == 0
                if claimed == 0:
                    return left_to_others
                if self.clock.monotonic() > budget_end:
                    return left_to_others
                if planned == claimed < limit:
                    return left_to_others  # every due row handled
                if planned and published == 0 and skipped == planned:
                    return True
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
        watched = watched_since(now, self._up_since, self._lifetimes, self.settings.lock_ttl)
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
                states = runs.run_states(
                    batch.connection, batch.schedules, now, self.settings.max_run_time
                )
                calendars = self._calendars.read(
                    batch.connection, [row.calendar for row in batch.schedules]
                )
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

        Only the fires the batch publishes count whole; a row it only records (a schedule's
        catch-up is one queued run, however many slots; skipped slots are one row) weighs
        :data:`RECORDED_WEIGHT`: it is inserted now, not published within this batch's lease.
        (Recorded as a row per slot and counted whole, a 110,000-fire catch-up after a week-long
        outage kept the on-time slots of the schedules not yet planned waiting for tens of
        seconds.)"""
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

    # Recorded fires: taken over, buffered, queued ----------------------------------------------

    def prune(self, now: datetime) -> None:
        """Delete fire history and audit entries older than their retention, and fires beyond
        a schedule's ``history_limit``, in bounded batches."""
        retention = self.settings.history_retention
        engine, monotonic = self.store.engine, self.clock.monotonic
        if retention is not None:
            pruned = runs.prune_history(engine, now - retention, monotonic=monotonic)
            if pruned:
                logger.info(
                    "dbeat: pruned %d fire(s) older than %s from history", pruned, retention
                )
        pruned, self._limits_from = runs.prune_history_limits(
            engine, self._limits_from, monotonic=monotonic
        )
        if pruned:
            logger.info("dbeat: pruned %d fire(s) beyond their history_limit", pruned)
        kept = self.settings.audit_retention
        if kept is not None:
            pruned = audit.prune_audit(engine, now - kept, monotonic=monotonic)
            if pruned:
                logger.info("dbeat: pruned %d audit entries older than %s", pruned, kept)

    def housekeeping(self) -> None:
        """The periodic part of a tick: heartbeat, fires buffering left to publish, history
        pruning, and the metrics that need a query."""
        now = self.clock.now()
        self._lifetimes = self.store.heartbeat(self._identity, now)
        self.release_buffered()
        mono = self.clock.monotonic()
        every = _PRUNE_EVERY if self._limits_from == 0 else _PRUNE_GOING_ON
        if self._last_prune is None or mono - self._last_prune >= every:
            self._last_prune = mono
            try:
                self.prune(now)
            except sa.exc.StatementError as exc:
                if not is_refusal(exc):
                    raise
                # History kept a minute longer costs nothing; a tick refused stops every fire.
                logger.error(
                    "dbeat: the database refused to prune history, kept until the next prune in"
                    " %.0f s: %s",
                    _PRUNE_EVERY,
                    driver_message(exc),
                )
        if self.metrics.enabled:
            with self.store.engine.connect() as conn:
                self.metrics.backlog(count_due(conn, now))
                self.metrics.queued(queued_backlog(conn)[0])
                self.metrics.paused(paused_counts(conn))
            for name, at in runs.recent_successes(self.store.engine, self._successes_since):
                self.metrics.succeeded(name, at)
                self._successes_since = max(self._successes_since, at)

    def release_buffered(self) -> int:
        """Publish buffered fires (overlap policy ``buffer_one``) whose previous run is over."""
        now, started = self.clock.now(), self.clock.monotonic()
        requests = runs.release_buffered(
            self.store,
            now,
            now + self.settings.lock_ttl,
            self.settings.max_run_time,
            self.beat,
            self.settings.batch_size,
        )
        self.publishing(requests, started)
        return len(requests)

    def recover_pending(self) -> int:
        """Publish run-now fires (triggers), and fires recorded by a beat that did not publish
        them within their lease: about a second's worth of this beat's publishing per tick, so
        that taking them over never makes this beat's own leases run out."""
        now, started = self.clock.now(), self.clock.monotonic()
        limit = self.publishing.chunk(_RECOVER_CHUNK)
        requests = self.store.claim_stale_pending(now, now + self.settings.lock_ttl, limit)
        # A whole chunk taken: more may be waiting, and the next tick takes them at once.
        self._more_to_recover = len(requests) >= limit
        for r in requests:
            if r.manual:
                logger.info(
                    "dbeat: sending run-now fire of %s (task id %s)", r.schedule_name, r.task_id
                )
        stale = sum(1 for r in requests if not r.manual)
        if stale:
            logger.warning(
                "dbeat: publishing %d recorded fire(s) that their beat did not publish in time",
                stale,
            )
            self.metrics.fires("recovered", stale)
        if requests:
            self.publishing(requests, started)
        return len(requests)

    def drain_queued(self, next_due: datetime | None) -> int:
        """Publish queued fires (catch-up of policy ``all``, backfill), oldest first, with the
        time on-time fires leave: until ``next_due`` (the next on-time fire), for at most
        :data:`_DRAIN_FOR`, within ``dbeat_catchup_rate``. Returns how many were published."""
        until = self.clock.monotonic() + _DRAIN_FOR
        if next_due is not None:
            until = min(
                until, self.clock.monotonic() + (next_due - self.clock.now()).total_seconds()
            )
        sent = 0
        while self.clock.monotonic() < until:
            limit = self._catchup.take(self.publishing.chunk(_DRAIN_CHUNK))
            if not limit:
                break
            now, started = self.clock.now(), self.clock.monotonic()
            requests = self.store.claim_queued(now, now + self.settings.lock_ttl, limit, self.beat)
            self._catchup.give_back(limit - len(requests))
            if not requests:
                break
            if self._draining_since is None:
                self._draining_since = started
                logger.info(
                    "dbeat: publishing queued catch-up fires with the capacity on-time fires leave"
                )
            self.publishing(requests, started)
            sent += len(requests)
            if len(requests) < limit:
                break
        self._drained += sent
        return sent

    def _drain_ended(self) -> None:
        if self._draining_since is not None:
            logger.info(
                "dbeat: queued catch-up fires all published (%d by this beat in %.0f s)",
                self._drained,
                self.clock.monotonic() - self._draining_since,
            )
            self._draining_since, self._drained = None, 0

    def stop(self) -> None:
        """Remove this beat's heartbeat (best effort: the database may be down)."""
        try:
            self.store.forget_beat(self.beat)
        except sa.exc.SQLAlchemyError as exc:
            logger.debug("dbeat: could not remove heartbeat: %s", exc)

    # Logging and outages --------------------------------------------------------------------

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

    def _database_outage(self, exc: Exception) -> float:
        self._up_since = None  # not working meanwhile: see _tick
        if self._database.failed():
            logger.error("dbeat: schedule database unreachable, retrying: %s", driver_message(exc))
        elif (took := self._database.remind(_REMIND_EVERY)) is not None:
            logger.error(
                "dbeat: schedule database still unreachable after %.0f s, retrying: %s",
                took,
                driver_message(exc),
            )
        return min(self._database.backoff, self.settings.max_interval.total_seconds())

    def _tick_refused(self, exc: Exception) -> float:
        """The database answered, and refused this tick's work for a reason that is not one
        schedule's (those are set aside where they are written): not an outage, and not
        reported as one. Retried with backoff; logged when it begins or changes, and again
        every :data:`_REMIND_EVERY` while it lasts."""
        why = driver_message(exc)
        began = self._refused.failed()
        took = None if began else self._refused.remind(_REMIND_EVERY)
        if began or why != self._refusal or took is not None:
            logger.error(
                "dbeat: the schedule database refused %s%s; retrying in %.0f s: %s",
                "this beat's login or rights" if is_auth_failure(exc) else "this tick's work",
                "" if took is None else f" for {took:.0f} s",
                self._refused.backoff,
                why,
            )
        self._refusal = why
        return min(self._refused.backoff, self.settings.max_interval.total_seconds())

    def _database_recovered(self) -> None:
        took = self._database.recovered()
        if took is not None:
            logger.warning("dbeat: schedule database reachable again after %.1f s", took)
        if self._refused.recovered() is not None:
            logger.warning("dbeat: the schedule database accepts this beat's work again")
            self._refusal = None
