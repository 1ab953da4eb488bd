"""Calendars in ``dbeat export`` and ``dbeat import`` files: a ``"calendars"`` list beside the
schedules, each ``{"name", "timezone", "dates", "description"}``, written only when there are
calendars (so a file without them is what it always was).

An import checks every calendar, and that every schedule of the file names a calendar of the
file or of the database, before it writes anything; then it creates or updates the calendars (by
name, dates replaced) before the schedules that name them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..api import Schedules
from ..core.calendars import Calendar
from ..core.definitions import Definition
from ..core.errors import CalendarNotFound, ValidationError
from ._common import CommandError

__all__ = ["calendar_form", "import_calendars", "parse_calendars"]

_KEYS = ("name", "timezone", "dates", "description")


def calendar_form(calendar: Calendar) -> dict[str, Any]:
    return {key: getattr(calendar, key) for key in _KEYS}


def parse_calendars(entries: Sequence[Any], source: str) -> list[Calendar]:
    calendars: list[Calendar] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"{source}: calendars[{index}]"
        if not isinstance(entry, Mapping):
            raise CommandError(f"{where}: expected an object with {', '.join(_KEYS)}")
        unknown = sorted(set(entry) - set(_KEYS))
        if unknown:
            raise CommandError(f"{where}: {unknown[0]!r} is not a calendar field")
        dates = entry.get("dates", [])
        if not isinstance(dates, list):
            raise CommandError(f"{where}: dates={dates!r}: expected a list of dates")
        try:
            calendar = Calendar.create(
                entry.get("name"),  # type: ignore[arg-type]  # checked by create
                timezone=entry.get("timezone", "UTC"),
                dates=dates,
                description=entry.get("description"),
            )
        except ValidationError as exc:
            raise CommandError(f"{where}: {exc}") from None
        if calendar.name in seen:
            raise CommandError(f"{where}: name={calendar.name!r} is given twice")
        seen.add(calendar.name)
        calendars.append(calendar)
    return calendars


def import_calendars(
    schedules: Schedules,
    calendars: Sequence[Calendar],
    definitions: Sequence[Definition],
    source: str,
    dry_run: bool,
) -> dict[str, list[str]]:
    """Check, then (unless ``dry_run``) create or update ``calendars``; what was done."""
    current = {c.name: c for c in schedules.calendars.list()}
    known = set(current) | {c.name for c in calendars}
    for index, definition in enumerate(definitions):
        if definition.calendar is not None and definition.calendar not in known:
            raise CommandError(
                f"{source}: schedules[{index}] ({definition.name!r}): "
                f"{CalendarNotFound(definition.calendar, known)}"
            )
    report: dict[str, list[str]] = {"created": [], "updated": [], "unchanged": []}
    for calendar in calendars:
        old = current.get(calendar.name)
        if old is not None and calendar_form(old) == calendar_form(calendar):
            report["unchanged"].append(calendar.name)
            continue
        report["created" if old is None else "updated"].append(calendar.name)
        if not dry_run:
            write = schedules.calendars.add if old is None else schedules.calendars.update
            write(
                calendar.name,
                timezone=calendar.timezone,
                dates=calendar.ranges,
                description=calendar.description,
            )
    return report
