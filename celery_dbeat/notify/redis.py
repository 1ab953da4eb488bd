"""Change notifications through Redis: ``PUBLISH`` on ``{prefix}changes``, beats ``SUBSCRIBE``.

Works on one server, Sentinel and Cluster alike (:mod:`celery_dbeat.redis_client` builds the
client). The Redis client is imported only when one is built: the management API imports this
module, and Redis is optional.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import Any

from celery.utils.log import get_logger

from ..clock import Outage
from ..config import mask_url
from .base import RETRY_AFTER

__all__ = ["ChangeListener", "ChangeNotifier", "channel_name"]

logger = get_logger(__name__)

#: How long a subscription waits for Redis to confirm it.
_CONFIRM_SUBSCRIBE = 5.0


def channel_name(prefix: str) -> str:
    return f"{prefix}changes"


def _connect(url: str, options: Mapping[str, Any] | None) -> Any:
    # Imported here: the management API imports this module, and Redis is optional.
    from ..redis_client import create_client

    return create_client(url, options, socket_timeout=2, socket_connect_timeout=0.5)


def _first_client(url: str, options: Mapping[str, Any] | None) -> Any:
    """The client for ``url``, or ``None`` if it needs a server that is down (a cluster reads its
    slot map when built); a bad URL or option raises at once."""
    from ..redis_client import UNAVAILABLE

    try:
        return _connect(url, options)
    except UNAVAILABLE as exc:
        logger.debug("dbeat: Redis at %s not reachable yet: %s", mask_url(url), exc)
        return None


def _close(client: Any) -> None:
    from ..redis_client import close_client

    close_client(client)


class ChangeNotifier:
    """Publishes "something changed" (:class:`~.base.Notifier`)."""

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
        self._redis = Outage(first=RETRY_AFTER, longest=RETRY_AFTER)

    def notify(self) -> None:
        if not self._redis.may_try():
            return
        try:
            if self.client is None:
                self.client = _connect(self._url, self._options)
            # Classic PUBLISH: a cluster forwards it to every node, wherever beats subscribed.
            self.client.publish(self.channel, b"1")
        except Exception as exc:  # beats fall back to polling
            self._redis.failed()
            logger.debug("dbeat: change notification not sent: %s", exc)
        else:
            self._redis.recovered()

    def close(self) -> None:
        if self._owns and self.client is not None:
            _close(self.client)
            self.client = None


class ChangeListener:
    """Waits between ticks until the timeout or a change notification, whichever comes first
    (:class:`~.base.Listener`)."""

    def __init__(
        self, url: str, *, prefix: str = "dbeat:", options: Mapping[str, Any] | None = None
    ) -> None:
        self.url = url
        self.options = options
        self.channel = channel_name(prefix)
        self._closed = False
        self.client: Any = _first_client(url, options)
        self._pubsub: Any = None
        self._redis = Outage(first=RETRY_AFTER, longest=RETRY_AFTER)

    def listen(self) -> bool:
        return self._subscribed() is not None

    def wait(self, timeout: float) -> bool:
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
        if not self._redis.may_try():
            return None
        try:
            if self.client is None:
                self.client = _connect(self.url, self.options)
            pubsub = self.client.pubsub()
            pubsub.subscribe(self.channel)
            # SUBSCRIBE is only sent: its confirmation says Redis now delivers what is
            # published, so that nothing published after this returns is missed.
            deadline = time.monotonic() + _CONFIRM_SUBSCRIBE
            while (remaining := deadline - time.monotonic()) > 0:
                reply = pubsub.get_message(timeout=remaining)
                if reply is not None and reply["type"] == "subscribe":
                    break
            else:
                raise TimeoutError(f"no confirmation of SUBSCRIBE within {_CONFIRM_SUBSCRIBE} s")
        except Exception as exc:
            self._lost(exc)
            return None
        if self._redis.recovered() is not None:
            logger.warning("dbeat: change notifications from %s resumed", mask_url(self.url))
        self._pubsub = pubsub
        return pubsub

    def _drain(self, pubsub: Any) -> None:
        while pubsub.get_message(ignore_subscribe_messages=True, timeout=0) is not None:
            pass

    def _lost(self, exc: Exception) -> None:
        if self._redis.failed():
            logger.warning(
                "dbeat: change notifications from %s unavailable (%s); polling every tick",
                mask_url(self.url),
                exc,
            )
        self._pubsub = None
