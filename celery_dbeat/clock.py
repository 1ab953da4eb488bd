"""The only module that reads the wall clock.

Everything else takes a :class:`Clock` or an explicit ``now`` so that tests never sleep to reach a
time. All instants are timezone-aware UTC.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Protocol

__all__ = ["Clock", "FixedClock", "SystemClock", "utc"]

utc = timezone.utc


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
