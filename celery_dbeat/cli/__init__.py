"""``celery -A proj dbeat ...``: manage the schedules of the app's dbeat database.

Registered under Celery's ``celery.commands`` entry point. Every command is a thin call of the
management API (:mod:`celery_dbeat.api`); values typed on the command line are parsed by
:func:`celery_dbeat.core.definitions.definition_from_form`, like every other surface.

Exit codes: 0 success; 1 a bad value, a name conflict, a bad file or setting; 2 a malformed
command line; 3 no schedule has that name; 4 the database cannot be reached or its schema is
missing or unknown; 5 another writer changed the schedule at the same time (nothing was stored:
run the command again). Failures print one line on stderr, never a traceback.
"""

from __future__ import annotations

import click

from . import admin, backfill, calendars, database, log, reads, schedules, transfer
from ._common import DBeatGroup

__all__ = ["dbeat"]


@click.group("dbeat", cls=DBeatGroup)
def dbeat() -> None:
    """Manage celery-dbeat schedules in the app's database (dbeat_database_url).

    \b
    Times are UTC ISO-8601 (2024-03-09T07:30:00Z); give instants with an offset and durations
    as 30s, 5m or 1h30m. Read commands take --json for scripts.
    Exit codes: 1 bad input or name conflict, 2 bad command line, 3 unknown schedule,
    4 database unreachable or schema not installed, 5 changed by another writer at the same
    time (run it again).
    """


# Each command module's __all__ is its commands.
for module in (backfill, calendars, database, log, reads, schedules, transfer, admin):
    for name in module.__all__:
        dbeat.add_command(getattr(module, name))
