"""What every ``celery dbeat`` command shares: the app's settings and database, the mapping of
errors to one line on stderr and an exit code, the output formats (tables, JSON, instants) and
the warning about tasks the app does not register (:mod:`celery_dbeat.task_names`, the same
words on every surface).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import click
import sqlalchemy as sa

from ..api import Schedules
from ..checks import app_argument
from ..config import Settings, mask_url
from ..core.audit import Actor, Surface
from ..core.definitions import Definition
from ..core.errors import (
    CalendarNotFound,
    ConfigurationError,
    DBeatError,
    ScheduleChanged,
    ScheduleExists,
    ScheduleNotFound,
    SchemaVersionError,
    ValidationError,
)
from ..core.formats import iso, parse_instant, seconds_text
from ..core.text import escaped
from ..importers.base import SourceUnavailable
from ..store.audit import os_user
from ..store.database import check_schema, driver_message, is_auth_failure
from ..store.failures import is_disconnect
from ..task_names import app_task_warning, unknown_tasks

__all__ = [
    "EXIT_CHANGED",
    "EXIT_DATABASE",
    "EXIT_INPUT",
    "EXIT_NOT_FOUND",
    "CommandError",
    "DBeatCommand",
    "DBeatGroup",
    "DatabaseProblem",
    "NotFound",
    "Runtime",
    "actor_option",
    "echo_json",
    "echo_table",
    "instant",
    "iso",
    "json_option",
    "progress",
    "runtime",
    "seconds_text",
    "shorten",
    "warn_unknown_tasks",
]

#: Exit codes. Click itself exits with 2 on a malformed command line.
EXIT_INPUT = 1  # a bad value, a name conflict, a bad file or setting
EXIT_NOT_FOUND = 3  # no schedule has that name
EXIT_DATABASE = 4  # the database cannot be reached, or its schema is missing or unknown
EXIT_CHANGED = 5  # another writer changed the schedule meanwhile; running it again may succeed

UTC = timezone.utc

#: Form fields whose command-line option is not spelt like the field (named in errors).
OPTION_OF_FIELD = {"timezone": "--tz", "run_at": "--at"}


class CommandError(click.ClickException):
    """One line on stderr (``Error: ...``) and an exit code; never a traceback."""

    exit_code = EXIT_INPUT

    def __init__(self, message: str) -> None:
        # One line, whatever a driver put in its message.
        super().__init__(" ".join(message.split()))


class NotFound(CommandError):
    exit_code = EXIT_NOT_FOUND


class DatabaseProblem(CommandError):
    exit_code = EXIT_DATABASE


class Changed(CommandError):
    exit_code = EXIT_CHANGED


def translate(exc: Exception, database: str | None = None) -> CommandError | None:
    """The one-line error for an expected failure; ``None`` for a bug (left to propagate)."""
    if isinstance(exc, ValidationError):
        option = OPTION_OF_FIELD.get(exc.field)
        return CommandError(f"{exc} ({option})" if option else str(exc))
    if isinstance(exc, (ScheduleNotFound, CalendarNotFound)):
        return NotFound(str(exc))
    if isinstance(exc, ScheduleExists):
        return CommandError(f"{exc}; use `dbeat update` to change it")
    if isinstance(exc, ScheduleChanged):
        return Changed(str(exc))
    if isinstance(exc, SchemaVersionError):
        return DatabaseProblem(f"schedule database {database}: {exc}")
    if isinstance(exc, SourceUnavailable):
        return DatabaseProblem(str(exc))
    if isinstance(exc, (ConfigurationError, DBeatError)):
        return CommandError(str(exc))
    if isinstance(exc, sa.exc.DBAPIError) and is_auth_failure(exc):
        return DatabaseProblem(
            f"the schedule database {database} refused celery-dbeat's login or rights: "
            f"{driver_message(exc)}; fix the user and password in dbeat_database_url, or the "
            "user's grants"
        )
    if is_disconnect(exc):
        return DatabaseProblem(
            f"cannot reach the schedule database {database}: {driver_message(exc)}"
        )
    if isinstance(exc, sa.exc.DBAPIError):
        return DatabaseProblem(
            f"the schedule database {database} refused the operation: {driver_message(exc)}"
        )
    if isinstance(exc, sa.exc.ArgumentError):
        return CommandError(f"dbeat_database_url={database!r}: {exc}")
    return None


class DBeatCommand(click.Command):
    """A command whose expected failures end as one line on stderr with a meaningful exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException:
            raise
        except Exception as exc:
            state = ctx.meta.get(_RUNTIME)
            database = state.masked_url if isinstance(state, Runtime) and state.loaded else None
            error = translate(exc, database)
            if error is None:
                raise
            raise error from None


class DBeatGroup(click.Group):
    command_class = DBeatCommand


# The app, its settings and its database ------------------------------------------------------

_RUNTIME = "celery_dbeat.cli.runtime"


