"""``export`` and ``import``: schedules as a JSON or YAML file of plain forms, and ``import
--from`` another scheduler (django-celery-beat, RedBeat; :mod:`celery_dbeat.importers`).

The file is :mod:`._documents`'s. Export -> import -> export gives the same file, and importing
a file twice changes nothing the second time. So does importing a source
twice: its entries become the same definitions each time.

A schedule whose ``run_at``, ``start_at`` or ``end_at`` holds a value that cannot be read
(PostgreSQL's ``'-infinity'``, text that is no timestamp in SQLite; ``store/reading.py``) is
refused, naming it and what to do, and nothing is written: it reads as empty, and a file holding
it empty would import a schedule without that bound or instant. Refusing keeps every file export
writes one that imports back exactly; marking the value instead would write a file that no import
can take (an import checks the whole file first), found out only when it is needed. Other values
that cannot be read (``next_run_at``, ``last_slot``) are not part of a definition, so such a
schedule is exported as usual.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import IO, Any

import click
import sqlalchemy as sa

from ..api import ScheduleInfo, Schedules, SyncReport
from ..clock import SystemClock
from ..core.audit import Surface
from ..core.definitions import Definition, definition_to_form
from ..core.errors import ConfigOwned, ValidationError
from ..core.fields import FIELDS, Form
from ..core.timing.cron import load_zone
from ..core.urls import mask_url
from ..importers import SourceRead, SourceUnavailable
from ..importers.plan import ACTIONS, outlook, plan, settle
from ..store.database import create_engine
from ..store.reading import Unreadable
from ..task_names import app_task_warning, unknown_tasks
from ._common import (
    CommandError,
    DatabaseProblem,
    DBeatCommand,
    actor_option,
    echo_json,
    iso,
    progress,
    runtime,
    warn_unknown_tasks,
)
from ._documents import (
    FORMAT_VERSION,
    FORMATS,
    dump,
    file_format,
    load_document,
    parse,
    yaml_module,
)
from ._forms import FIELD_OF_OPTION, definition_of, spec_of
from .calendar_transfer import calendar_form, import_calendars, parse_calendars

__all__ = ["export", "import_"]


@click.command("export", cls=DBeatCommand)
@click.argument("file", type=click.File("w", encoding="utf-8", atomic=True), default="-")
@click.option("--format", "fmt", type=click.Choice(FORMATS),
              help="Default: yaml for a .yaml/.yml FILE, else json.")  # fmt: skip
@click.option("--search", metavar="TEXT", help="Only names or tasks containing TEXT.")
def export(file: IO[str], fmt: str | None, search: str | None) -> None:
    """Write every schedule (or those matching --search) to FILE (default: stdout)."""
    fmt = file_format(fmt, file)
    with runtime().schedules() as schedules:
        infos = schedules.list(search=search)
        unreadable = _unreadable(schedules, infos)
        named = {info.calendar for info in infos}
        calendars = [
            calendar_form(c)
            for c in schedules.calendars.list()
            if search is None or c.name in named
        ]
    if unreadable:
        raise CommandError(_unreadable_message(infos, unreadable))
    forms = []
    for info in infos:
        try:
            forms.append(definition_to_form(definition_of(info)))
        except ValidationError as exc:
            raise CommandError(f"schedule {info.name!r} cannot be exported: {exc}") from None
        except RecursionError:
            raise CommandError(
                f"schedule {info.name!r} cannot be exported: nested too deeply"
            ) from None
    if fmt == "yaml":
        yaml_module()  # fail before the file is created
    document: dict[str, Any] = {"version": FORMAT_VERSION, "schedules": forms}
    if calendars:
        document["calendars"] = calendars
    file.write(dump(document, fmt))
    if file.name != "<stdout>":
        click.echo(f"exported {len(forms)} schedules to {file.name}")


#: The instants of a definition (the others, such as ``next_run_at``, are not exported).
DEFINITION_INSTANTS = tuple(f.name for f in FIELDS if f.form is Form.INSTANT)


def _unreadable(schedules: Schedules, infos: list[ScheduleInfo]) -> dict[int, Unreadable]:
    """Of ``infos``, those whose definition holds an instant that cannot be read. Such a row
    reads with the message in ``last_error``, so only rows in error are looked at again."""
    suspects = [info.id for info in infos if info.last_error is not None]
    return schedules.unreadable(suspects, DEFINITION_INSTANTS) if suspects else {}


def _option(column: str) -> str:
    """The ``update`` option that sets ``column`` (``run_at`` -> ``--at``)."""
    option = next((o for o, field in FIELD_OF_OPTION.items() if field == column), column)
    return f"--{option.replace('_', '-')}"


def _unreadable_message(infos: list[ScheduleInfo], unreadable: dict[int, Unreadable]) -> str:
    names = {info.id: info.name for info in infos}
    listed = sorted(((names[i], p) for i, p in unreadable.items()), key=lambda item: item[0])
    name, problem = listed[0]
    if len(listed) == 1:
        columns = ", ".join(problem.columns)
        which = (
            f"schedule {name!r}: the stored value of {columns} cannot be read ({problem.reason})"
        )
    else:
        each = ", ".join(f"{n!r} ({p.detail})" for n, p in listed)
        which = f"{len(listed)} schedules whose stored values cannot be read: {each}"
        name = "NAME"
    example = f"celery dbeat update {name} {_option(problem.columns[0])} ..."
    return (
        f"cannot export {which}; a file would hold the value as empty and import the schedule "
        f"without it. Give the value again ('{example}', an empty value for none) or correct it "
        "in SQL, then export again; nothing was written"
    )


def _apply(schedules: Schedules, definitions: list[Definition], dry_run: bool) -> SyncReport:
    """:meth:`Schedules.apply`, with a progress bar on a terminal when it writes."""
    with progress(0 if dry_run else len(definitions), "importing") as advance:
        return schedules.apply(definitions, dry_run=dry_run, progress=advance)


SOURCES = ("django-celery-beat", "redbeat")


@click.command("import", cls=DBeatCommand)
@actor_option
@click.argument("file", type=click.File("r", encoding="utf-8"), required=False)
@click.option(
    "--from",
    "source",
    type=click.Choice(SOURCES),
    help="Read another scheduler's schedules instead of FILE (docs/tutorial/migrating.md).",
)
@click.option(
    "--source-url",
    metavar="URL",
    help="--from django-celery-beat: its database (default: dbeat_database_url); "
    "redbeat: its Redis (default: redbeat_redis_url, else broker_url).",
)
@click.option(
    "--source-timezone",
    metavar="ZONE",
    help="--from django-celery-beat: the zone of naive timestamps (MySQL, SQLite); "
    "default UTC, as Django writes them with USE_TZ = True.",
)
@click.option(
    "--key-prefix",
    metavar="PREFIX",
    help="--from redbeat: its key prefix (default: redbeat_key_prefix, else 'redbeat:').",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="Default: yaml for a .yaml/.yml FILE, else json.",
)
@click.option("--dry-run", is_flag=True, help="Only say what would change.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def import_(
    file: IO[str] | None,
    source: str | None,
    source_url: str | None,
    source_timezone: str | None,
    key_prefix: str | None,
    fmt: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Create or update, by name, the schedules of FILE ('-' for stdin), or with --from those of
    django-celery-beat or RedBeat.

    The whole file is checked before anything is written. Schedules not in FILE are left alone.

    With --from, each entry is listed with what it becomes and its next fire. An entry that
    cannot be represented is refused with its reason and the command exits 1, the others
    imported all the same. Entries of the app's beat_schedule are skipped (beat syncs them
    itself). Exit 4: the source cannot be read.
    """
    given = {
        "--source-url": source_url,
        "--source-timezone": source_timezone,
        "--key-prefix": key_prefix,
    }
    if source is None:
        if file is None:
            raise click.UsageError("give a FILE, or --from django-celery-beat or --from redbeat")
        flag = next((flag for flag, value in given.items() if value is not None), None)
        if flag is not None:
            raise click.UsageError(f"{flag} applies to --from only")
        _import_file(file, fmt, dry_run, as_json)
        return
    if file is not None:
        raise click.UsageError("give a FILE or --from, not both")
    if fmt is not None:
        raise click.UsageError("--format applies to a FILE only")
    if key_prefix is not None and source != "redbeat":
        raise click.UsageError("--key-prefix applies to --from redbeat only")
    if source_timezone is not None and source != "django-celery-beat":
        raise click.UsageError("--source-timezone applies to --from django-celery-beat only")
    read = _read(source, source_url, source_timezone, key_prefix)
    _import_source(read, dry_run, as_json)


