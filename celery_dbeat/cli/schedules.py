"""Commands that change a schedule: add, update, remove, pause, resume, trigger (its reads are
in :mod:`.reads`). Each is a thin call of :class:`celery_dbeat.api.Schedules`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..api import ScheduleInfo
from ..core.errors import ConfigOwned
from ._common import (
    CommandError,
    DBeatCommand,
    actor_option,
    echo_json,
    iso,
    json_option,
    runtime,
    seconds_text,
    warn_unknown_tasks,
)
from ._forms import (
    KIND_OF_OPTION,
    build,
    edit_form,
    field_options,
    form_of,
    spec_options,
    spec_text,
)

__all__ = ["add", "pause", "remove", "resume", "trigger", "update"]

force_option = click.option(
    "--force",
    is_flag=True,
    help="Also a schedule from beat_schedule, until the next beat start or `dbeat sync`.",
)


@contextmanager
def _unless_forced() -> Iterator[None]:
    """The API's refusal of a write to a schedule from beat_schedule (ConfigOwned), naming the
    CLI's way to force it."""
    try:
        yield
    except ConfigOwned as exc:
        raise CommandError(exc.told("pass --force")) from None


def _definition(info: ScheduleInfo) -> dict[str, Any]:
    """What a sync of beat_schedule puts back: every field but ``enabled``."""
    return {key: value for key, value in form_of(info).items() if key != "enabled"}


def _summary(verb: str, info: ScheduleInfo) -> str:
    when = f", next run {iso(info.next_run)}" if info.next_run is not None else ""
    note = f" ({info.pause_note})" if info.pause_note and not info.enabled else ""
    return f"{verb} {info.name!r}: {spec_text(info)}; {info.state}{note}{when}"


# Writes ----------------------------------------------------------------------------------------


@click.command(cls=DBeatCommand)
@actor_option
@click.argument("name")
@click.argument("task")
@spec_options
@field_options
@click.option("--disabled", is_flag=True, help="Create it paused.")
def add(
    name: str, task: str, disabled: bool, queue: str | None, priority: int | None, **given: Any
) -> None:
    """Create schedule NAME that sends TASK.

    Give exactly one of --cron, --rrule, --every or --at. Durations: 30s, 5m, 1h30m; instants:
    ISO-8601 with an offset (2025-01-31T09:00:00+01:00 or ...Z); JSON options as JSON text. A
    TASK the app does not register (after importing its task modules) is stored with a warning:
    it may be defined only in the workers' code.
    """
    if not any(given.get(option) is not None for option in KIND_OF_OPTION):
        raise click.UsageError("give one of --cron, --rrule, --every or --at")
    form = edit_form({"name": name, "task": task, "enabled": not disabled}, given)
    definition = build(form, queue=queue, priority=priority)
    state = runtime()
    with state.schedules() as schedules:
        info = schedules.create(definition)
    click.echo(_summary("added", info))
    warn_unknown_tasks(state.app, [definition])


@click.command(cls=DBeatCommand)
@actor_option
@click.argument("name")
@click.option("--task", help="The task to send.")
@spec_options
@field_options
@click.option(
    "--enabled/--disabled", default=None, help="Resume (no catch-up) or pause it as well."
)
@force_option
def update(
    name: str,
    task: str | None,
    enabled: bool | None,
    queue: str | None,
    priority: int | None,
    force: bool,
    **given: Any,
) -> None:
    """Change some fields of schedule NAME; the others keep their value.

    A change of timing (spec, bounds) recomputes the next run from now; any other change keeps
    it. An empty string clears an optional field (--end-at ""). A change to a schedule from
    beat_schedule is refused without --force: the next beat start (or `dbeat sync`) puts its
    definition back. --enabled/--disabled alone (a resume, a pause) is always allowed.
    """
    with runtime().schedules() as schedules:
        before = schedules.get(name)
        form = edit_form(form_of(before), given)
        if task is not None:
            form["task"] = task
        if enabled is not None:
            form["enabled"] = enabled
        definition = build(form, queue=queue, priority=priority)
        with _unless_forced():
            info = schedules.replace(name, definition, force=force)
    changed = info.version != before.version
    click.echo(_summary("updated" if changed else "unchanged", info))
    if before.from_beat_schedule and _definition(info) != _definition(before):
        click.echo(f"warning: {ConfigOwned.forced(name)}", err=True)
    if task is not None:
        warn_unknown_tasks(runtime().app, [definition])


@click.command(cls=DBeatCommand)
@actor_option
@click.argument("name")
@force_option
def remove(name: str, force: bool) -> None:
    """Delete schedule NAME and its fire history.

    A schedule from beat_schedule is refused without --force: the next beat start (or `dbeat
    sync`) creates it again; remove its entry from beat_schedule instead, which disables it and
    keeps its history.
    """
    with runtime().schedules() as schedules:
        before = schedules.get(name)
        with _unless_forced():
            schedules.remove(name, force=force)
    click.echo(f"removed {name!r} and its fire history")
    if before.from_beat_schedule:
        click.echo(f"warning: {ConfigOwned.forced(name, removal=True)}", err=True)


@click.command(cls=DBeatCommand)
@actor_option
@click.argument("name")
@click.option(
    "--note",
    metavar="TEXT",
    help="Who paused it and why (shown until it is resumed; at most 500 characters).",
)
def pause(name: str, note: str | None) -> None:
    """Stop schedule NAME from firing until it is resumed. Pausing a paused schedule with
    --note replaces its note."""
    with runtime().schedules() as schedules:
        click.echo(_summary("paused", schedules.pause(name, note=note)))


@click.command(cls=DBeatCommand)
@actor_option
@click.argument("name")
@click.option(
    "--catch-up",
    is_flag=True,
    help="Send the slots missed while paused, through the schedule's misfire policy.",
)
def resume(name: str, catch_up: bool) -> None:
    """Let schedule NAME fire again, from its next slot after now (unless --catch-up)."""
    with runtime().schedules() as schedules:
        click.echo(_summary("resumed", schedules.resume(name, catch_up=catch_up)))


@click.command(cls=DBeatCommand)
@actor_option
@click.argument("name")
@json_option
def trigger(name: str, as_json: bool) -> None:
    """Fire schedule NAME once now, outside its schedule; prints the task id.

    With no beat running, the fire is recorded all the same and sent when a beat starts; the
    command says so on stderr.
    """
    state = runtime()
    with state.schedules() as schedules:
        task_id = schedules.trigger(name)
        live = schedules.live_beats()
    if as_json:
        echo_json({"name": name, "task_id": task_id, "live_beats": len(live)})
    elif schedules.notifier is not None:  # beats are woken: Redis, or PostgreSQL's NOTIFY
        click.echo(f"triggered {name!r}: task id {task_id}")
    else:
        wait = seconds_text(state.settings.max_interval.total_seconds())
        click.echo(
            f"triggered {name!r}: task id {task_id} (a beat sees it within {wait}; with "
            "dbeat_redis_url set, at once)"
        )
    if not live:
        click.echo(f"warning: {schedules.no_beat_running(f'{name!r} is')}", err=True)
