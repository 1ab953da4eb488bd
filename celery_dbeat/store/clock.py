"""The database clock: the one clock every beat and writer shares, read from the database server.

"Now" for leases (how long a fire is left to the beat that recorded it) and for schedule writes
(a new schedule's first slot) is taken on it: on the hosts' own clocks, a beat ahead by more
than a lease would take over fires another beat is publishing right now, and a writer a few
seconds ahead would skip the first slots of a schedule that starts now. On SQLite (beats sharing
a file share a host and its clock), or when turned off (tests that move a fake clock past
leases), it is the caller's own clock.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

__all__ = ["DatabaseClock"]


class DatabaseClock:
    """The database server's clock for one dialect, or none (see the module docstring)."""

    def __init__(self, dialect: str, *, enabled: bool = True) -> None:
        #: The clock as a column (``None`` when there is none): a reading added to a query the
        #: caller makes anyway costs no round trip of its own.
        self.column: sa.ColumnElement[Any] | None = _column(dialect) if enabled else None

    @property
    def available(self) -> bool:
        return self.column is not None

    def read(self, value: datetime) -> datetime:
        """A value of :attr:`column` as an aware UTC datetime (MySQL/MariaDB give naive UTC)."""
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)

    def now(self, conn: Connection, local: datetime) -> datetime:
        """Now on this clock; ``local`` (the caller's clock) when there is none."""
        if self.column is None:
            return local
        return self.read(conn.execute(sa.select(self.column)).scalar_one())

    def moved(
        self, conn: Connection, now: datetime, lease_until: datetime
    ) -> tuple[datetime, datetime]:
        """``now`` and ``lease_until`` (a beat's clock) moved onto this one, the lease's length
        kept."""
        server = self.now(conn, now)
        return server, server + (lease_until - now)


def _column(dialect: str) -> sa.ColumnElement[Any] | None:
    if dialect == "postgresql":
        return sa.func.clock_timestamp()
    if dialect in ("mysql", "mariadb"):
        # DATETIME(6) columns hold naive UTC; so does UTC_TIMESTAMP, whatever the session zone.
        return sa.func.utc_timestamp(6)
    return None