@dataclass
class Runtime:
    """The Celery app the command runs for, and what it needs from it, loaded on first use."""

    app: Any
    _settings: Settings | None = field(default=None, repr=False)

    @property
    def loaded(self) -> bool:
        return self._settings is not None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = Settings.from_app(self.app)
        return self._settings

    @property
    def masked_url(self) -> str:
        return mask_url(self.settings.database_url)

    @contextmanager
    def schedules(
        self, *, check: bool = True, surface: Surface = Surface.CLI
    ) -> Iterator[Schedules]:
        """The management API on the app's database (its writes wake the app's beats, and are
        audited as ``--actor`` or the OS user, through ``surface``); with ``check``, refuse a
        schema that is missing or unknown (one line, not "no such table")."""
        _ = self.settings  # first: a bad setting fails naming its key; errors name the URL
        name = click.get_current_context().meta.get(_ACTOR) or os_user()
        actor = Actor(name, surface.value)  # a bad --actor: one line, before any connection
        try:
            schedules = Schedules.from_app(self.app)
        except ImportError as exc:  # redis, for dbeat_redis_url: the message names the extra
            raise CommandError(str(exc)) from None
        schedules.actor = actor
        try:
            if check:
                check_schema(schedules.store.engine, app_argument(self.app))
            # Each command says it itself (a warning: line, its report, its JSON): once.
            with schedules.quiet_about_unknown_tasks():
                yield schedules
        finally:
            schedules.close()


_ACTOR = "celery_dbeat.cli.actor"


def _remember_actor(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.meta[_ACTOR] = value


#: ``--actor NAME`` on the commands that write: who the audit trail records (default: the OS
#: user).
actor_option = click.option(
    "--actor",
    metavar="NAME",
    expose_value=False,
    callback=_remember_actor,
    help="Who the audit trail records as making this change (default: the OS user).",
)


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def runtime() -> Runtime:
    """The current command's :class:`Runtime`, built from Celery's ``CLIContext`` (``ctx.obj``)."""
    ctx = click.get_current_context()
    state = ctx.meta.get(_RUNTIME)
    if isinstance(state, Runtime):
        return state
    app = getattr(ctx.obj, "app", None)
    if app is None:
        raise click.UsageError("run it as `celery -A proj dbeat ...`: no Celery app was given")
    state = ctx.meta[_RUNTIME] = Runtime(app)
    return state


# Output ----------------------------------------------------------------------------------------


def age_text(delta: timedelta) -> str:
    """How long ago: ``3s ago``, ``2m5s ago``, ``1h20m ago``, ``2d3h ago`` (or ``in ...``)."""
    seconds = round(abs(delta.total_seconds()))
    for size, step in ((86_400, 3_600), (3_600, 60)):
        if seconds >= size:
            seconds = round(seconds / step) * step
            break
    text = seconds_text(seconds)
    return f"in {text}" if delta < timedelta(0) else f"{text} ago"


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return iso(value) or "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return escaped(str(value))


def echo_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    empty: str = "",
    width: int | None = None,
) -> None:
    """Aligned columns; the last column is not padded, and is shortened (with an ellipsis) so
    that each line is at most ``width`` characters, keeping at least 10 of it."""
    text_rows = [[cell(v) for v in row] for row in rows]
    if not text_rows:
        if empty:
            click.echo(empty)
        return
    widths = [max(len(h), *(len(r[i]) for r in text_rows)) for i, h in enumerate(headers)]
    room = None if width is None else max(width - sum(w + 2 for w in widths[:-1]), 10)
    for row in [list(headers), *text_rows]:
        last = row[-1]
        if room is not None and len(last) > room:
            last = last[: room - 1] + "…"
        line = "  ".join(v.ljust(w) for v, w in zip(row[:-1], widths[:-1], strict=True))
        click.echo(f"{line}  {last}" if len(row) > 1 else last)


def shorten(text: str | None, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters (with an ellipsis)."""
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def warn_unknown_tasks(
    app: Any, definitions: Iterable[Definition], *, err: bool = True
) -> Mapping[str, str]:
    """Print ``warning: ...`` about the definitions whose task ``app`` does not register (on
    stderr, or with ``err=False`` on stdout as part of a report); returns ``{schedule: task}``."""
    unknown = unknown_tasks(app, definitions)
    if unknown:
        click.echo(f"warning: {app_task_warning(app, unknown.values())}", err=err)
    return unknown


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def is_terminal() -> bool:
    return sys.stdout.isatty()


@contextmanager
def progress(length: int, label: str) -> Iterator[Callable[[int], object] | None]:
    """On a terminal, a progress bar of ``length`` steps, advanced by the callable given;
    ``None`` otherwise (or for less than two steps)."""
    if not is_terminal() or length < 2:
        yield None
        return
    with click.progressbar(length=length, label=label, file=sys.stderr) as bar:
        yield bar.update


def instant(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    """A click callback: an ISO-8601 instant with an offset (``Z`` allowed), as an aware
    datetime."""
    if value is None:
        return None
    try:
        return parse_instant(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
