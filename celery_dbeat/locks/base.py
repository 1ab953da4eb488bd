"""The claim interface every lock backend implements, and the lock key format.

A claim is advisory: it stops two beats from doing the same work at the same time. The guarantee
that a fire is recorded once is the database's unique key and compare-and-set, so a backend that
loses a claim (Redis restarted, key evicted) can cause wasted work but never a second fire.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import NamedTuple, Protocol

__all__ = ["FireKey", "FireLock", "fire_lock_key"]


class FireKey(NamedTuple):
    """A fire: a schedule id and a slot."""

    schedule_id: int
    slot: datetime


def fire_lock_key(prefix: str, key: FireKey) -> str:
    """``{prefix}fire:{schedule_id}:{slot as integer microseconds since the epoch}``."""
    epoch_us = round(key.slot.timestamp() * 1_000_000)
    return f"{prefix}fire:{key.schedule_id}:{epoch_us}"


class FireLock(Protocol):
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
