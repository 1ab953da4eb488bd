"""Redis claims: ``SET key owner NX PX ttl`` for a whole batch in one pipeline.

Works on one server, Sentinel and Cluster alike (:mod:`celery_dbeat.redis_client` builds the
client): on a cluster the pipeline is redis-py's non-transactional ``ClusterPipeline``, which sends
each key to the node owning its slot.

While Redis is unreachable the lock degrades to database-only claims (logged once) and retries
Redis with backoff; nothing is lost or doubled, beats just do more redundant work meanwhile. A
Redis that refuses the credentials while beat runs (a rotated password) is logged as that, not as
an outage; at start-up it stops beat (:mod:`celery_dbeat.checks`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from celery.utils.log import get_logger

from ..clock import Outage
from ..config import mask_url
from ..core.errors import ConfigurationError
from ..core.fires import FireKey, fire_lock_key
from ..redis_client import (
    UNAVAILABLE,
    RedisClient,
    close_client,
    create_client,
    describe_client,
    is_refused,
)

__all__ = ["RedisLock"]

logger = get_logger(__name__)

# Delete the key only if this owner still holds it (never another beat's claim). Sent as a plain
# EVAL command, one per key: redis-py's cluster pipeline refuses EVALSHA (the node owning a key
# may not have the script loaded) and has no eval() method, but routes a raw EVAL by its key. The
# script body is a hundred bytes, on a path taken only when a tick fails.
RELEASE_SCRIPT = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""

_MAX_BACKOFF = 30.0


class RedisLock:
    """Per-fire claims in Redis. ``client`` is a URL (built with ``options``; closed by
    :meth:`close`) or a client the caller keeps (``redis.Redis`` or ``RedisCluster``)."""

    def __init__(
        self,
        client: RedisClient | str,
        *,
        prefix: str = "dbeat:",
        owner: str,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.prefix = prefix
        self.owner = owner
        self._redis = Outage(longest=_MAX_BACKOFF)
        self.client: RedisClient | None
        if isinstance(client, str):
            self._url, self._options, self._owns_client = client, dict(options or {}), True
            self.client = None
            try:
                self._connect()
            except UNAVAILABLE as exc:  # a cluster reads its slot map when the client is built
                if is_refused(exc):
                    raise ConfigurationError(
                        "dbeat_redis_url",
                        mask_url(client),
                        f"Redis refused the credentials ({exc}): fix the user and password",
                    ) from None
                self._outage(exc)
        else:
            self._url, self._options, self._owns_client = describe_client(client), {}, False
            self.client = client

    def describe(self) -> str:
        return f"redis {mask_url(self._url)} (prefix {self.prefix!r})"

    @property
    def degraded(self) -> bool:
        """True while Redis is unreachable and claims fall back to the database."""
        return self._redis.down

    def claim(self, keys: Iterable[FireKey], ttl: timedelta) -> set[FireKey]:
        keys = list(keys)
        if not keys:
            return set()
        if not self._redis.may_try():
            return set(keys)
        px = max(int(ttl.total_seconds() * 1000), 1)
        try:
            pipe = self._connect().pipeline(transaction=False)
            for key in keys:
                pipe.set(fire_lock_key(self.prefix, key), self.owner, nx=True, px=px)
            answers = pipe.execute()
        except UNAVAILABLE as exc:
            self._outage(exc)
            return set(keys)
        if (took := self._redis.recovered()) is not None:
            logger.warning(
                "dbeat: Redis reachable again after %.1f s; per-fire locks resumed", took
            )
        return {key for key, won in zip(keys, answers, strict=True) if won}

    def release(self, keys: Iterable[FireKey]) -> None:
        keys = list(keys)
        if not keys or self._redis.down:
            return
        try:
            pipe = self._connect().pipeline(transaction=False)
            for key in keys:
                pipe.execute_command(
                    "EVAL", RELEASE_SCRIPT, 1, fire_lock_key(self.prefix, key), self.owner
                )
            pipe.execute()
        except UNAVAILABLE as exc:
            self._outage(exc)

    def close(self) -> None:
        if self._owns_client and self.client is not None:
            close_client(self.client)
            self.client = None

    def _connect(self) -> RedisClient:
        if self.client is None:
            self.client = create_client(
                self._url,
                self._options,
                socket_timeout=2,
                socket_connect_timeout=2,
                health_check_interval=30,
            )
        return self.client

    def _outage(self, exc: Exception) -> None:
        if not self._redis.failed():
            return
        if is_refused(exc):
            logger.error(
                "dbeat: Redis at %s refuses celery-dbeat's credentials or commands (%s); "
                "claiming fires through the database until it accepts them: fix "
                "dbeat_redis_url or the ACL user's rights",
                mask_url(self._url),
                exc,
            )
            return
        logger.warning(
            "dbeat: Redis unreachable at %s (%s); claiming fires through the database "
            "until it is back",
            mask_url(self._url),
            exc,
        )
