"""Column types that behave the same on PostgreSQL, MySQL/MariaDB and SQLite."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import DateTime
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

__all__ = ["UTCDateTime", "naive_utc"]


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC instant, whatever the backend and the server's or session's zone.

    PostgreSQL stores ``timestamptz``. MySQL/MariaDB (``DATETIME(6)``, not ``TIMESTAMP``, which the
    server would shift by the session zone) and SQLite store naive UTC with microseconds. Naive
    values are refused on the way in; values come back aware in UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name in ("mysql", "mariadb"):
            return dialect.type_descriptor(mysql.DATETIME(fsp=6))
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if dialect.name == "postgresql":
            return _utc(value)
        return naive_utc(value)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value!r} refused: pass an aware UTC datetime")
    return value.astimezone(timezone.utc)


def naive_utc(value: datetime) -> datetime:
    """An aware instant as :class:`UTCDateTime` stores it on MySQL/MariaDB and SQLite: UTC
    without a zone. Naive values are refused."""
    return _utc(value).replace(tzinfo=None)
