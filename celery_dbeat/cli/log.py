"""``celery -A proj dbeat log [NAME | --calendar NAME]``: the audit trail, who changed what, when
and from where."""

from __future__ import annotations

from datetime import datetime

import click

from ..core.audit import change_text
from ._common import DBeatCommand, echo_json, echo_table, instant, runtime

__all__ = ["log"]


@click.command(cls=DBeatCommand)
@click.argument("name", required=False)
@click.option(
    "--calendar",
    metavar="NAME",
    help="Only the entries of this exclusion calendar (its creation, edits and removal).",
)
@click.option(
    "--since",
    metavar="INSTANT",
    callback=instant,
    help="Only entries at or after this instant (ISO-8601 with an offset).",
)
@click.option(
    "--limit", type=click.IntRange(1, 10_000), default=50, show_default=True, help="Most entries."
)
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON (an export).")
def log(
    name: str | None, calendar: str | None, since: datetime | None, limit: int, as_json: bool
) -> None:
    """Show the audit trail, newest first: every create, update, rename, pause, resume, remove,
    run now, backfill, import and sync of a schedule, and every calendar-create,
    calendar-update and calendar-remove of an exclusion calendar, with who made it (--actor,
    the OS user, the admin's user, beat_schedule), from which surface, when (the database's
    clock) and each field's old and new value (a calendar's update: the dates that differ).
    With NAME, that schedule's entries, under every name it had; with --calendar NAME, that
    calendar's.

    Beat prunes entries older than dbeat_audit_retention (default 90 days).
    """
    if name is not None and calendar is not None:
        raise click.UsageError("give a schedule's NAME or --calendar NAME, not both")
    with runtime().schedules() as schedules:
        if calendar is not None:
            entries = schedules.calendars.audit(calendar, since=since, limit=limit)
        else:
            entries = schedules.audit(name, since=since, limit=limit)
    if as_json:
        echo_json([entry.as_json() for entry in entries])
        return
    subject = f" for calendar {calendar!r}" if calendar else f" for {name!r}" if name else ""
    echo_table(
        ("AT", "ACTOR", "SURFACE", "ACTION", "NAME", "CHANGES"),
        (
            (e.at, e.actor, e.surface, e.action, e.name, change_text(e.changes) or "-")
            for e in entries
        ),
        empty="no audit entries" + subject,
    )
