"""Change notifications: writes wake every running beat at once instead of at its next poll.

Writers (the management API and every surface built on it) ``PUBLISH`` on a Redis channel after
they commit; beats wait on that channel between ticks. A notification carries no data and makes
beat reload nothing: it only ends the wait early, and the next tick's ordinary due query sees the
change. A burst of notifications is drained at once, so 10,000 edits cost one wake-up. Without
Redis, or while it is down, beats simply poll every ``dbeat_max_interval``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import Any

from celery.utils.log import get_logger

from .config import mask_url

__all__ = ["ChangeListener", "ChangeNotifier", "channel_name"]

logger = get_logger(__name__)

_RETRY_SUBSCRIBE = 30.0


def channel_name(prefix: str) -> str:
    return f"{prefix}changes"


def _connect(url: str, options: Mapping[str, Any] | None) -> Any:
    # Imported here: the management API imports this module, and Redis is optional.
    from .redis_client import create_client

    return create_client(url, options, socket_timeout=2, socket_connect_timeout=0.5)


def _first_client(url: str, options: Mapping[str, Any] | None) -> Any:
    """The client for ``url``, or ``None`` if it needs a server that is down (a cluster reads its
    slot map when built); a bad URL or option raises at once."""
    from .redis_client import UNAVAILABLE

    try:
        return _connect(url, options)
    except UNAVAILABLE as exc:
        logger.debug("dbeat: Redis at %s not reachable yet: %s", mask_url(url), exc)
        return None


def _close(client: Any) -> None:
    from .redis_client import close_client

    close_client(client)


class ChangeNotifier:
    """Publishes "something changed". Never raises: a lost notification only costs latency.

    After a failure it stays quiet for a while, so that writes are not slowed by a Redis that is
    down (each attempt would wait for a connection timeout).
    """

    def __init__(
        self, target: Any, *, prefix: str = "dbeat:", options: Mapping[str, Any] | None = None
    ) -> None:
        """``target``: a Redis URL (built with ``options``, closed by :meth:`close`) or a client
        the caller keeps."""
        self._owns = isinstance(target, str)
        self._url: str = target if self._owns else ""
        self._options = options
        self.client: Any = _first_client(target, options) if self._owns else target
        self.channel = channel_name(prefix)
        self._quiet_until = 0.0

    def notify(self) -> None:
        if time.monotonic() < self._quiet_until:
            return
        try:
            if self.client is None:
                self.client = _connect(self._url, self._options)
            # Classic PUBLISH: a cluster forwards it to every node, wherever beats subscribed.
            self.client.publish(self.channel, b"1")
        except Exception as exc:  # beats fall back to polling
            self._quiet_until = time.monotonic() + _RETRY_SUBSCRIBE
            logger.debug("dbeat: change notification not sent: %s", exc)

    def close(self) -> None:
        if self._owns and self.client is not None:
            _close(self.client)
            self.client = None


class ChangeListener:
    """Waits between ticks until the timeout or a change notification, whichever comes first."""

    def __init__(
        self, url: str, *, prefix: str = "dbeat:", options: Mapping[str, Any] | None = None
    ) -> None:
        self.url = url
        self.options = options
        self.channel = channel_name(prefix)
        self._closed = False
        self.client: Any = _first_client(url, options)
        self._pubsub: Any = None
        self._retry_at = 0.0
        self._down = False

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds; return True if woken by a change."""
        deadline = time.monotonic() + timeout
        pubsub = self._subscribed()
        if pubsub is None:
            time.sleep(max(timeout, 0.0))
            return False
        try:
            while (remaining := deadline - time.monotonic()) > 0:
                message = pubsub.get_message(ignore_subscribe_messages=True, timeout=remaining)
                if message is not None:
                    self._drain(pubsub)
                    return True
        except Exception as exc:  # poll until Redis is back
            if self._closed:
                # Closed under us (beat's SIGTERM handler closes the scheduler while we wait):
                # the socket error is the shutdown, not an outage.
                return False
            self._lost(exc)
            time.sleep(max(deadline - time.monotonic(), 0.0))
        return False

    def close(self) -> None:
        self._closed = True
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                self._pubsub.close()
        if self.client is not None:
            _close(self.client)
            self.client = None

    def _subscribed(self) -> Any:
        if self._pubsub is not None:
            return self._pubsub
        if time.monotonic() < self._retry_at:
            return None
        try:
            if self.client is None:
                self.client = _connect(self.url, self.options)
            pubsub = self.client.pubsub()
            pubsub.subscribe(self.channel)
        except Exception as exc:
            self._lost(exc)
            return None
        if self._down:
            logger.warning("dbeat: change notifications from %s resumed", mask_url(self.url))
            self._down = False
        self._pubsub = pubsub
        return pubsub

    def _drain(self, pubsub: Any) -> None:
        while pubsub.get_message(ignore_subscribe_messages=True, timeout=0) is not None:
            pass

    def _lost(self, exc: Exception) -> None:
        if not self._down:
            logger.warning(
                "dbeat: change notifications from %s unavailable (%s); polling every tick",
                mask_url(self.url),
                exc,
            )
            self._down = True
        self._pubsub = None
        self._retry_at = time.monotonic() + _RETRY_SUBSCRIBE
