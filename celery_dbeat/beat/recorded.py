"""Fires recorded before they are published, outside the on-time batch: taken over from a beat
that did not publish them within their lease, run-now, buffered and queued fires, each published
in chunks sized on this beat's publishing rate so that its own leases never run out meanwhile."""

from __future__ import annotations

from datetime import datetime

from celery.utils.log import get_logger

from .pacing import Allowance, Part

__all__ = ["Recorded"]

logger = get_logger(__name__)

#: Queued fires (catch-up, backfill) are published in chunks of about this many seconds of this
#: beat's publishing, for at most :data:`_DRAIN_FOR` per tick, so an on-time fire that comes due
#: meanwhile waits no longer than a chunk.
_DRAIN_CHUNK = 0.25
_DRAIN_FOR = 1.0
#: Fires taken over from other beats, per tick: about this many seconds of publishing.
_RECOVER_CHUNK = 1.0


class Recorded(Part):
    """One beat's publishing of recorded fires (see the module docstring)."""

    def __post_init__(self) -> None:
        #: A whole chunk was taken over: more may be waiting, for the next tick at once.
        self.more_to_recover = False
        #: ``dbeat_catchup_rate``: the queued fires this beat may publish now.
        self.catchup = Allowance(self.settings.catchup_rate, self.clock.monotonic)
        self._draining_since: float | None = None
        self._drained = 0

    def recover_pending(self) -> int:
        """Publish run-now fires (triggers), and fires recorded by a beat that did not publish
        them within their lease: about a second's worth of this beat's publishing per tick, so
        that taking them over never makes this beat's own leases run out."""
        now, started = self.clock.now(), self.clock.monotonic()
        limit = self.publishing.chunk(_RECOVER_CHUNK)
        requests = self.store.claim_stale_pending(now, now + self.settings.lock_ttl, limit)
        self.more_to_recover = len(requests) >= limit
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

    def release_buffered(self) -> int:
        """Publish buffered fires (overlap policy ``buffer_one``) whose previous run is over."""
        now, started = self.clock.now(), self.clock.monotonic()
        requests = self.store.release_buffered(
            now,
            now + self.settings.lock_ttl,
            self.settings.max_run_time,
            self.settings.instance_name,
            self.settings.batch_size,
        )
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
            limit = self.catchup.take(self.publishing.chunk(_DRAIN_CHUNK))
            if not limit:
                break
            now, started = self.clock.now(), self.clock.monotonic()
            requests = self.store.claim_queued(
                now, now + self.settings.lock_ttl, limit, self.settings.instance_name
            )
            self.catchup.give_back(limit - len(requests))
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

    def drain_ended(self) -> None:
        """Nothing is queued any more: say so once, if this beat was publishing queued fires."""
        if self._draining_since is not None:
            logger.info(
                "dbeat: queued catch-up fires all published (%d by this beat in %.0f s)",
                self._drained,
                self.clock.monotonic() - self._draining_since,
            )
            self._draining_since, self._drained = None, 0
