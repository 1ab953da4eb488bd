"""The tick algorithm: find due fires, claim, record, publish. Core logic, no Celery imports.

One tick (see README "How a fire is published exactly once"):

1. Every ``max_interval`` at most, take over recorded fires whose recording beat did not publish
   them within their lease (it died or was paused) and publish them with their recorded task id;
   publish buffered fires whose previous run finished; prune old history.
2. Open a transaction and lock up to ``batch_size`` due schedules (``next_run_at <= now``), skipping
   rows another beat has locked.
3. Plan each: misfire resolution, overlap policy, the slots to publish, the next slot (pure,
   :mod:`planning`).
4. Claim each fire's lock (one Redis pipeline); drop the schedules another beat holds.
5. In the same transaction, advance ``next_run_at`` with a compare-and-set on its old value and
   the definition version, and insert the fire rows (unique per schedule and slot) as PENDING.
   Commit. From here the fire cannot be lost: if this beat dies, step 1 of any beat publishes it.
6. Publish each fire with its deterministic task id, unless this beat was paused so long that its
   lease ran out (then step 1 of some beat owns it), and mark it SENT.
7. Repeat 2-6 while batches come back full, then sleep until the earliest ``next_run_at``, at
   most ``max_interval``.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from celery.utils.log import get_logger

from . import __version__
from .clock import Clock, Outage, SharedClock
from .config import Settings
from .core.fires import FireKey, FireStatus, PublishRequest, Transition
from .locks import FireLock
from .metrics import NO_METRICS, Metrics
from .misfire import watched_since
from .overlap import IDLE
from .planning import plan
from .store import Store, runs
from .store.database import is_conflict
from .store.schedules import count_due
from .validation import parse_args, parse_kwargs, parse_options

__all__ = ["Publisher", "Ticker", "next_batch_size"]

logger = get_logger(__name__)

#: ``publish(request, args, kwargs, options)``: send one fire to the broker or raise.
Publisher = Callable[[PublishRequest, list[Any], dict[str, Any], dict[str, Any]], None]

_BUSY_RETRY = 0.5  # seconds before looking again at due rows other beats are working on
_MAX_OUTAGE_BACKOFF = 30.0
_PRUNE_EVERY = 60.0  # seconds between history prunes of one beat
#: A host clock this many seconds from the database server's is logged (once per episode).
_SKEW_WARNING = 1.0
#: How far back the last-success metric looks when beat starts.
_SUCCESS_LOOKBACK = timedelta(hours=1)


#: A batch (claim, plan, record) taking more than this share of the lease halves the next one:
#: its fires must be published well within the lease, and its row locks held briefly. One
#: taking less than a quarter of that doubles it again, up to ``dbeat_batch_size``.
_BATCH_SHARE_OF_LEASE = 0.2


def next_batch_size(size: int, took: float, lease: float, configured: int) -> int:
    """The size of the next batch after one of ``size`` rows took ``took`` seconds."""
    if took > lease * _BATCH_SHARE_OF_LEASE:
        return max(1, size // 2)
    if took < lease * _BATCH_SHARE_OF_LEASE / 4:
        return min(configured, size * 2)
    return size


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
        self.publish = publish
        self.settings = settings
        #: "Now" for every decision is the database server's clock, carried on this host's
        #: monotonic clock between readings (:class:`SharedClock`): a beat whose wall clock is
        #: wrong or stepped neither fires early nor skips slots. Local on SQLite, whose beats
        #: share a host.
        self.clock = SharedClock(clock)
        self.metrics = metrics
        self.rules = settings.misfire_rules
        self.beat = settings.instance_name
        self._last_recovery: float | None = None
        self._last_prune: float | None = None
        self._ahead: _PublishAhead | None = None
        self._successes_since = clock.now() - _SUCCESS_LOOKBACK
        self._database = Outage(longest=_MAX_OUTAGE_BACKOFF, monotonic=clock.monotonic)
        self._broken: dict[int, str] = {}
        self._skewed = False
        #: When this beat's current stretch of ticking began (on the shared clock); ``None``
        #: after a stall or a database outage, until the next tick. Slots due since then, or
        #: while other beats ran (their heartbeats, ``_lifetimes``), are late, never missed.
        self._up_since: datetime | None = None
        self._lifetimes: list[tuple[datetime, datetime]] = []
        self._tick_ended: float | None = None
        #: Rows claimed per batch: ``batch_size``, less while batches take long (see
        #: :func:`next_batch_size`).
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
            # over, and the write that recorded it has just woken this beat (notify.py).
            self.recover_pending()
            busy = self.fire_due()
            earliest, needs_compute = self._read_clock()
            self.metrics.tick(self.clock.monotonic() - mono)
        except sa.exc.DataError as exc:
            # What is stored, not the connection: no outage. (Rows holding a value that cannot
            # be read are set aside where they are read; this is whatever else slips through.)
            self.metrics.error("database")
            logger.error(
                "dbeat: tick failed on stored data; retrying in %.1f s: %s", max_sleep, exc
            )
            return max_sleep
        except (sa.exc.DBAPIError, sa.exc.TimeoutError) as exc:
            if is_conflict(exc):
                # Another beat or an edit won a row lock; nothing is wrong, look again shortly.
                logger.debug("dbeat: transaction conflict, retrying: %s", _short(exc))
                return _BUSY_RETRY
            self.metrics.error("database")
            return self._database_outage(exc)
        except Exception:
            # A bug or data no validation foresaw must not stop beat: log it, back off, go on.
            logger.exception("dbeat: tick failed; retrying in %.1f s", max_sleep)
            return max_sleep
        self._database_recovered()
        if (earliest is not None and earliest <= self.clock.now()) or needs_compute:
            # Still due: more than a batch budget (go on at once), or rows other beats hold
            # locked or won (look again shortly rather than spin on them).
            return _BUSY_RETRY if busy else 0.0
        if earliest is None:
            return max_sleep
        return min((earliest - self.clock.now()).total_seconds(), max_sleep)

    def _read_clock(self) -> tuple[datetime | None, bool]:
        """Peek at what is due next; the same query reads the database server's clock."""
        sent = self.clock.monotonic()
        peek = self.store.peek()
        if peek.database_now is not None:
            self.clock.observe(peek.database_now, sent, self.clock.monotonic())
            self._check_skew()
        return peek.earliest, peek.needs_compute

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

    def fire_due(self) -> bool:
        """Record and publish everything due now. True if due rows were left to other beats
        (locked by them, or claimed or recorded by them first)."""
        budget_end = self.clock.monotonic() + self.settings.max_interval.total_seconds()
        left_to_others = False
        # Publish each batch while the next one is claimed and recorded (not on SQLite, whose
        # one writer at a time gains nothing from it).
        if self.store.engine.dialect.name != "sqlite":
            self._ahead = _PublishAhead(self.publish_recorded)
        try:
            while True:
                limit = self.batch_size
                seen, published, skipped = self._fire_batch(limit)
                left_to_others = left_to_others or skipped > 0 or seen == 0
                if seen < limit or self.clock.monotonic() > budget_end:
                    return left_to_others
                if published == 0 and skipped == seen:
                    return True
        finally:
            ahead, self._ahead = self._ahead, None
            if ahead is not None:
                ahead.wait()

    def _fire_batch(self, limit: int) -> tuple[int, int, int]:
        # The lease is measured from this instant, on both clocks: if this beat is paused
        # anywhere after it, the pause counts against the lease before anything is published.
        now, started = self.clock.now(), self.clock.monotonic()
        watched = watched_since(now, self._up_since, self._lifetimes, self.settings.lock_ttl)
        won: set[FireKey] = set()
        planned = 0
        try:
            with self.store.claim_due(now, limit, self.beat) as batch:
                if not batch.schedules:
                    return 0, 0, 0
                planned = len(batch.schedules)
                states = runs.run_states(
                    batch.connection, batch.schedules, now, self.settings.max_run_time
                )
                transitions = [
                    plan(row, now, self.rules, states.get(row.id, IDLE), watched)
                    for row in batch.schedules
                ]
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
            self.publish_recorded(requests, started)
        return len(transitions), len(requests), len(transitions) - len(applied)

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

    def housekeeping(self) -> None:
        """The periodic part of a tick: heartbeat, fires buffering left to publish, history
        pruning, and the metrics that need a query."""
        now = self.clock.now()
        self._lifetimes = self.store.heartbeat(self._identity, now)
        self.release_buffered()
        mono = self.clock.monotonic()
        retention = self.settings.history_retention
        if retention is not None and (
            self._last_prune is None or mono - self._last_prune >= _PRUNE_EVERY
        ):
            self._last_prune = mono
            pruned = runs.prune_history(self.store.engine, now - retention)
            if pruned:
                logger.info(
                    "dbeat: pruned %d fire(s) older than %s from history", pruned, retention
                )
        if self.metrics.enabled:
            with self.store.engine.connect() as conn:
                self.metrics.backlog(count_due(conn, now))
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
        self.publish_recorded(requests, started)
        return len(requests)

    def recover_pending(self) -> int:
        """Publish run-now fires (triggers), and fires recorded by a beat that did not publish
        them within their lease."""
        now, started = self.clock.now(), self.clock.monotonic()
        requests = self.store.claim_stale_pending(
            now, now + self.settings.lock_ttl, self.settings.batch_size
        )
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
            self.publish_recorded(requests, started)
        return len(requests)

    def stop(self) -> None:
        """Remove this beat's heartbeat (best effort: the database may be down)."""
        try:
            self.store.forget_beat(self.beat)
        except sa.exc.SQLAlchemyError as exc:
            logger.debug("dbeat: could not remove heartbeat: %s", exc)

    # Publishing ------------------------------------------------------------------------------

    def publish_recorded(self, requests: Sequence[PublishRequest], leased_at: float) -> None:
        """Publish recorded fires whose lease started at monotonic time ``leased_at``."""
        sent: list[str] = []
        lease = self.settings.lock_ttl.total_seconds()
        for request in requests:
            # Paused (SIGSTOP) past most of the lease: another beat may be taking this fire
            # over right now. Leave it to the recovery path rather than risk a second publish.
            if self.clock.monotonic() - leased_at > lease * 0.8:
                logger.warning(
                    "dbeat: lease of %s slot %s ran out before publishing; leaving it to recovery",
                    request.schedule_name,
                    request.slot.isoformat(),
                )
                continue
            try:
                args = parse_args(request.args)
                kwargs = parse_kwargs(request.kwargs)
                options = parse_options(request.options)
            except ValueError as exc:
                self._publish_failed(request, exc, give_up=True)
                continue
            try:
                self.publish(request, args, kwargs, options)
            except Exception as exc:
                now = self.clock.now()
                self._publish_failed(
                    request, exc, give_up=now - request.slot > self.settings.publish_retry_window
                )
                continue
            lag = (self.clock.now() - request.slot).total_seconds()
            self.metrics.lag(lag)
            log_fire(
                "sent",
                request.schedule_name,
                request.slot,
                request.task_id,
                task=request.task,
                lag=f"{lag:.3f}",
            )
            sent.append(request.task_id)
        self.metrics.fires("sent", len(sent))
        self.store.mark_sent(sent, self.clock.now(), self.beat)

    def _publish_failed(self, request: PublishRequest, exc: Exception, *, give_up: bool) -> None:
        attempts = request.attempts + 1
        retry_in = timedelta(seconds=min(2**attempts, 60))
        self.metrics.fires("failed" if give_up else "publish_error")
        if give_up:
            logger.error(
                "dbeat: giving up on %s slot=%s task_id=%s after %d attempt(s): %s",
                request.schedule_name,
                request.slot.isoformat(),
                request.task_id,
                attempts,
                exc,
            )
        else:
            logger.warning(
                "dbeat: could not publish %s slot=%s task_id=%s (attempt %d, retry in %ds): %s",
                request.schedule_name,
                request.slot.isoformat(),
                request.task_id,
                attempts,
                retry_in.total_seconds(),
                exc,
            )
        self.store.mark_publish_failed(
            request.task_id,
            f"{type(exc).__name__}: {exc}",
            self.clock.now() + retry_in,
            give_up=give_up,
        )

    # Logging and outages --------------------------------------------------------------------

    def _log_decisions(self, transitions: Sequence[Transition]) -> None:
        for t in transitions:
            name = t.schedule.name
            if t.error is not None:
                if self._broken.get(t.schedule.id) != t.error:
                    self._broken[t.schedule.id] = t.error
                    logger.error("dbeat: schedule %s skipped until fixed: %s", name, t.error)
                continue
            self._broken.pop(t.schedule.id, None)
            for fire in t.fires:
                if fire.status is FireStatus.PENDING:
                    continue  # logged when sent
                self.metrics.fires(fire.status.value, fire.slot_count)
                log_fire(
                    fire.status.value,
                    name,
                    fire.slot,
                    fire.task_id,
                    count=fire.slot_count,
                    first_slot=(fire.first_slot or fire.slot).isoformat(),
                )
            if t.finished:
                logger.info("dbeat: schedule %s finished (no further slot)", name)

    def _database_outage(self, exc: Exception) -> float:
        self._up_since = None  # not working meanwhile: see _tick
        if self._database.failed():
            logger.error("dbeat: schedule database unreachable, retrying: %s", _short(exc))
        return min(self._database.backoff, self.settings.max_interval.total_seconds())

    def _database_recovered(self) -> None:
        took = self._database.recovered()
        if took is not None:
            logger.warning("dbeat: schedule database reachable again after %.1f s", took)


