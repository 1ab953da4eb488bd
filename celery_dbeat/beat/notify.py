"""Change notifications: writes wake every running beat at once instead of at its next poll.

Writers (the management API and every surface built on it) ``PUBLISH`` on a Redis channel after
they commit; beats wait on that channel between ticks. Without ``dbeat_redis_url``, on
PostgreSQL through psycopg, the same happens with ``NOTIFY``/``LISTEN`` on the schedule database
itself. A notification carries no data and makes beat reload nothing: it only ends the wait
early, and the next tick's ordinary due query sees the change. A burst of notifications is
drained at once, so 10,000 edits cost one wake-up. Without either, or while it is down, beats
simply poll every ``dbeat_max_interval``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from celery.utils.log import get_logger
from sqlalchemy.engine import Engine

from ..clock import Outage
from ..config import mask_url

__all__ = [
    "PG_CHANNEL",
    "ChangeListener",
    "ChangeNotifier",
    "DatabaseListener",
    "DatabaseNotifier",
    "channel_name",
    "notifies_through_database",
]

logger = get_logger(__name__)

_RETRY_SUBSCRIBE = 30.0
#: How long a subscription waits for Redis to confirm it.
_CONFIRM_SUBSCRIBE = 5.0
#: The PostgreSQL channel: ``LISTEN``/``NOTIFY`` are per database, so one name serves all.
PG_CHANNEL = "dbeat_changes"
_DRAIN = 0.01


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
        self._redis = Outage(first=_RETRY_SUBSCRIBE, longest=_RETRY_SUBSCRIBE)

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
        self._redis = Outage(first=_RETRY_SUBSCRIBE, longest=_RETRY_SUBSCRIBE)

    def listen(self) -> bool:
        """Subscribe, if not yet subscribed, and return whether this listener is. Beat calls it
        before each tick reads the schedules: a change committed after that read is then
        delivered to the wait that follows the tick, not lost until the next poll."""
        return self._subscribed() is not None

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


def notifies_through_database(engine: Engine) -> bool:
    """Whether writes and beats on ``engine`` can use ``NOTIFY``/``LISTEN`` (PostgreSQL through
    psycopg 3, whose ``notifies`` waits with a timeout)."""
    return engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg"


class DatabaseNotifier:
    """``NOTIFY`` on the schedule database, for beats without Redis. Never raises, and after a
    failure stays quiet for a while, as :class:`ChangeNotifier` does."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._database = Outage(first=_RETRY_SUBSCRIBE, longest=_RETRY_SUBSCRIBE)

    def notify(self) -> None:
        if not self._database.may_try():
            return
        try:
            with self.engine.connect() as conn:
                conn.execute(sa.select(sa.func.pg_notify(PG_CHANNEL, "")))
                conn.commit()
        except Exception as exc:  # beats fall back to polling
            self._database.failed()
            logger.debug("dbeat: change notification not sent: %s", exc)
        else:
            self._database.recovered()

    def close(self) -> None:
        pass


class DatabaseListener:
    """Waits between ticks on ``LISTEN`` of the schedule database: :class:`ChangeListener`
    without Redis. Holds one connection of its own (autocommit, idle between waits)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._raw: Any = None
        self._closed = False
        self._database = Outage(first=_RETRY_SUBSCRIBE, longest=_RETRY_SUBSCRIBE)

    def listen(self) -> bool:
        """``LISTEN``, if not yet listening, and return whether this listener is (see
        :meth:`ChangeListener.listen`)."""
        return self._listening() is not None

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds; return True if woken by a change."""
        connection = self._listening()
        if connection is None:
            time.sleep(max(timeout, 0.0))
            return False
        deadline = time.monotonic() + timeout
        try:
            woken = any(True for _ in connection.notifies(timeout=max(timeout, 0.0), stop_after=1))
            # A burst is one wake-up: read until nothing more arrives for 10 ms (a commit's
            # notifications may come in several packets).
            while woken and any(True for _ in connection.notifies(timeout=_DRAIN)):
                pass
            return woken
        except Exception as exc:  # poll until the database is back
            if self._closed:
                return False  # closed under us by beat's SIGTERM handler: not an outage
            self._lost(exc)
            time.sleep(max(deadline - time.monotonic(), 0.0))
            return False

    def close(self) -> None:
        self._closed = True
        self._drop()

    def _listening(self) -> Any:
        if self._raw is not None:
            return self._raw.driver_connection
        if self._closed or not self._database.may_try():
            return None
        try:
            # From the engine, so that its connect arguments (TLS files, ...) apply; never
            # returned to the pool (see _drop).
            self._raw = self.engine.raw_connection()
            connection = self._raw.driver_connection
            connection.autocommit = True
            connection.execute(f"LISTEN {PG_CHANNEL}")
        except Exception as exc:
            self._lost(exc)
            return None
        if self._database.recovered() is not None:
            logger.warning("dbeat: change notifications from the database resumed")
        return connection

    def _drop(self) -> None:
        if self._raw is not None:
            with contextlib.suppress(Exception):
                self._raw.invalidate()
            self._raw = None

    def _lost(self, exc: Exception) -> None:
        if self._database.failed():
            logger.warning(
                "dbeat: change notifications from the database unavailable (%s); polling "
                "every tick",
                exc,
            )
        self._drop()