def _import_file(file: IO[str], fmt: str | None, dry_run: bool, as_json: bool) -> None:
    source = "<stdin>" if file.name == "<stdin>" else file.name
    forms, calendar_forms = load_document(file.read(), file_format(fmt, file), source)
    definitions = parse(forms, source)
    calendars = parse_calendars(calendar_forms, source)
    state = runtime()
    with state.schedules(surface=Surface.IMPORT) as schedules:
        for index, definition in enumerate(definitions):  # all checked before any is written
            try:
                schedules.check(definition)
            except ValidationError as exc:
                raise CommandError(
                    f"{source}: schedules[{index}] ({definition.name!r}): {exc}"
                ) from None
        result = schedules.apply(definitions, dry_run=True)
        if result.conflicts:  # refused by the API (beat_schedule puts it back): before any write
            raise CommandError(f"{source}: {ConfigOwned(result.conflicts[0]).told(None)}")
        # Checked against the file's and the database's calendars, then written first.
        calendar_report = import_calendars(schedules, calendars, definitions, source, dry_run)
        if not dry_run and (result.created or result.updated):
            result = _apply(schedules, definitions, dry_run)
    report = {key: getattr(result, key) for key in ACTIONS[:3]}
    if as_json:
        unknown = unknown_tasks(state.app, definitions)
        extra = {"calendars": calendar_report} if calendars else {}
        echo_json(dict(report, dry_run=dry_run, unknown_tasks=unknown, **extra))
    else:
        counts = ", ".join(f"{key} {len(names)}" for key, names in report.items())
        verb = "would import" if dry_run else "imported"
        if calendars:
            made = ", ".join(f"{key} {len(names)}" for key, names in calendar_report.items())
            click.echo(f"{verb} {len(calendars)} calendars from {source}: {made}")
        click.echo(f"{verb} {len(definitions)} schedules from {source}: {counts}")
        warn_unknown_tasks(state.app, definitions, err=False)
    for name, why in result.refused.items():
        click.echo(f"not imported, the database refused it: {name}: {why}", err=True)
    _refused(result.refused)


