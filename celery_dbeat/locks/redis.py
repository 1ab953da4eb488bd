"""Redis claims: ``SET key owner NX PX ttl`` for a whole batch in one pipeline.

While Redis is unreachable the lock degrades to database-only claims (logged once) and retries
Redis with backoff; nothing is lost or doubled, beats just do more redundant work meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from celery.utils.log import get_logger

from ..config import mask_url
from .base import FireKey, fire_lock_key

try:
    import redis
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "Redis locks need the redis client: pip install 'celery-dbeat[redis]'"
    ) from exc

__all__ = ["RedisLock"]

logger = get_logger(__name__)

# Delete the key only if this owner still holds it (never another beat's claim).
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""

_MAX_BACKOFF = 30.0


class RedisLock:
    def __init__(
        self, client: redis.Redis[Any] | str, *, prefix: str = "dbeat:", owner: str
    ) -> None:
        if isinstance(client, str):
            self._url = client
            self.client: redis.Redis[Any] = redis.Redis.from_url(
                client, socket_timeout=2, socket_connect_timeout=2, health_check_interval=30
            )
            self._owns_client = True
        else:
            kwargs = client.connection_pool.connection_kwargs
            self._url = (
                f"redis://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"
            )
            self.client, self._owns_client = client, False
        self.prefix = prefix
        self.owner = owner
        self._release_script = self.client.register_script(_RELEASE)
        self._down_since: float | None = None
        self._retry_at = 0.0
        self._backoff = 1.0

    def describe(self) -> str:
        return f"redis {mask_url(self._url)} (prefix {self.prefix!r})"

    @property
    def degraded(self) -> bool:
        """True while Redis is unreachable and claims fall back to the database."""
        return self._down_since is not None

    def claim(self, keys: Iterable[FireKey], ttl: timedelta) -> set[FireKey]:
        keys = list(keys)
        if not keys:
            return set()
        if self._down_since is not None and time.monotonic() < self._retry_at:
            return set(keys)
        px = max(int(ttl.total_seconds() * 1000), 1)
        try:
            pipe = self.client.pipeline(transaction=False)
            for key in keys:
                pipe.set(fire_lock_key(self.prefix, key), self.owner, nx=True, px=px)
            answers = pipe.execute()
        except redis.RedisError as exc:
            self._outage(exc)
            return set(keys)
        self._recovered()
        return {key for key, won in zip(keys, answers, strict=True) if won}

    def release(self, keys: Iterable[FireKey]) -> None:
        keys = list(keys)
        if not keys or self._down_since is not None:
            return
        try:
            pipe = self.client.pipeline(transaction=False)
            for key in keys:
                self._release_script(
                    keys=[fire_lock_key(self.prefix, key)], args=[self.owner], client=pipe
                )
            pipe.execute()
        except redis.RedisError as exc:
            self._outage(exc)

    def close(self) -> None:
        if self._owns_client:
            self.client.close()

    def _outage(self, exc: Exception) -> None:
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = now
            logger.warning(
                "dbeat: Redis unreachable at %s (%s); claiming fires through the database "
                "until it is back",
                mask_url(self._url),
                exc,
            )
        else:
            self._backoff = min(self._backoff * 2, _MAX_BACKOFF)
        self._retry_at = now + self._backoff

    def _recovered(self) -> None:
        if self._down_since is not None:
            logger.warning(
                "dbeat: Redis reachable again after %.1f s; per-fire locks resumed",
                time.monotonic() - self._down_since,
            )
            self._down_since = None
            self._backoff = 1.0
