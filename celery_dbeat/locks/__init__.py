"""Per-fire claims: the fast path that keeps beats from racing on the same due fire."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import FireLock
from .database import DatabaseLock

__all__ = ["DatabaseLock", "FireLock", "make_lock"]


def make_lock(
    redis_url: str | None,
    *,
    prefix: str,
    owner: str,
    options: Mapping[str, Any] | None = None,
) -> FireLock:
    """The lock backend for these settings: Redis when a URL is given, else the database alone."""
    if redis_url is None:
        return DatabaseLock()
    from .redis import RedisLock

    return RedisLock(redis_url, prefix=prefix, owner=owner, options=options)