def log_fire(
    decision: str, schedule: str, slot: datetime, task_id: str | None, **details: Any
) -> None:
    """One structured line per fire decision (``sent``, ``skipped``, ``dropped``, ``overlap``,
    ``buffered``), as ``key=value`` text and as the record's ``dbeat`` attribute (for JSON log
    formatters)."""
    fields = {"decision": decision, "schedule": schedule, "slot": slot.isoformat()}
    if task_id is not None:
        fields["task_id"] = task_id
    fields.update({key: str(value) for key, value in details.items()})
    text = " ".join(f"{key}={_quote(value)}" for key, value in fields.items())
    logger.info("dbeat: fire %s", text, extra={"dbeat": fields})


def _quote(value: str) -> str:
    return json.dumps(value) if not value or any(c in value for c in ' "=\n') else value


class _PublishAhead:
    """Publishes one recorded batch in a thread while the ticker records the next.

    At most one batch is in flight, so a beat never records far ahead of what it publishes (the
    leases of what it recorded keep running) and leaves the rest of a herd to other beats. Only
    this thread publishes while it runs; an error it meets is raised by the next ``submit`` or
    ``wait``.
    """

    def __init__(self, publish: Callable[[Sequence[PublishRequest], float], None]) -> None:
        self._publish = publish
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def submit(self, requests: Sequence[PublishRequest], leased_at: float) -> None:
        self.wait()
        if not requests:
            return

        def run() -> None:
            try:
                self._publish(requests, leased_at)
            except BaseException as exc:  # handed to the ticker's thread
                self._error = exc

        self._thread = threading.Thread(target=run, name="dbeat-publish", daemon=True)
        self._thread.start()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        error, self._error = self._error, None
        if error is not None:
            raise error


def _short(exc: Exception) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
