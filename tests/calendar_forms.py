"""The calendar cases both admins are tested with (Django's in tests/integration/django/,
Flask-Admin's in tests/integration/flask/), written once: the calendars a list shows, a post of
the add form and what the API stores from it, and a calendar a schedule names, which no delete
removes. The posts refused on a field are ``tests.bad_inputs.BAD_CALENDAR_POSTS``."""

from __future__ import annotations

from celery_dbeat import Cron
from celery_dbeat.api import Schedules

#: Two calendars, in the order a list shows them: ``(name, zone, dates, description)``.
LISTED = [
    ("none-yet", "UTC", [], ""),
    ("uk-holidays", "Europe/London", ["2026-12-25", "2026-12-28..2026-12-31"], "bank holidays"),
]

#: A post of the add form (the dates on lines and after commas, out of order, a range among
#: them), and what the API stores from it: ``(zone, description, dates)``.
NEW_CALENDAR = {
    "name": "closures",
    "timezone": "Europe/Paris",
    "description": "office closed",
    "dates": "2026-12-25\n2026-12-24, 2026-08-01..2026-08-15\n",
}
STORED = ("Europe/Paris", "office closed", ["2026-08-01..2026-08-15", "2026-12-24..2026-12-25"])


def add_listed(api: Schedules) -> None:
    for name, zone, dates, description in LISTED:
        api.calendars.add(name, timezone=zone, dates=dates, description=description or None)


def stored(api: Schedules, name: str) -> tuple[str, str | None, list[str]]:
    calendar = api.calendars.get(name)
    return calendar.timezone, calendar.description, calendar.dates


def calendar_in_use(api: Schedules) -> None:
    """The calendar ``closures``, named by the schedule ``report``."""
    api.calendars.add("closures", dates="2026-12-25")
    api.add("report", "t.report", Cron("0 9 * * *"), calendar="closures")
