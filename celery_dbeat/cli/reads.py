"""Commands that read schedules: list, show, history, preview (``--load``: the next 24 hours of
every schedule, drawn in text, as JSON or as SVG; ``--dst``: the slots DST changes touch in the
next year), explain (why a slot did or did not fire). Each is a thin call of
:class:`celery_dbeat.api.Schedules`."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import click

from ..api import DstNote, FireInfo, preview_spec_slots, spec_dst_notes
from ..clock import SystemClock
from ..core.definitions import definition_from_form
from ..core.errors import ValidationError
from ..core.formats import parse_instant
from ..core.loadchart import as_json as load_json
from ..core.loadchart import svg, text
from ..core.specs import DAYS_ALL, Spec
from ..core.states import state_note
from ._common import (
    DBeatCommand,
    echo_json,
    echo_table,
    instant,
    iso,
    json_option,
    runtime,
    seconds_text,
    shorten,
)
from ._forms import KIND_OF_OPTION, edit_form, schedule_json, spec_of, spec_options, spec_text

__all__ = ["explain", "history", "list_", "preview", "show"]

_YEAR = timedelta(days=365)


@click.command("list", cls=DBeatCommand)
@click.option("--enabled/--paused", "enabled", default=None, help="Only enabled or paused ones.")
@click.option("--search", metavar="TEXT", help="Only names or tasks containing TEXT.")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many.")
@json_option
def list_(enabled: bool | None, search: str | None, limit: int | None, as_json: bool) -> None:
    """List schedules, by name."""
    with runtime().schedules() as schedules:
        infos = schedules.list(enabled=enabled, search=search, limit=limit)
    if as_json:
        echo_json([schedule_json(info) for info in infos])
        return
    echo_table(
        ["NAME", "TASK", "SCHEDULE", "STATE", "NEXT RUN (UTC)", "NOTE"],
        (
            [i.name, i.task, spec_text(i), i.state, i.next_run, shorten(state_note(i), 60) or None]
            for i in infos
        ),
        empty="no schedules",
    )


@click.command(cls=DBeatCommand)
@click.argument("name")
@json_option
def show(name: str, as_json: bool) -> None:
    """Show every field and the state of schedule NAME."""
    with runtime().schedules() as schedules:
        info = schedules.get(name)
    data = schedule_json(info)
    if as_json:
        echo_json(data)
        return
    for key in ("every", "misfire_grace", "jitter", "max_run_time"):
        data[key] = seconds_text(data[key])
    for key in ("args", "kwargs", "options"):
        if isinstance(data[key], (dict, list)):  # as people write it: Grüße, not Gr\u00fc\u00dfe
            data[key] = json.dumps(data[key], sort_keys=True, ensure_ascii=False)
    if data["cron_days"] == "all":
        data["cron_days"] = f"all: {DAYS_ALL} (cron(8)'s default, any, matches either)"
    if info.next_run is None and info.next_run_at is not None:
        data["next_run_at"] = f"- (stored {data['next_run_at']}; {info.state})"
    rows = [[k, v] for k, v in data.items()]
    rows.insert(2, ["schedule", spec_text(info)])
    echo_table(["FIELD", "VALUE"], rows)


def _seconds(delta: timedelta | None) -> float | None:
    return None if delta is None else delta.total_seconds()


def fire_json(fire: FireInfo) -> dict[str, Any]:
    return {
        "slot": iso(fire.slot),
        "manual": fire.manual,
        "origin": fire.origin,
        "status": fire.status,
        "outcome": fire.outcome,
        "slot_count": fire.slot_count,
        "first_slot": iso(fire.first_slot),
        "task_id": fire.task_id,
        "beat": fire.beat,
        "recorded_at": iso(fire.recorded_at),
        "sent_at": iso(fire.sent_at),
        "lag_seconds": _seconds(fire.lag),
        "attempts": fire.attempts,
        "error": fire.error,
        "run_status": fire.run_status,
        "started_at": iso(fire.started_at),
        "finished_at": iso(fire.finished_at),
        "run_seconds": _seconds(fire.run_duration),
        "worker": fire.worker,
        "run_error": fire.run_error,
    }


def _to_second(value: datetime | None) -> datetime | None:
    """Tables show instants to the second; the lag and run time columns carry the rest."""
    return None if value is None else value.replace(microsecond=0)


#: ``history`` fits a terminal this wide, but with ``--wide``.
HISTORY_WIDTH = 100
_BEAT_WIDTH = 14


@click.command(cls=DBeatCommand)
@click.argument("name")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option(
    "--wide", is_flag=True, help="Every column (sent time, task id, start, worker), unshortened."
)
@json_option
def history(name: str, limit: int, wide: bool, as_json: bool) -> None:
    """Show the newest fires of schedule NAME, newest first.

    \b
    STATUS is beat's part: pending, sent, skipped, dropped, failed (never published), overlap
    (not sent: the previous run was still going) or buffered. RUN is the worker's part, with
    the worker hook on (celery_dbeat.beat.worker): started, retried, succeeded, failed or revoked.
    The table fits 100 columns; --wide adds the rest, --json has everything.
    """
    with runtime().schedules() as schedules:
        fires = schedules.history(name, limit=limit)
    if as_json:
        echo_json([fire_json(fire) for fire in fires])
        return
    empty = f"no fires recorded for {name!r} yet"
    if not wide:
        echo_table(
            ["SLOT (UTC)", "KIND", "STATUS", "LAG", "BEAT", "RUN", "RAN", "NOTE"],
            [
                [
                    _to_second(f.slot),
                    "manual" if f.manual else "slot",
                    f.status,
                    seconds_text(_round(f.lag)),
                    shorten(f.beat, _BEAT_WIDTH) if f.beat else None,
                    f.run_status,
                    seconds_text(_round(f.run_duration)),
                    _note(f, wide=False),
                ]
                for f in fires
            ],
            empty=empty,
            width=HISTORY_WIDTH,
        )
        return
    echo_table(
        [
            "SLOT (UTC)",
            "KIND",
            "STATUS",
            "SENT (UTC)",
            "LAG",
            "BEAT",
            "TASK ID",
            "RUN",
            "STARTED (UTC)",
            "RAN",
            "WORKER",
            "NOTE",
        ],
        [
            [
                f.slot,
                "manual" if f.manual else "slot",
                f.status,
                _to_second(f.sent_at),
                seconds_text(_round(f.lag)),
                f.beat,
                f.task_id,
                f.run_status,
                _to_second(f.started_at),
                seconds_text(_round(f.run_duration)),
                f.worker,
                _note(f, wide=True),
            ]
            for f in fires
        ],
        empty=empty,
    )


def _note(fire: FireInfo, *, wide: bool) -> str | None:
    """A backfill's fire, the slots a row stands for (a queued run, skipped or dropped slots),
    beat's error, the run's error."""
    slots = ""
    if fire.slot_count > 1:
        slots = f"{fire.slot_count} slots"
        if wide:
            slots += f" from {iso(fire.first_slot)}"
    origin = "backfill" if fire.origin else ""
    errors = [shorten(fire.error, 80), shorten(fire.run_error, 80)]
    return " ".join(filter(None, [origin, slots, *errors])) or None


def _round(delta: timedelta | None) -> float | None:
    """Seconds to the millisecond: enough for a lag or a run time read by a person."""
    return None if delta is None else round(delta.total_seconds(), 3)


#: The options of an ad-hoc spec.
_ADHOC = "/".join(f"--{option}" for option in KIND_OF_OPTION)


@click.command(cls=DBeatCommand)
@click.argument("name", required=False)
@spec_options
@click.option("--start-at", metavar="INSTANT", help="Ad-hoc spec: first instant a slot may have.")
@click.option("--end-at", metavar="INSTANT", help="Ad-hoc spec: last instant a slot may have.")
@click.option(
    "--after",
    metavar="INSTANT",
    callback=instant,
    help="Slots strictly after this instant (default: now).",
)
@click.option("--count", type=int, default=5, show_default=True, help="How many slots.")
@click.option("-v", "--verbose", is_flag=True, help="Add the local time in the schedule's zone.")
@click.option(
    "--dst",
    "dst",
    is_flag=True,
    help="Every slot a DST change moves (a wall time that did not exist) or repeats (a wall"
    " time that happened twice) in the year after --after, and where it fires.",
)
@click.option(
    "--load",
    "load",
    is_flag=True,
    help="Fires per minute of every schedule over the next 24 hours (from --after), the herds"
    " and who makes them, and the last day's lag and failed runs.",
)
@click.option(
    "--per",
    type=click.Choice(["10", "60"]),
    default="60",
    show_default=True,
    help="--load: minutes per histogram line.",
)
@click.option(
    "--top", type=click.IntRange(0, 100), default=5, show_default=True, help="--load: herds shown."
)
@click.option(
    "--svg",
    "svg_file",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="--load: write the picture to this SVG file.",
)
@json_option
def preview(
    name: str | None,
    after: datetime | None,
    count: int,
    verbose: bool,
    dst: bool,
    load: bool,
    per: str,
    top: int,
    svg_file: Path | None,
    as_json: bool,
    **given: Any,
) -> None:
    """Print the next slots of schedule NAME, or of an ad-hoc spec (--cron/--rrule/--every/--at),
    one UTC instant per line, each slot a DST change moved or repeated marked with where it
    fires; with --dst, every such slot in the next year; with --load, the next 24 hours of every
    schedule."""
    adhoc = {k: v for k, v in given.items() if v is not None}
    if load:
        if name is not None or adhoc:
            raise click.UsageError("--load previews every schedule: give no NAME or spec")
        _show_load(after, per=int(per), top=top, svg_file=svg_file, as_json=as_json)
        return
    if svg_file is not None:
        raise click.UsageError("--svg draws the load: give --load too")
    state = runtime()
    if name is not None and adhoc:
        raise click.UsageError(f"give NAME or an ad-hoc spec ({_ADHOC}), not both")
    if name is None:
        if not any(option in adhoc for option in KIND_OF_OPTION):
            raise click.UsageError(f"give NAME or an ad-hoc spec ({_ADHOC})")
        definition = definition_from_form(edit_form({"name": "preview", "task": "preview"}, adhoc))
        typed = spec_of(definition)
        spec: Spec | None = typed
        start = after or SystemClock().now()
        bounds = {"start_at": definition.start_at, "end_at": definition.end_at}
        if dst:
            _show_dst(spec_dst_notes(typed, after=start, until=start + _YEAR, **bounds), as_json)
            return
        shown = preview_spec_slots(typed, count=count, after=start, **bounds)
    else:
        with state.schedules() as schedules:
            if dst:
                _show_dst(schedules.dst_notes(name, after=after), as_json)
                return
            spec = schedules.get(name).schedule
            shown = schedules.preview(name, count=count, after=after)
    zone = ZoneInfo((spec.fields().get("timezone") if spec is not None else None) or "UTC")
    if as_json:
        echo_json(
            [
                {
                    "slot": iso(p.slot),
                    "local": p.slot.astimezone(zone).isoformat(),
                    "timezone": zone.key,
                    **({"excluded_by": p.excluded_by} if p.excluded_by is not None else {}),
                    **({"dst": [note.text for note in p.dst]} if p.dst else {}),
                }
                for p in shown
            ]
        )
        return
    for p in shown:
        local = p.slot.astimezone(zone)
        line = (
            f"{iso(p.slot)}  {local.isoformat()} {local.tzname()}" if verbose else f"{iso(p.slot)}"
        )
        if p.excluded_by is not None:
            line += f"  excluded by calendar {p.excluded_by} (not sent)"
        for note in p.dst:
            line += f"  DST: {note.mark(p.slot)}"
        click.echo(line)


def dst_json(note: DstNote) -> dict[str, Any]:
    return {
        "kind": note.kind.value,
        "wall": note.wall.isoformat(),
        "timezone": note.zone,
        "change": iso(note.change),
        "fires": [iso(f) for f in note.fires],
        "occurrences": [iso(o) for o in note.occurrences],
        "policy": note.policy,
        "text": note.text,
    }


def _show_dst(notes: list[DstNote], as_json: bool) -> None:
    if as_json:
        echo_json([dst_json(note) for note in notes])
        return
    if not notes:
        click.echo("no slot is moved or repeated by a DST change in the next year")
    for note in notes:
        click.echo(f"{iso(note.at)}  {note.text}")


@click.command(cls=DBeatCommand)
@click.argument("name")
@click.option(
    "--slot",
    metavar="INSTANT",
    help="The slot to explain (default: the latest slot up to now, or the next one).",
)
@json_option
def explain(name: str, slot: str | None, as_json: bool) -> None:
    """Say why a slot of schedule NAME did or did not fire: sent (by which beat, with what lag),
    not yet due, excluded by a calendar, outside the bounds, past max_runs, skipped or dropped
    by the misfire policy (in which outage), held by the overlap policy, paused (by whom),
    set aside in error, moved by jitter or a DST change, or not a slot at all (the nearest
    ones). Without --slot, the latest slot up to now (or the next, if none passed yet)."""
    asked = None
    if slot is not None:
        try:
            asked = parse_instant(slot)
        except ValueError as exc:
            raise ValidationError("slot", slot, str(exc)) from None
    with runtime().schedules() as schedules:
        said = schedules.explain(name, slot=asked)
    if as_json:
        echo_json(said.as_json())
        return
    which = {"latest": " (its latest slot up to now)", "next": " (none passed yet: its next)"}
    click.echo(f"{name} {iso(said.slot)}{which.get(said.chosen, '')}: {said.verdict.value}")
    click.echo(said.sentence)


def _show_load(
    start: datetime | None, *, per: int, top: int, svg_file: Path | None, as_json: bool
) -> None:
    with runtime().schedules() as schedules:
        load = schedules.load(start=start, top=top)
    if svg_file is not None:
        try:
            svg_file.write_text(svg(load), encoding="utf-8")
        except OSError as exc:
            raise click.ClickException(
                f"--svg: cannot write {str(svg_file)!r}: {exc.strerror or exc}"
            ) from None
    if as_json:
        echo_json(load_json(load))
    elif svg_file is None:
        click.echo(text(load, per=per))
    else:
        click.echo(f"wrote {svg_file}: {len(load.herds)} herd(s) in {load.total:,.0f} fires")
