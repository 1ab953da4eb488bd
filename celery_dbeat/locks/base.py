"""The claim interface every lock backend implements (keys: :mod:`celery_dbeat.core.fires`).

A claim is advisory: it stops two beats from doing the same work at the same time. The guarantee
that a fire is recorded once is the database's unique key and compare-and-set, so a backend that
loses a claim (Redis restarted, key evicted) can cause wasted work but never a second fire.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any, Protocol

from ..core.fires import FireKey

__all__ = ["FireLock"]


class FireLock(Protocol):
    #: The Redis client claims go through (for start-up checks), ``None`` for database claims.
    client: Any

    @property
    def degraded(self) -> bool:
        """True while claims are granted without the backend (Redis unreachable): the
        database alone arbitrates, as with :class:`DatabaseLock`."""

    def claim(self, keys: Iterable[FireKey], ttl: timedelta) -> set[FireKey]:
        """Claim each key for ``ttl``; return the keys this process now holds.

        A key another owner holds is not returned. Never raises for a backend outage: a backend
        that cannot answer degrades to returning every key (the database arbitrates).
        """

    def release(self, keys: Iterable[FireKey]) -> None:
        """Give back keys this process holds (others' keys are left alone). Best effort."""

    def describe(self) -> str:
        """One line for beat's banner, secrets masked."""

    def close(self) -> None:
        """Release connections this lock created."""
