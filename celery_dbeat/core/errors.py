"""The exception tree of celery-dbeat.

::

    DBeatError                     base of everything this package raises on purpose
    ├── ConfigurationError         a ``dbeat_*`` setting has a bad value (names the key)
    ├── ValidationError            a schedule field has a bad value (names the field)
    ├── ScheduleNotFound           no schedule has that name
    ├── ScheduleExists             a schedule with that name exists already
    ├── ScheduleChanged            another writer changed the schedule meanwhile: try again
    ├── CalendarNotFound           no calendar has that name
    ├── CalendarExists             a calendar with that name exists already
    ├── CalendarInUse              a calendar to remove is still named by schedules
    └── SchemaVersionError         the database schema is missing, newer or unknown

A database that cannot be reached surfaces as SQLAlchemy's own ``OperationalError``: beat retries
it, the CLI says so in one line (exit 4).
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from datetime import datetime, timedelta

from .suggestions import did_you_mean
from .urls import mask_url

__all__ = [
    "CalendarExists",
    "CalendarInUse",
    "CalendarNotFound",
    "ConfigurationError",
    "DBeatError",
    "ScheduleChanged",
    "ScheduleExists",
    "ScheduleNotFound",
    "SchemaVersionError",
    "ValidationError",
]


class DBeatError(Exception):
    """Base class of every error celery-dbeat raises on purpose."""


class _Short(reprlib.Repr):
    def __init__(self) -> None:
        super().__init__()
        self.maxstring = self.maxother = 200
        self.maxlong = 60

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 10_000:  # repr() refuses integers of more than 4,300 digits
            return f"<integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_short = _Short()


def shown(value: object) -> str:
    """``repr(value)``, shortened: an error message must stay readable (and ``repr`` of a
    5,000-digit integer even raises). A URL is shown with its password hidden."""
    if isinstance(value, str) and "://" in value:
        value = mask_url(value)
    if isinstance(value, (datetime, timedelta)):
        # As people type them (2025-01-31T09:00:00+00:00, 1:30:00), not datetime.datetime(...).
        return value.isoformat() if isinstance(value, datetime) else str(value)
    return _short.repr(value)


class ConfigurationError(DBeatError):
    """A ``dbeat_*`` setting is invalid. The message names the key and the value."""

    def __init__(self, key: str, value: object, problem: str, *, hidden: bool = False) -> None:
        """``hidden``: leave the value out of the message (a misspelt key may hold a secret)."""
        self.key = key
        self.value = value
        self.problem = problem
        super().__init__(f"{key}: {problem}" if hidden else f"{key}={shown(value)}: {problem}")


class ValidationError(DBeatError, ValueError):
    """A schedule field is invalid. The message names the field and the value."""

    def __init__(self, field: str, value: object, problem: str) -> None:
        self.field = field
        self.value = value
        self.problem = problem
        super().__init__(f"{field}={shown(value)}: {problem}")


class ScheduleNotFound(DBeatError, LookupError):
    """No schedule with the given name exists."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"no schedule named {name!r}")


class ScheduleExists(DBeatError):
    """A schedule with the given name exists already."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"a schedule named {name!r} exists already")


class ScheduleChanged(DBeatError):
    """Another writer changed the schedule between this edit's read and its write, so the edit
    was not stored (it would have overwritten theirs). Nothing is wrong with the input: read the
    schedule again and retry."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"schedule {name!r} was changed by someone else at the same time; nothing was "
            "stored: try again"
        )


class CalendarNotFound(DBeatError, LookupError):
    """No calendar with the given name exists (``known``: those that do, for a suggestion)."""

    def __init__(self, name: str, known: Iterable[str] = ()) -> None:
        self.name = name
        meant = did_you_mean(name, known)
        super().__init__(f"no calendar named {name!r}{meant} (see: dbeat calendar list)")


class CalendarExists(DBeatError):
    """A calendar with the given name exists already."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"a calendar named {name!r} exists already")


class CalendarInUse(DBeatError):
    """A calendar cannot be removed while schedules name it."""

    def __init__(self, name: str, schedules: list[str], total: int) -> None:
        self.name = name
        self.schedules = schedules
        shown_names = ", ".join(repr(s) for s in schedules)
        more = f" and {total - len(schedules)} more" if total > len(schedules) else ""
        super().__init__(
            f"calendar {name!r} is still named by {total} schedule(s): {shown_names}{more}; "
            "point them at another calendar (or none) first"
        )


class SchemaVersionError(DBeatError):
    """The database schema is not the one this version of celery-dbeat knows."""
