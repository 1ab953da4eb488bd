"""A Django field for celery-dbeat's instants: aware UTC in Python, whatever Django's settings,
and a stored value that is no instant read as such rather than failing the query.

The tables are written by SQLAlchemy (:class:`celery_dbeat.store.types.UTCDateTime`): PostgreSQL
``timestamptz``; MySQL/MariaDB ``DATETIME(6)`` and SQLite ``'YYYY-MM-DD HH:MM:SS.ffffff'`` text,
both naive UTC. Django reads naive values in the connection's zone (``DATABASES[...]['TIME_ZONE']``
when set) and returns naive local times when ``USE_TZ = False``; this field undoes both, and
writes lookups' parameters in exactly the stored format so that SQLite's text comparisons hold.

A hand-edited row can hold what no Python ``datetime`` can: PostgreSQL's ``'-infinity'`` and
``'infinity'`` (psycopg refuses to load them and fails the whole query), or text that is no
timestamp in SQLite (Django's converters raise). celery-dbeat's own reads set such a row aside
with its error (``store/reading.py``); here the field reads every value itself, so nothing is
installed on the project's database connections (no psycopg loader, no sqlite3 converter):

* the select wraps the column (:meth:`UTCDateTimeField.select_format`): PostgreSQL gives its
  JSON text (ISO 8601 whatever ``DateStyle``, ``'infinity'`` as such), SQLite the stored text
  without its declared type (which Django's ``sqlite3`` converter would parse and raise on);
* the field is not Django's ``"DateTimeField"`` internal type, so the SQLite and MySQL backends
  do not convert the value before the field does;
* :meth:`~UTCDateTimeField.from_db_value` returns an :class:`UnreadableInstant` for a value it
  cannot read; the models read it as ``None`` and say which columns (``models.py``), and
  ``values()`` gives the :class:`UnreadableInstant` itself.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from django.db import models
from django.utils import timezone as django_timezone
from django.utils.dateparse import parse_datetime

__all__ = ["UTCDateTimeField", "UnreadableInstant"]

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


class UnreadableInstant:
    """A stored value of an instant column that is no instant Python can hold (PostgreSQL's
    ``'-infinity'``, text that is no timestamp in SQLite): what ``stored`` reads as text, and
    why it cannot be read."""

    __slots__ = ("reason", "stored")

    def __init__(self, stored: object, reason: str) -> None:
        self.stored = stored
        self.reason = reason

    def __repr__(self) -> str:
        return f"UnreadableInstant({self.stored!r})"

    def __str__(self) -> str:
        return self.reason

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnreadableInstant) and other.stored == self.stored

    def __hash__(self) -> int:
        return hash(("UnreadableInstant", self.stored))


def _read(value: object) -> datetime | UnreadableInstant:
    """``value`` as the database gave it: a ``datetime`` (MySQL) or text (PostgreSQL's JSON
    text, SQLite's stored text)."""
    if isinstance(value, datetime):
        return value
    problem = ""
    instant: datetime | None = None
    if isinstance(value, str):
        try:
            instant = parse_datetime(value)
        except ValueError as exc:  # the form of a timestamp, out of range ('2024-01-99')
            problem = f" ({exc})"
    if instant is None:
        return UnreadableInstant(value, f"not a readable timestamp: {value!r}{problem}")
    return instant


class UTCDateTimeField(models.DateTimeField):
    """A ``DateTimeField`` over a column that stores UTC; values are always aware UTC, and a
    stored value that is none an :class:`UnreadableInstant` (see the module's docstring)."""

    def get_internal_type(self) -> str:
        # Not "DateTimeField": Django's SQLite and MySQL backends would convert the value read
        # before from_db_value does, and raise on one that is no timestamp.
        return "UTCDateTimeField"

    def db_type(self, connection: Any) -> str | None:
        db_type: str | None = models.DateTimeField().db_type(connection)
        return db_type

    def select_format(self, compiler: Any, sql: str, params: Any) -> tuple[str, Any]:
        vendor = compiler.connection.vendor
        if vendor == "postgresql":
            return f"(to_jsonb({sql}) #>> '{{}}')", params
        if vendor == "sqlite":
            return f"CAST({sql} AS TEXT)", params
        return sql, params

    def from_db_value(
        self, value: Any, expression: Any, connection: Any
    ) -> datetime | UnreadableInstant | None:
        if value is None:
            return None
        instant = _read(value)
        if isinstance(instant, UnreadableInstant):
            return instant
        if instant.tzinfo is not None and connection.vendor == "postgresql":
            return instant.astimezone(UTC)  # the JSON text carries the session zone's offset
        # Stored naive UTC: keep the digits, label them UTC.
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
