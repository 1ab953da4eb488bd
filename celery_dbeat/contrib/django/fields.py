"""A Django field for celery-dbeat's instants: aware UTC in Python, whatever Django's settings.

The tables are written by SQLAlchemy (:class:`celery_dbeat.store.types.UTCDateTime`): PostgreSQL
``timestamptz``; MySQL/MariaDB ``DATETIME(6)`` and SQLite ``'YYYY-MM-DD HH:MM:SS.ffffff'`` text,
both naive UTC. Django reads naive values in the connection's zone (``DATABASES[...]['TIME_ZONE']``
when set) and returns naive local times when ``USE_TZ = False``; this field undoes both, and
writes lookups' parameters in exactly the stored format so that SQLite's text comparisons hold.
"""

from __future__ import annotations

import zoneinfo
from datetime import datetime, timezone
from typing import Any

from django.db import models
from django.utils import timezone as django_timezone
from django.utils.dateparse import parse_datetime

__all__ = ["UTCDateTimeField"]

UTC = timezone.utc


def _sqlite_text(value: datetime) -> str:
    """The text SQLAlchemy's SQLite dialect stores (microseconds always written)."""
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
        f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond:06d}"
    )


def _as_utc(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        # Only Django's own naive values arrive here (USE_TZ = False): local to TIME_ZONE.
        value = django_timezone.make_aware(value, django_timezone.get_default_timezone())
    return value.astimezone(UTC)


class UTCDateTimeField(models.DateTimeField):
    """A ``DateTimeField`` over a column that stores UTC; values are always aware UTC."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> datetime | None:
        if value is None:
            return None
        instant: datetime | None = parse_datetime(value) if isinstance(value, str) else value
        if instant is None:
            raise ValueError(f"{self.name}: not a timestamp: {value!r}")
        if connection.vendor == "postgresql":
            if instant.tzinfo is None:  # USE_TZ = False: the session's local time
                instant = django_timezone.make_aware(
                    instant, zoneinfo.ZoneInfo(connection.timezone_name)
                )
            return instant.astimezone(UTC)
        # Stored naive UTC. Django may have labelled the digits with the connection's zone
        # (without shifting them): keep the digits, label them UTC.
        return instant.replace(tzinfo=UTC)

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if not prepared:
            value = self.get_prep_value(value)
        if value is None or not isinstance(value, datetime):
            return super().get_db_prep_value(value, connection, prepared=True)
        value = _as_utc(value)
        if connection.vendor == "postgresql":
            return value
        if connection.vendor == "sqlite":
            return _sqlite_text(value)
        return value.replace(tzinfo=None)
