"""The periodic part of a beat's tick, besides publishing: its heartbeat (which also tells it for
how long beats have been running, :class:`.pacing.Watch`), history and audit pruning in bounded
steps, and the metrics that need a query."""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from celery.utils.log import get_logger

from .._version import __version__
from ..store.failures import DATABASE_ERRORS, driver_message, is_refusal
from .pacing import Part

__all__ = ["Upkeep"]

logger = get_logger(__name__)

_PRUNE_EVERY = 60.0  # seconds between history prunes of one beat
#: ... and while a pass over the schedules' ``history_limit`` is not over: a prune is 0.2 s at
#: most, so a beat gives it 4% of its time until the limits hold again.
_PRUNE_GOING_ON = 5.0
#: How far back the last-success metric looks when beat starts.
_SUCCESS_LOOKBACK = timedelta(hours=1)


class Upkeep(Part):
    """One beat's heartbeat, pruning and queried metrics (see the module docstring)."""

    def __post_init__(self) -> None:
        self._last_prune: float | None = None
        #: Where the next prune of the schedules' ``history_limit`` goes on from (a schedule id).
        self._limits_from = 0
        self._successes_since = self.clock.local.now() - _SUCCESS_LOOKBACK
        self._identity = {
            "name": self.settings.instance_name,
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "version": __version__,
            "started_at": self.clock.local.now(),
        }

    def heartbeat(self, now: datetime) -> None:
        """Write this beat's heartbeat (started when its current stretch of ticking began), and
        read every beat's running stretch into the watch."""
        if self.watch.up_since is not None:
            self._identity["started_at"] = self.watch.up_since
        self.watch.lifetimes = self.store.heartbeat(self._identity, now)

    def prune_and_measure(self, now: datetime) -> None:
        """Prune history (every :data:`_PRUNE_EVERY`, or :data:`_PRUNE_GOING_ON` while a pass
        over the ``history_limit`` is not over), then set the metrics that need a query."""
        mono = self.clock.monotonic()
        every = _PRUNE_EVERY if self._limits_from == 0 else _PRUNE_GOING_ON
        if self._last_prune is None or mono - self._last_prune >= every:
            self._last_prune = mono
            try:
                self.prune(now)
            except DATABASE_ERRORS as exc:
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
            backlog = self.store.backlog(now)
            self.metrics.backlog(backlog.due)
            self.metrics.queued(backlog.queued)
            self.metrics.paused(backlog.paused)
            in_alert: dict[str, int] = {}
            for _name, kind, _episode in self.store.schedules_in_alert():
                in_alert[kind] = in_alert.get(kind, 0) + 1
            self.metrics.in_alert(in_alert)
            for name, at in self.store.recent_successes(self._successes_since):
                self.metrics.succeeded(name, at)
                self._successes_since = max(self._successes_since, at)

    def prune(self, now: datetime) -> None:
        """Delete fire history and audit entries older than their retention, and fires beyond
        a schedule's ``history_limit``, in bounded batches."""
        retention, monotonic = self.settings.history_retention, self.clock.monotonic
        if retention is not None:
            pruned = self.store.prune_history(now - retention, monotonic)
            if pruned:
                logger.info(
                    "dbeat: pruned %d fire(s) older than %s from history", pruned, retention
                )
        pruned, self._limits_from = self.store.prune_history_limits(self._limits_from, monotonic)
        if pruned:
            logger.info("dbeat: pruned %d fire(s) beyond their history_limit", pruned)
        kept = self.settings.audit_retention
        if kept is not None:
            pruned = self.store.prune_audit(now - kept, monotonic)
            if pruned:
                logger.info("dbeat: pruned %d audit entries older than %s", pruned, kept)
