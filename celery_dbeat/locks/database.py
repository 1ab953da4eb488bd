"""Database-only claims: every key is granted; the fire row's unique key decides.

The embedded default, and what the Redis backend falls back to while Redis is unreachable.
Beats then race on the schedule rows themselves (``FOR UPDATE SKIP LOCKED`` on PostgreSQL and
MySQL/MariaDB, ``BEGIN IMMEDIATE`` on SQLite) and the compare-and-set on ``next_run_at``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from ..core.fires import FireKey

__all__ = ["DatabaseLock"]


class DatabaseLock:
    client: Any = None
    degraded = False

    def claim(self, keys: Iterable[FireKey], ttl: timedelta) -> set[FireKey]:
        return set(keys)

    def release(self, keys: Iterable[FireKey]) -> None:
        pass

    def describe(self) -> str:
        return "database (unique fire rows)"

    def close(self) -> None:
        pass
