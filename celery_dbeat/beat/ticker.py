"""The tick algorithm: find due fires, claim, record, publish. Core logic, no Celery imports.

One tick (see README "How a fire is published exactly once"):

1. Every ``max_interval`` at most, write this beat's heartbeat, publish buffered fires whose
   previous run finished and prune old history (:mod:`.upkeep`, :mod:`.recorded`). Take over
   recorded fires whose recording beat did not publish them within their lease (it died or was
   paused), and run-now fires, and publish them with their recorded task id (:mod:`.recorded`).
2. Open a transaction and lock up to ``batch_size`` due schedules (``next_run_at <= now``), skipping
   rows another beat has locked, in the order :meth:`.Store.claim_due` says.
3. Plan each: misfire resolution, overlap policy, the slots to publish, the next slot (pure,
   :mod:`planning`).
4. Claim each fire's lock (one Redis pipeline); drop the schedules another beat holds.
5. In the same transaction, advance ``next_run_at`` with a compare-and-set on its old value and
   the definition version, and insert the fire rows (unique per schedule and slot) as PENDING.
   Commit. From here the fire cannot be lost: if this beat dies, step 1 of any beat publishes it.
6. Publish each fire with its deterministic task id, unless this beat was paused so long that its
   lease ran out (then step 1 of some beat owns it), and mark it SENT; the lease is extended
   while it publishes (:mod:`.publishing`). Steps 2-6 are :mod:`.batch`'s.
7. Repeat 2-6 while more is due, then, with the time left before the next on-time fire, publish
   queued slots (catch-up of policy ``all``, backfill; a schedule's catch-up is recorded in step 5
   as one queued run, see :mod:`celery_dbeat.store.queue`), oldest first, in chunks of what this
   beat publishes in a fraction of a second (:mod:`.recorded`); then sleep until the earliest
   ``next_run_at``, at most ``max_interval``. A database outage or refusal backs off
   (:mod:`.outages`).

A batch is bounded by the fires it records (``batch_size``) and by time (a share of the lease),
not by the schedules it claims: the rows it claimed but did not plan stay due for the next batch.
"""

from __future__ import annotations

from datetime import datetime

from celery.utils.log import get_logger

from ..clock import Clock, SharedClock
from ..config import Settings
from ..locks import FireLock
from ..store import Store
from ..store.failures import DATABASE_ERRORS, SQL_ERRORS, driver_message, is_conflict
from .alerts import Alerts, SendAlertTask
from .batch import OnTime
from .metrics import NO_METRICS, Metrics
from .outages import Outages
from .pacing import Behind, Watch
from .publishing import Publisher, Publishing, log_fire
from .recorded import Recorded
from .upkeep import Upkeep

__all__ = ["Publisher", "Ticker", "log_fire"]

logger = get_logger(__name__)

_BUSY_RETRY = 0.5  # seconds before looking again at due rows other beats are working on


