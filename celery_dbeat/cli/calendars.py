"""``celery -A proj dbeat calendar add|update|import|show|list|remove``: exclusion calendars."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..core.calendar_sources import holiday_dates, ics_dates, parse_years
from ..core.text import escaped
from ._common import (
    CommandError,
    DBeatCommand,
    DBeatGroup,
    actor_option,
    echo_json,
    echo_table,
    runtime,
)
from .calendar_transfer import calendar_form

__all__ = ["calendar"]


def _sourced(
    dates: str | None,
    country: str | None,
    subdiv: str | None,
    years: str | None,
    ics: Path | None,
) -> list[object]:
    """The dates typed, plus those of a country's holidays and of an iCalendar file."""
    found: list[object] = [dates] if dates else []
    if years is not None and country is None and ics is None:
        raise click.UsageError("--years goes with --country or --ics")
    if subdiv is not None and country is None:
        raise click.UsageError("--subdiv goes with --country")
    span = None if years is None else parse_years(years)
    try:
        if country is not None:
            if span is None:
                raise click.UsageError("--country needs --years (e.g. --years 2026-2028)")
            found += holiday_dates(country, span, subdiv)
        if ics is not None:
            try:
                text = ics.read_bytes()
            except OSError as exc:
                raise CommandError(f"--ics {ics}: cannot read it: {exc.strerror or exc}") from None
            found += ics_dates(text, span)
    except ImportError as exc:  # the extra that reads the source: the message names it
        raise CommandError(str(exc)) from None
    return found


def _source_options(f: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "--dates",
                metavar="DATES",
                help="Dates and ranges, comma-separated: 2026-12-25,2026-12-28..2026-12-31.",
            ),
            click.option(
                "--country",
                metavar="CODE",
                help="Add this country's public holidays (ISO code, e.g. GB; extra 'holidays').",
            ),
            click.option("--subdiv", metavar="CODE", help="With --country: a subdivision (ENG)."),
            click.option(
                "--years",
                metavar="YEARS",
                help="2026 or 2026-2028: the years of --country's holidays and of --ics's days "
                "(its recurring events are expanded within them).",
            ),
            click.option(
                "--ics",
                type=click.Path(path_type=Path, dir_okay=False),
                help="Add the all-day events of this iCalendar file (extra 'ics'); with "
                "--years, only their days within those years.",
            ),
        ]
    ):
        f = option(f)
    return f


@click.group("calendar", cls=DBeatGroup)
def calendar() -> None:
    """Exclusion calendars: dates (in a zone) on which the schedules naming them do not fire.

    A schedule names one with --calendar NAME; its slots on those dates are recorded as skipped
    with the calendar's name. Edits take effect at every beat's next batch, and are recorded in
    the audit trail (dbeat log --calendar NAME) as --actor or the OS user.
    """


@calendar.command("add", cls=DBeatCommand)
@actor_option
@click.argument("name")
@click.option("--tz", metavar="ZONE", default="UTC", show_default=True, help="The dates' zone.")
@click.option("--description", metavar="TEXT", help="What the calendar is for.")
@_source_options
def add(
    name: str,
    tz: str,
    description: str | None,
    dates: str | None,
    country: str | None,
    subdiv: str | None,
    years: str | None,
    ics: Path | None,
) -> None:
    """Create calendar NAME, with the dates given, a country's holidays and an iCalendar file's
    all-day events."""
    found = _sourced(dates, country, subdiv, years, ics)
    with runtime().schedules() as schedules:
        created = schedules.calendars.add(name, timezone=tz, dates=found, description=description)
    click.echo(f"added calendar {name!r}: {created.day_count} day(s) in {created.timezone}")


@calendar.command("import", cls=DBeatCommand)
@actor_option
@click.argument("name")
@_source_options
def import_(
    name: str,
    dates: str | None,
    country: str | None,
    subdiv: str | None,
    years: str | None,
    ics: Path | None,
) -> None:
    """Add dates to calendar NAME: typed, a country's holidays, an iCalendar file's events."""
    found = _sourced(dates, country, subdiv, years, ics)
    if not found:
        raise click.UsageError("give --dates, --country or --ics")
    with runtime().schedules() as schedules:
        before = schedules.calendars.get(name).day_count
        after = schedules.calendars.update(name, add_dates=found)
    click.echo(
        f"calendar {name!r}: {after.day_count - before} day(s) added, {after.day_count} in all"
    )


@calendar.command("update", cls=DBeatCommand)
@actor_option
@click.argument("name")
@click.option("--tz", metavar="ZONE", help="The dates' zone.")
@click.option("--description", metavar="TEXT", help="What the calendar is for.")
@click.option("--dates", metavar="DATES", help="Replace the dates ('' for none).")
def update(name: str, tz: str | None, description: str | None, dates: str | None) -> None:
    """Change calendar NAME's zone, description or dates."""
    with runtime().schedules() as schedules:
        changed = schedules.calendars.update(
            name, timezone=tz, description=description, dates=dates
        )
    click.echo(f"calendar {name!r}: version {changed.version}, {changed.day_count} day(s)")


@calendar.command("show", cls=DBeatCommand)
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print it as JSON.")
def show(name: str, as_json: bool) -> None:
    """Print calendar NAME and its dates."""
    with runtime().schedules() as schedules:
        found = schedules.calendars.get(name)
    if as_json:
        echo_json({**calendar_form(found), "version": found.version})
        return
    click.echo(f"name:        {found.name}")
    click.echo(f"timezone:    {found.timezone}")
    click.echo(f"description: {escaped(found.description) or '-'}")
    click.echo(f"version:     {found.version}")
    click.echo(f"days:        {found.day_count}")
    for entry in found.dates:
        click.echo(f"  {entry}")


@calendar.command("list", cls=DBeatCommand)
@click.option("--json", "as_json", is_flag=True, help="Print them as JSON.")
def list_(as_json: bool) -> None:
    """List the calendars."""
    with runtime().schedules() as schedules:
        found = schedules.calendars.list()
    if as_json:
        echo_json([{**calendar_form(c), "version": c.version} for c in found])
        return
    echo_table(
        ["NAME", "TIMEZONE", "DAYS", "VERSION", "DESCRIPTION"],
        [(c.name, c.timezone, c.day_count, c.version, c.description) for c in found],
        empty="no calendars",
    )


@calendar.command("remove", cls=DBeatCommand)
@actor_option
@click.argument("name")
def remove(name: str) -> None:
    """Remove calendar NAME; refused while schedules name it."""
    with runtime().schedules() as schedules:
        schedules.calendars.remove(name)
    click.echo(f"removed calendar {name!r}")