# --from: another scheduler's schedules -------------------------------------------------------


def _read(source: str, url: str | None, zone_name: str | None, prefix: str | None) -> SourceRead:
    """Everything the source holds; a source that cannot be read exits 4."""
    state, now = runtime(), SystemClock().now()
    if source == "django-celery-beat":
        from ..importers.django_celery_beat import read_django_celery_beat

        zone = load_zone(zone_name or "UTC", "--source-timezone")
        # By default the dbeat database, with its engine options (TLS, timeouts).
        options = None if url else dict(state.settings.engine_options)
        url = url or state.settings.database_url
        try:
            engine = create_engine(url, options)
        except ModuleNotFoundError as exc:
            raise CommandError(
                f"the database driver for {mask_url(url)} is not installed ({exc})"
            ) from None
        except sa.exc.ArgumentError as exc:
            raise CommandError(f"--source-url={mask_url(url)}: {exc}") from None
        try:
            return read_django_celery_beat(engine, naive_zone=zone, now=now)
        except (sa.exc.DBAPIError, SourceUnavailable) as exc:
            reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            raise DatabaseProblem(
                f"cannot read django-celery-beat's tables at {mask_url(url)}: {reason}"
            ) from None
        finally:
            engine.dispose()
    try:
        from ..redis_client import UNAVAILABLE, close_client, create_client
    except ImportError as exc:
        raise CommandError(str(exc)) from None
    from ..importers.redbeat import RedBeatSettings, app_zone, read_redbeat

    settings = RedBeatSettings.from_app(state.app, url=url, prefix=prefix)
    client = create_client(settings.url, settings.options)
    try:
        return read_redbeat(client, settings, zone=app_zone(state.app), now=now)
    except UNAVAILABLE as exc:
        raise DatabaseProblem(
            f"cannot read RedBeat's Redis {mask_url(settings.url)}: {exc}"
        ) from None
    finally:
        close_client(client)


