"""What a beat says while the database fails it, and of this host's clock: an outage (the
database unreachable) and a refusal (it answers, and refuses this beat's work) are each logged
when they begin, every :data:`REMIND_EVERY` while they last, and when they end, and retried with
a backoff; a host clock far from the database server's is logged once per episode."""

from __future__ import annotations

from celery.utils.log import get_logger

from ..clock import Outage
from ..store.failures import driver_message, is_auth_failure, is_disconnect
from .pacing import Part

__all__ = ["REMIND_EVERY", "Outages"]

logger = get_logger(__name__)

_MAX_OUTAGE_BACKOFF = 30.0
#: While the database is unreachable or refuses the tick, the log line repeats this often.
REMIND_EVERY = 60.0
#: A host clock this many seconds from the database server's is logged (once per episode).
_SKEW_WARNING = 1.0


class Outages(Part):
    """One beat's database outages and refusals, and its clock's skew (see the module
    docstring). An outage ends the beat's watch (:attr:`.Watch.up_since`): it was not ticking
    meanwhile."""

    def __post_init__(self) -> None:
        self._max_sleep = self.settings.max_interval.total_seconds()
        self._database = Outage(longest=_MAX_OUTAGE_BACKOFF, monotonic=self.clock.monotonic)
        #: Ticks the database refused for another reason than lost connectivity.
        self._refused = Outage(longest=_MAX_OUTAGE_BACKOFF, monotonic=self.clock.monotonic)
        self._refusal: str | None = None
        self._skewed = False

    def wait(self) -> float | None:
        """Seconds to wait before the next try while backing off, ``None``: try now."""
        if not self._database.may_try():
            return min(self._database.wait(), self._max_sleep)
        if not self._refused.may_try():
            return min(self._refused.wait(), self._max_sleep)
        return None

    def failed(self, exc: Exception) -> float:
        """A tick the database failed (not a conflict): log it; the seconds to sleep."""
        if is_disconnect(exc):
            return self._unreachable(exc)
        return self._tick_refused(exc)

    def _unreachable(self, exc: Exception) -> float:
        self.watch.up_since = None  # not working meanwhile
        if self._database.failed():
            logger.error("dbeat: schedule database unreachable, retrying: %s", driver_message(exc))
        elif (took := self._database.remind(REMIND_EVERY)) is not None:
            logger.error(
                "dbeat: schedule database still unreachable after %.0f s, retrying: %s",
                took,
                driver_message(exc),
            )
        return min(self._database.backoff, self._max_sleep)

    def _tick_refused(self, exc: Exception) -> float:
        """The database answered, and refused this tick's work for a reason that is not one
        schedule's (those are set aside where they are written): not an outage, and not
        reported as one. Retried with backoff; logged when it begins or changes, and again
        every :data:`REMIND_EVERY` while it lasts."""
        why = driver_message(exc)
        began = self._refused.failed()
        took = None if began else self._refused.remind(REMIND_EVERY)
        if began or why != self._refusal or took is not None:
            logger.error(
                "dbeat: the schedule database refused %s%s; retrying in %.0f s: %s",
                "this beat's login or rights" if is_auth_failure(exc) else "this tick's work",
                "" if took is None else f" for {took:.0f} s",
                self._refused.backoff,
                why,
            )
        self._refusal = why
        return min(self._refused.backoff, self._max_sleep)

    def recovered(self) -> None:
        """A tick the database did not fail: say that an outage or a refusal is over."""
        took = self._database.recovered()
        if took is not None:
            logger.warning("dbeat: schedule database reachable again after %.1f s", took)
        if self._refused.recovered() is not None:
            logger.warning("dbeat: the schedule database accepts this beat's work again")
            self._refusal = None

    def check_skew(self) -> None:
        """After a reading of the database clock: log when this host's clock moves away from
        the database server's, and when it agrees again."""
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
