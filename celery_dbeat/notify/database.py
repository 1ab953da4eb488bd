"""Change notifications through the schedule database, for beats without Redis: PostgreSQL's
``NOTIFY``/``LISTEN`` on :data:`PG_CHANNEL`, through psycopg 3 (whose ``notifies`` waits with a
timeout). Other databases have no such thing: there, without Redis, beats poll.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import sqlalchemy as sa
from celery.utils.log import get_logger
from sqlalchemy.engine import Engine

from ..clock import Outage
from .base import RETRY_AFTER

__all__ = ["PG_CHANNEL", "DatabaseListener", "DatabaseNotifier", "notifies_through_database"]

logger = get_logger(__name__)

#: The PostgreSQL channel: ``LISTEN``/``NOTIFY`` are per database, so one name serves all.
PG_CHANNEL = "dbeat_changes"
_DRAIN = 0.01


def notifies_through_database(engine: Engine) -> bool:
    """Whether writes and beats on ``engine`` can use ``NOTIFY``/``LISTEN`` (PostgreSQL through
    psycopg 3)."""
    return engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg"


class DatabaseNotifier:
    """``NOTIFY`` on the schedule database (:class:`~.base.Notifier`)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._database = Outage(first=RETRY_AFTER, longest=RETRY_AFTER)

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
    """Waits between ticks on ``LISTEN`` of the schedule database (:class:`~.base.Listener`).
    Holds one connection of its own (autocommit, idle between waits)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._raw: Any = None
        self._closed = False
        self._database = Outage(first=RETRY_AFTER, longest=RETRY_AFTER)

    def listen(self) -> bool:
        return self._listening() is not None

    def wait(self, timeout: float) -> bool:
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