def _describe(definition: Definition) -> str:
    """The spec's one line, as ``list`` shows it (``days=all`` explained where it matters),
    and its bounds."""
    text = spec_of(definition).text()
    if definition.start_at is not None:
        text += f" from {iso(definition.start_at)}"
    if definition.end_at is not None:
        text += f" until {iso(definition.end_at)}"
    return text


def _import_source(read: SourceRead, dry_run: bool, as_json: bool) -> None:
    state = runtime()
    with state.schedules(surface=Surface.IMPORT) as schedules:
        steps = plan(read, set(state.app.conf.beat_schedule or {}), schedules.check)
        imported = [step.definition for step in steps if not step.action]
        result = _apply(schedules, imported, dry_run)
        settle(steps, result, schedules.find(d.name for d in imported), dry_run)
    now = SystemClock().now()
    report: dict[str, Any] = {key: [] for key in ACTIONS[:3]}
    report.update(skipped={}, refused={}, notes={}, next_run_at={})
    lines = []
    width = max((len(step.name) for step in steps), default=0)
    for step in steps:
        detail, notes = step.reason or "", list(step.entry.notes)
        if step.action in ACTIONS[:3]:
            report[step.action].append(step.name)
            seen = outlook(step, now, state.settings.misfire_rules)
            report["next_run_at"][step.name] = iso(seen.upcoming)
            detail = f"{_describe(step.definition)}; {seen.text}"
            notes += seen.notes
        else:
            report[step.action][step.name] = step.reason
        if notes:
            report["notes"][step.name] = notes
        lines.append(f"{step.action:<9}  {step.name:<{width}}  {detail}")
        lines.extend(f"{'':<9}  {'':<{width}}  note: {note}" for note in notes)
    refused = list(report["refused"])
    imported = [step.definition for step in steps if step.action in ACTIONS[:3]]
    unknown = unknown_tasks(state.app, imported)
    warnings = list(read.warnings)
    if unknown:
        warnings.append(app_task_warning(state.app, unknown.values()))
    if as_json:
        echo_json(
            dict(
                report,
                source=read.source,
                dry_run=dry_run,
                warnings=warnings,
                unknown_tasks=unknown,
            )
        )
    else:
        for line in [*(f"warning: {w}" for w in warnings), *lines]:
            click.echo(line)
        counts = ", ".join(f"{key} {len(report[key])}" for key in ACTIONS)
        verb = "would import (dry run, nothing written)" if dry_run else "imported"
        click.echo(f"{verb} {len(imported)} schedules from {read.source}: {counts}")
    _refused(refused)


def _refused(names: Collection[str]) -> None:
    """Exit 1 naming the entries that could not be imported (their reasons said above)."""
    if names:
        shown = ", ".join(repr(name) for name in list(names)[:5])
        more = ", ..." if len(names) > 5 else ""
        count = "1 entry" if len(names) == 1 else f"{len(names)} entries"
        raise CommandError(f"{count} cannot be imported (see the reasons above): {shown}{more}")
