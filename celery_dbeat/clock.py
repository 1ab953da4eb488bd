"""The only module that reads the wall clock.

Everything else takes a :class:`Clock` or an explicit ``now`` so that tests never sleep to reach a
time. All instants are timezone-aware UTC.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Protocol

__all__ = ["Clock", "FixedClock", "Outage", "SharedClock", "SystemClock", "utc"]

utc = timezone.utc
#: How fast a host's monotonic clock may drift from true time (100 ppm, a poor crystal).
MONOTONIC_DRIFT = 1e-4


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, timezone-aware UTC."""

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin that never goes backwards."""


class SystemClock:
    """The host's clock, optionally shifted by ``offset`` (used to simulate skewed hosts)."""

    def __init__(self, offset: timedelta = timedelta(0)) -> None:
        self.offset = offset

    def now(self) -> datetime:
        return datetime.now(utc) + self.offset

    def monotonic(self) -> float:
        return time.monotonic()


class FixedClock:
    """A clock that only moves when told to; for tests."""

    def __init__(self, now: datetime) -> None:
        if now.tzinfo is None:
            raise ValueError("FixedClock needs an aware datetime")
        self._now = now.astimezone(utc)
        self._mono = 0.0

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, delta: timedelta | float) -> None:
        # Instants move by the exact timedelta (a float of seconds loses microseconds over
        # centuries); only the monotonic reading is a float.
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=float(delta))
        self._now += step
        self._mono += step.total_seconds()

    def set(self, now: datetime) -> None:
        self.advance(now.astimezone(utc) - self._now)


class SharedClock:
    """The clock every beat shares (the database server's), carried on this host's monotonic
    clock between readings.

    Each :meth:`observe` takes a reading of the reference clock with the monotonic instants
    before and after it was taken; :meth:`now` is that reading plus the monotonic time elapsed
    since the midpoint of the round trip (so it is off by at most half the round trip). A new
    reading replaces the current one unless the current one, aged by the drift a monotonic
    clock may have (:data:`MONOTONIC_DRIFT`), is still the more precise. So a host whose wall
    clock is wrong, or is stepped (NTP, a resumed VM), neither fires early nor skips: its wall
    clock is not read once a reading exists. Until the first reading, ``now`` is the local
    clock's.
    """

    def __init__(self, local: Clock) -> None:
        self.local = local
        self._reading: datetime | None = None
        self._read_at = 0.0
        self._uncertainty = 0.0

    @property
    def synced(self) -> bool:
        return self._reading is not None

    def observe(self, reading: datetime, sent: float, received: float) -> None:
        """A reading of the reference clock, taken between monotonic instants ``sent`` and
        ``received``."""
        uncertainty = (received - sent) / 2
        if self._reading is not None:
            aged = self._uncertainty + (received - self._read_at) * MONOTONIC_DRIFT
            if uncertainty > aged:
                return
        self._reading = reading.astimezone(utc)
        self._read_at = (sent + received) / 2
        self._uncertainty = uncertainty

    def offset(self) -> timedelta:
        """How far the reference clock is ahead of the local wall clock."""
        return self.now() - self.local.now()

    def now(self) -> datetime:
        if self._reading is None:
            return self.local.now()
        return self._reading + timedelta(seconds=self.local.monotonic() - self._read_at)

    def monotonic(self) -> float:
        return self.local.monotonic()


class Outage:
    """Whether a dependency (the database, Redis, the broker of notifications) is down, as one
    small state machine on a monotonic clock: up; or down since an instant, tried again after a
    backoff that doubles from ``first`` to ``longest`` seconds (constant when they are equal).

    The caller logs the edges: :meth:`failed` says whether this failure began an outage,
    :meth:`recovered` how long the outage lasted, and :meth:`remind` when a long one is worth
    a line again.
    """

    def __init__(
        self,
        *,
        first: float = 1.0,
        longest: float = 30.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.first, self.longest = first, longest
        self._monotonic = monotonic
        self.down_since: float | None = None
        self.backoff = first
        self.retry_at = 0.0
        self._reminded_at = 0.0

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def may_try(self) -> bool:
        """Up, or down and its backoff is over."""
        return self.down_since is None or self._monotonic() >= self.retry_at

    def wait(self) -> float:
        """Seconds until the next try (0 when up or due)."""
        return 0.0 if self.down_since is None else max(self.retry_at - self._monotonic(), 0.0)

    def failed(self) -> bool:
        """A try failed: back off. True if this began the outage."""
        now = self._monotonic()
        began = self.down_since is None
        if began:
            self.down_since = now
        else:
            self.backoff = min(self.backoff * 2, self.longest)
        self.retry_at = now + self.backoff
        return began

    def remind(self, every: float) -> float | None:
        """While down: how long, once every ``every`` seconds (the first time ``every`` after the
        outage began); ``None`` otherwise. So a log line repeats at a bounded interval."""
        if self.down_since is None:
            return None
        now = self._monotonic()
        if now - max(self.down_since, self._reminded_at) < every:
            return None
        self._reminded_at = now
        return now - self.down_since

    def recovered(self) -> float | None:
        """A try worked: up again. How long it was down, or None if it was not."""
        if self.down_since is None:
            return None
        took = self._monotonic() - self.down_since
        self.down_since, self.backoff, self.retry_at = None, self.first, 0.0
        return took
