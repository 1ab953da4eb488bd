"""How much work a beat takes on at once, and whether it keeps up: batch sizes that stay well
inside the lease (:func:`next_batch_size`), the allowance of queued catch-up fires
(``dbeat_catchup_rate``, :class:`Allowance`), the "behind" episodes a beat reports
(:class:`Behind`), and since when the beats have watched the schedules (:class:`Watch`). Pure
bookkeeping on numbers and instants the ticker hands in, and what the parts of a ticker share
(:class:`Part`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from celery.utils.log import get_logger

from ..clock import SharedClock
from ..config import Settings
from ..core.misfire import watched_since
from ..store import Store
from .metrics import Metrics
from .publishing import Publishing

__all__ = ["BATCH_SHARE_OF_LEASE", "Allowance", "Behind", "Part", "Watch", "next_batch_size"]

logger = get_logger(__name__)

#: A batch (claim, plan, record) taking more than this share of the lease halves the next one:
#: its fires must be published well within the lease, and its row locks held briefly. One
#: taking less than a quarter of that doubles it again, up to ``dbeat_batch_size``.
BATCH_SHARE_OF_LEASE = 0.2
#: The finest step of a clock :class:`Allowance` may be read with (``timedelta``'s).
_CLOCK_RESOLUTION = 1e-6


def next_batch_size(size: int, took: float, lease: float, configured: int) -> int:
    """The size of the next batch after one of ``size`` rows took ``took`` seconds."""
    if took > lease * BATCH_SHARE_OF_LEASE:
        return max(1, size // 2)
    if took < lease * BATCH_SHARE_OF_LEASE / 4:
        return min(configured, size * 2)
    return size


class Watch:
    """Since when the beats have watched the schedules without a break: slots due since then are
    late, never missed (:func:`~celery_dbeat.core.misfire.watched_since`). Shared by the parts
    of one ticker."""

    def __init__(self, lock_ttl: timedelta) -> None:
        self._slack = lock_ttl
        #: When this beat's current stretch of ticking began (on the shared clock); ``None``
        #: after a stall or a database outage, until the next tick.
        self.up_since: datetime | None = None
        #: Every beat's running stretch, ``(started_at, last_seen_at)``, from the heartbeats.
        self.lifetimes: list[tuple[datetime, datetime]] = []

    def since(self, now: datetime) -> datetime:
        return watched_since(now, self.up_since, self.lifetimes, self._slack)


@dataclass(eq=False)
class Part:
    """What the parts of one beat's ticker (:class:`.ticker.Ticker`) share."""

    store: Store
    settings: Settings
    clock: SharedClock
    publishing: Publishing
    metrics: Metrics
    watch: Watch

    def __post_init__(self) -> None:
        """Set up the part's own state."""


class Behind:
    """Whether on-time fires are due faster than this beat (and its peers) publish them: one
    WARNING when an episode begins, with how far behind and what to do, one INFO when it ends.
    Behind means the oldest on-time fire still due when a tick ends is later than the misfire
    tolerance (at least ``dbeat_max_interval``)."""

    def __init__(self, settings: Settings) -> None:
        self._threshold = max(settings.misfire_tolerance, settings.max_interval).total_seconds()
        self.seconds = 0.0
        self._worst = 0.0
        self._since: datetime | None = None

    def observe(self, earliest: datetime | None, now: datetime, rate: float) -> None:
        self.seconds = 0.0 if earliest is None else max((now - earliest).total_seconds(), 0.0)
        if self.seconds > self._threshold:
            if self._since is None:
                self._since = now
                logger.warning(
                    "dbeat: behind by %.1f s: more fires are due than the beats publish (this one"
                    " about %.0f a second); add beats, or spread the schedules (jitter)",
                    self.seconds,
                    rate,
                )
            self._worst = max(self._worst, self.seconds)
        elif self.seconds == 0.0 and self._since is not None:
            logger.info(
                "dbeat: caught up after %.0f s behind (at worst %.1f s)",
                (now - self._since).total_seconds(),
                self._worst,
            )
            self._since, self._worst = None, 0.0


#: :meth:`Allowance.wait` waits for this many seconds' worth of queued fires.
_WAIT_FOR = 0.25


class Allowance:
    """``dbeat_catchup_rate``: how many queued fires this beat may publish now (a token bucket
    of one second's worth); unlimited when the rate is ``None``.

    A token short of whole by less than a microsecond's refill counts as whole: a clock that
    moves in microseconds (``timedelta``, the test clock) can stop that short of the instant
    :meth:`wait` named, and without the slack ``take`` granted nothing there and ``wait``
    named a sleep of under a microsecond, which such a clock never reaches: the beat spun."""

    def __init__(self, rate: float | None, monotonic: Callable[[], float]) -> None:
        self.rate = rate
        self._monotonic = monotonic
        self._tokens = 0.0 if rate is None else rate
        self._slack = 0.0 if rate is None else rate * _CLOCK_RESOLUTION
        self._at = monotonic()

    def _refill(self) -> None:
        if self.rate is None:
            return
        now = self._monotonic()
        self._tokens = min(self.rate, self._tokens + (now - self._at) * self.rate)
        self._at = now

    def take(self, wanted: int) -> int:
        if self.rate is None:
            return wanted
        self._refill()
        granted = min(wanted, int(self._tokens + self._slack))
        self._tokens -= granted
        return granted

    def give_back(self, unused: int) -> None:
        if self.rate is not None:
            self._tokens += unused

    def wait(self) -> float:
        """Seconds until the next queued fires may go (0: now): a quarter of a second's worth
        (at least one), so that a beat drains at the rate in a few ticks a second, not in a
        tick per fire."""
        if self.rate is None:
            return 0.0
        self._refill()
        wanted = max(1.0, self.rate * _WAIT_FOR)
        return 0.0 if self._tokens + self._slack >= wanted else (wanted - self._tokens) / self.rate
