"""The exception tree of celery-dbeat.

::

    DBeatError                     base of everything this package raises on purpose
    ├── ConfigurationError         a ``dbeat_*`` setting has a bad value (names the key)
    ├── ValidationError            a schedule field has a bad value (names the field)
    ├── ScheduleNotFound           no schedule has that name
    ├── ScheduleExists             a schedule with that name exists already
    ├── ScheduleChanged            another writer changed the schedule meanwhile: try again
    ├── ConfigOwned                the schedule comes from ``beat_schedule``: its sync puts it back
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
from enum import Enum
from typing import TypeVar

from .suggestions import did_you_mean
from .urls import mask_url

__all__ = [
    "CalendarExists",
    "CalendarInUse",
    "CalendarNotFound",
    "ConfigOwned",
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


_E = TypeVar("_E", bound=Enum)


def one_of(field: str, value: object, choices: type[_E]) -> _E:
    """``value`` as a member of ``choices``, else a :class:`ValidationError` listing them."""
    try:
        return choices(value)
    except ValueError:
        listed = ", ".join(str(c.value) for c in choices)
        raise ValidationError(field, value, f"must be one of {listed}") from None


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


class ConfigOwned(DBeatError):
    """A write would change or remove a schedule that comes from the app's ``beat_schedule``.

    The rule, the same on every surface: the next beat start (or ``dbeat sync``) puts back the
    definition of every ``beat_schedule`` entry whose row differs from it, and creates again an
    entry whose row was removed (a new schedule, without the old history). So a change to such
    a schedule, or its removal, is refused unless forced (the API's ``force=True``, the CLI's
    ``--force``, the admins' "Edit anyway" box), and a forced one lasts until then. Pause,
    resume, run now and backfill change no definition and are always allowed. A sync keeps a
    pause made elsewhere until the entry's own ``enabled`` changes in ``beat_schedule``, and a
    resume of an entry that says ``enabled: False`` until that entry's timing or ``enabled``
    changes.

    ``str(exc)`` names the API's override; a surface names its own with :meth:`told`."""

    #: The admins' override: a box on the edit form, labelled so, and how a refusal names it.
    EDIT_ANYWAY = "Edit anyway: beat_schedule puts its definition back at the next beat start"
    TICK_EDIT_ANYWAY = 'tick "Edit anyway"'
    #: What the admins' edit page of such a schedule says.
    ADMIN_NOTE = (
        "This schedule comes from the app's beat_schedule: the next beat start (or `dbeat "
        'sync`) puts its definition back, so an edit needs the "Edit anyway" box and lasts '
        "until then, and it cannot be deleted here. Pause, resume, run now and backfill are "
        "always allowed: they change no definition, and a sync keeps a pause."
    )

    def __init__(self, name: str, *, removal: bool = False) -> None:
        self.name = name
        self.removal = removal
        super().__init__(self.told("pass force=True"))

    def told(self, override: str | None) -> str:
        """The refusal, with the surface's way to force the write (``"pass --force"``), or
        without one (``None``: the surface has none)."""
        if self.removal:
            back = "creates it again"
            options = [
                "remove its entry from beat_schedule instead (a sync then disables the schedule "
                "and keeps its history)",
                "pause it",
            ]
        else:
            back = "puts its definition back"
            options = [
                "change beat_schedule instead (`dbeat sync --dry-run` shows what a sync does)"
            ]
        if override is not None:
            options.append(f"{override} to have it {self.done} until then")
        listed = options[0] if len(options) == 1 else f"{', '.join(options[:-1])}, or {options[-1]}"
        why = f"the next beat start (or `dbeat sync`) {back}"
        return f"{self.name!r} comes from beat_schedule, and {why}: {listed}"

    @property
    def done(self) -> str:
        return "removed" if self.removal else "changed"

    @staticmethod
    def forced(name: str, *, removal: bool = False) -> str:
        """What a surface says after a forced write to a schedule from ``beat_schedule``."""
        lasts = "it is back at" if removal else "the change lasts until"
        return f"{name!r} comes from beat_schedule; {lasts} the next beat start or `dbeat sync`"


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