class Ticker:
    """One beat's ticks (see the module docstring), composed of parts that each do one job: the
    on-time batch (:mod:`.batch`), recorded fires (:mod:`.recorded`), upkeep (:mod:`.upkeep`),
    outages and clock skew (:mod:`.outages`), sharing the beat's watch (:class:`.Watch`)."""

    def __init__(
        self,
        store: Store,
        lock: FireLock,
        publish: Publisher,
        settings: Settings,
        clock: Clock,
        metrics: Metrics = NO_METRICS,
        send_alert: SendAlertTask | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        #: "Now" for every decision: the database server's clock (:class:`SharedClock`).
        self.clock = SharedClock(clock)
        self.metrics = metrics
        self.publishing = Publishing(store, publish, settings, self.clock, metrics)
        self.watch = Watch(settings.lock_ttl)
        shared = (store, settings, self.clock, self.publishing, metrics, self.watch)
        self.on_time = OnTime(*shared, lock)
        self.recorded = Recorded(*shared)
        self.upkeep = Upkeep(*shared)
        self.alerts = Alerts(*shared)
        self.alerts.send_task = send_alert
        self.outages = Outages(*shared)
        self.fire_due = self.on_time.fire_due
        self.recover_pending = self.recorded.recover_pending
        self._behind = Behind(settings)
        self._last_housekeeping: float | None = None
        self._tick_ended: float | None = None

    @property
    def batch_size(self) -> int:
        """Rows claimed (and fires recorded) per batch (:attr:`.OnTime.batch_size`)."""
        return self.on_time.batch_size

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
            self.watch.up_since = None
        backing_off = self.outages.wait()
        if backing_off is not None:
            return backing_off
        try:
            if not self.clock.synced and self.store.clock.available:
                self._read_clock()
            if self.watch.up_since is None:
                self.watch.up_since = self.clock.now()
                self._last_housekeeping = None  # tell the other beats at once
            if self._last_housekeeping is None or mono - self._last_housekeeping >= max_sleep:
                self._last_housekeeping = mono
                now = self.clock.now()
                self.upkeep.heartbeat(now)
                self.recorded.release_buffered()
                self.upkeep.prune_and_measure(now)
                self.alerts.step(now)
            # Every tick, not with housekeeping: a trigger is recorded with its lease already
            # over, and the write that recorded it has just woken this beat (celery_dbeat.notify).
            self.recorded.recover_pending()
            busy = self.on_time.fire_due()
            earliest, needs_compute, queued_at = self._read_clock()
            drained = 0
            if not needs_compute and not self._due(earliest):  # on-time work first
                if self._due(queued_at):
                    drained = self.recorded.drain_queued(earliest)
                    if drained:
                        earliest, needs_compute, queued_at = self._read_clock()
                elif queued_at is None:
                    self.recorded.drain_ended()
            now = self.clock.now()
            # Behind is lateness while beats watched: a row due since before that (every beat
            # was down) is a misfire its policy resolves, not a fire the beats are late with.
            late_since = None if earliest is None else max(earliest, self.watch.since(now))
            self._behind.observe(late_since, now, self.publishing.rate)
            self.metrics.behind(self._behind.seconds)
            self.metrics.tick(self.clock.monotonic() - mono)
        except DATABASE_ERRORS as exc:
            if is_conflict(exc):
                # Another beat or an edit won a row lock; nothing is wrong, look again shortly.
                logger.debug("dbeat: transaction conflict, retrying: %s", driver_message(exc))
                return _BUSY_RETRY
            self.metrics.error("database")
            return self.outages.failed(exc)
        except Exception:
            # A bug or data no validation foresaw must not stop beat: log it, back off, go on.
            logger.exception("dbeat: tick failed; retrying in %.1f s", max_sleep)
            return max_sleep
        self.outages.recovered()
        if self.recorded.more_to_recover:
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
            sleep = self.recorded.catchup.wait()
            if sleep <= 0.0:
                return 0.0 if drained else _BUSY_RETRY
            max_sleep = min(max_sleep, sleep)
        if not wake:
            return max_sleep
        return max(0.0, min((min(wake) - self.clock.now()).total_seconds(), max_sleep))

    def stop(self) -> None:
        """Stop delivering alerts; remove this beat's heartbeat (best effort: the database may
        be down)."""
        self.alerts.stop()
        try:
            self.store.forget_beat(self.settings.instance_name)
        except SQL_ERRORS as exc:
            logger.debug("dbeat: could not remove heartbeat: %s", exc)

    def _due(self, instant: datetime | None) -> bool:
        return instant is not None and instant <= self.clock.now()

    def _read_clock(self) -> tuple[datetime | None, bool, datetime | None]:
        """Peek at what is due next; the same query reads the database server's clock."""
        sent = self.clock.monotonic()
        peek = self.store.peek()
        self.metrics.error("schedule", peek.set_aside)
        if peek.database_now is not None:
            self.clock.observe(peek.database_now, sent, self.clock.monotonic())
            self.outages.check_skew()
        return peek.earliest, peek.needs_compute, peek.queued_at
