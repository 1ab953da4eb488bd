"""Commands on the whole database: migrate, sync (``beat_schedule`` -> database) and status."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from datetime import datetime
from typing import Any

import click

from ..api import BeatInfo, ScheduleInfo
from ..beat_schedule import check_entries, definitions_from_app
from ..checks import Level, app_argument, redis_unavailable, run_checks
from ..clock import SystemClock
from ..config import mask_url
from ..core.audit import Surface
from ..store.database import check_schema
from ..store.database import migrate as migrate_schema
from ..task_names import unknown_tasks
from ._common import (
    EXIT_INPUT,
    CommandError,
    DBeatCommand,
    actor_option,
    age_text,
    echo_json,
    echo_table,
    is_terminal,
    iso,
    json_option,
    runtime,
    seconds_text,
    shorten,
    warn_unknown_tasks,
)

__all__ = ["check", "migrate", "status", "sync"]

#: Unhealthy schedules listed by the text output (``--json`` gives all).
UNHEALTHY_SHOWN = 20


@click.command(cls=DBeatCommand)
@click.option(
    "--check", is_flag=True, help="Only check that the schema is current (exit 4 if it is not)."
)
def migrate(check: bool) -> None:
    """Create or upgrade the celery-dbeat tables (beat does it at start-up by default)."""
    state = runtime()
    with state.schedules(check=False) as schedules:
        engine = schedules.store.engine
        if check:
            revision = check_schema(engine, app_argument(state.app))
            click.echo(f"schema of {state.masked_url} is current (revision {revision})")
            return
        if is_terminal():
            click.echo(f"upgrading the schema of {state.masked_url} ...", err=True)
        revision = migrate_schema(engine)
    click.echo(f"schema of {state.masked_url} is at revision {revision} (current)")


@click.command(cls=DBeatCommand)
@click.option(
    "--dry-run", is_flag=True, help="Say what would change (and each name), change nothing."
)
@json_option
@actor_option
def sync(dry_run: bool, as_json: bool) -> None:
    """Copy the app's beat_schedule into the database, as beat does at start-up.

    Entries are created or updated by name (an unchanged entry is not touched); schedules that
    left beat_schedule are disabled, never deleted with their history. An edit made elsewhere
    (CLI, admin) to a schedule from beat_schedule is undone: --dry-run lists them first.
    """
    state = runtime()
    definitions = definitions_from_app(state.app)
    with state.schedules(surface=Surface.SYNC) as schedules:  # the OS user, or --actor
        if is_terminal() and len(definitions) > 100:
            click.echo(f"syncing {len(definitions)} entries ...", err=True)
        report = schedules.apply(
            definitions, origin="config", disable_missing=True, dry_run=dry_run
        )
    if as_json:
        unknown = unknown_tasks(state.app, definitions)
        echo_json({**asdict(report), "dry_run": dry_run, "unknown_tasks": unknown})
        if report.refused:
            raise SystemExit(EXIT_INPUT)
        return
    counts = ", ".join(
        f"{key} {len(getattr(report, key))}"
        for key in ("created", "updated", "unchanged", "disabled")
    )
    if dry_run:
        click.echo(f"would sync {len(definitions)} beat_schedule entries: {counts}")
        for key in ("created", "updated", "disabled"):
            for name in getattr(report, key):
                click.echo(f"  would be {key}: {name}")
    else:
        click.echo(f"synced {len(definitions)} beat_schedule entries: {counts}")
    if report.conflicts:
        click.echo(
            "not synced, the name belongs to a schedule made outside beat_schedule: "
            + ", ".join(report.conflicts),
            err=True,
        )
    for name, why in report.refused.items():
        click.echo(f"not synced, the database refused it: {name}: {why}", err=True)
    warn_unknown_tasks(state.app, definitions)
    if report.refused:
        raise SystemExit(EXIT_INPUT)  # the others are synced: said above, entry by entry


@click.command(cls=DBeatCommand)
@click.option("--next", "next_count", type=click.IntRange(min=0), default=5, show_default=True,
              help="How many upcoming fires to show.")  # fmt: skip
@json_option
def status(next_count: int, as_json: bool) -> None:
    """Live beats, the due backlog, the next fires, the schedules in error and the unhealthy
    ones: whose last run failed, or that have not succeeded within two periods.

    A beat is live when its heartbeat is at most 3 x dbeat_max_interval old. Run health needs
    the worker hook (celery_dbeat.beat.worker); without it only fires never published are listed.
    """
    state = runtime()
    with state.schedules() as schedules:
        live_within = schedules.live_within  # the rule of Schedules.live_beats
        now = schedules.clock.now()
        beats = schedules.beats()
        states = schedules.counts()
        paused_by = schedules.paused_counts()
        backlog_count = schedules.count_due(now=now)
        backlog = schedules.due(now=now, limit=10)
        queued, oldest_queued = schedules.queued()
        upcoming = schedules.upcoming(next_count, now=now)
        failing = schedules.failing()
        in_alert = schedules.in_alert()
        unhealthy = schedules.unhealthy(now=now)
    beat_rows = [
        {
            "name": b.name,
            "hostname": b.hostname,
            "pid": b.pid,
            "version": b.version,
            "started_at": iso(b.started_at),
            "last_seen_at": iso(b.last_seen_at),
            "age_seconds": round((now - b.last_seen_at).total_seconds(), 3),
            "live": now - b.last_seen_at <= live_within,
        }
        for b in beats
    ]

    oldest_due = backlog[0].next_run_at if backlog else None
    behind = None if oldest_due is None else round((now - oldest_due).total_seconds(), 3)

    def brief(info: ScheduleInfo) -> dict[str, Any]:
        return {"name": info.name, "task": info.task, "next_run_at": iso(info.next_run_at)}

    data = {
        "database": state.masked_url,
        "now": iso(now),
        "live_within_seconds": live_within.total_seconds(),
        "live_beats": sum(1 for b in beat_rows if b["live"]),
        "beats": beat_rows,
        "schedules": {"total": sum(states.values()), **states},
        # What paused the paused schedules: person, config, failures (pause_after_failures).
        "paused_by": paused_by,
        "backlog": {
            "count": backlog_count,
            "oldest_next_run_at": iso(backlog[0].next_run_at) if backlog else None,
            # How late the oldest on-time fire still due is: beats behind, or none running.
            "behind_seconds": behind,
            "schedules": [brief(info) for info in backlog],
        },
        "queued": {"count": queued, "oldest_slot": iso(oldest_queued)},
        "next_fires": [brief(info) for info in upcoming],
        "errors": [{"name": i.name, "task": i.task, "last_error": i.last_error} for i in failing],
        "unhealthy": [
            {
                "name": h.name,
                "task": h.task,
                "state": h.state,
                "reason": h.reason,
                "last_slot": iso(h.last_slot),
                "last_finished_at": iso(h.last_finished_at),
                "last_success_at": iso(h.last_success_at),
                "period_seconds": None if h.period is None else h.period.total_seconds(),
                "task_id": h.task_id,
                "error": h.error,
            }
            for h in unhealthy
        ],
    }
    # Schedules in alert (alert_after_failures, alert_deadline) until their next success.
    data["in_alert"] = [
        {"name": i.name, "task": i.task, "kind": i.alert_kind, "episode": iso(i.alert_episode)}
        for i in in_alert
    ]
    if as_json:
        echo_json(data)
        return
    _print_status(data, beats, now)


def _print_status(data: dict[str, Any], beats: list[BeatInfo], now: datetime) -> None:
    silent = len(beats) - data["live_beats"]
    window = seconds_text(data["live_within_seconds"])
    counts = data["schedules"]
    backlog = data["backlog"]
    click.echo(f"database   {data['database']}")
    click.echo(f"now        {data['now']}")
    click.echo(
        f"beats      {data['live_beats']} live, {silent} silent (live: seen within {window})"
    )
    echo_table(
        ["  NAME", "HOST", "PID", "VERSION", "STARTED (UTC)", "LAST SEEN", "STATE"],
        (
            [f"  {b.name}", b.hostname, b.pid, b.version, b.started_at,
             age_text(now - b.last_seen_at), "live" if row["live"] else "silent"]
            for b, row in zip(beats, data["beats"], strict=True)
        ),
    )  # fmt: skip
    failures = data["paused_by"]["failures"]
    after = f" ({failures} after failed runs)" if failures else ""
    click.echo(
        f"schedules  {counts['total']}: {counts['active']} active, {counts['paused']} paused"
        f"{after}, {counts['finished']} finished, {counts['error']} in error"
    )
    oldest = backlog["oldest_next_run_at"]
    behind = backlog["behind_seconds"]
    click.echo(
        f"backlog    {backlog['count']} due"
        + (f", oldest since {oldest} ({seconds_text(round(behind, 1))} behind)" if oldest else "")
    )
    queued = data["queued"]
    if queued["count"]:
        click.echo(
            f"queued     {queued['count']} catch-up fire(s), oldest slot {queued['oldest_slot']}:"
            " sent with the capacity on-time fires leave"
        )
    rows = [[f"  {s['next_run_at']}", s["name"], s["task"]] for s in data["next_fires"]]
    if rows:
        click.echo("next fires")
        echo_table(["  NEXT RUN (UTC)", "NAME", "TASK"], rows)
    if data["errors"]:
        click.echo("errors")
        echo_table(
            ["  NAME", "LAST ERROR"],
            ([f"  {e['name']}", shorten(e["last_error"], 100)] for e in data["errors"]),
        )
    alerting = data["in_alert"]
    if alerting:  # only when there are: most apps set no alerts
        click.echo(f"alerts     {len(alerting)} schedule(s) in alert")
        echo_table(
            ["  NAME", "KIND", "SINCE SLOT (UTC)", "TASK"],
            ([f"  {a['name']}", a["kind"], a["episode"], a["task"]] for a in alerting),
        )
    unhealthy = data["unhealthy"]
    counts_by_reason = Counter(h["reason"] for h in unhealthy)
    summary = ", ".join(f"{n} {reason}" for reason, n in sorted(counts_by_reason.items()))
    click.echo(f"runs       {len(unhealthy)} unhealthy" + (f": {summary}" if summary else ""))
    if unhealthy:
        echo_table(
            ["  NAME", "STATE", "REASON", "LAST SLOT (UTC)", "LAST SUCCESS (UTC)", "ERROR"],
            (
                [f"  {h['name']}", h["state"], h["reason"],
                 None if h["reason"] == "overdue" else _to_second(h["last_slot"]),
                 _to_second(h["last_success_at"]), shorten(h["error"], 100) if h["error"] else None]
                for h in unhealthy[:UNHEALTHY_SHOWN]
            ),
        )  # fmt: skip
        if len(unhealthy) > UNHEALTHY_SHOWN:
            click.echo(f"  ... and {len(unhealthy) - UNHEALTHY_SHOWN} more (--json lists all)")


def _to_second(text: str | None) -> str | None:
    """An ISO instant of ``iso()`` without its microseconds, for tables."""
    if text is None or "." not in text:
        return text
    return text.split(".", 1)[0] + "Z"


@click.command(cls=DBeatCommand)
@json_option
@click.option(
    "--offline",
    is_flag=True,
    help="Check the app's beat_schedule only, with no database, broker or Redis (for CI).",
)
def check(as_json: bool, offline: bool) -> None:
    """Check settings, schema, database and Redis for what would weaken a promise.

    Prints every finding; exits 1 if one is an error (warnings do not fail): an unknown schema,
    a Redis that refuses the credentials or the commands beats send. An unreachable Redis is a
    warning, as it is for beats (they claim through the database until it is back).

    With --offline, checks each beat_schedule entry as a starting beat would take it, and
    touches no service: it parses (its options too, its serializer among the workers'
    accept_content), the app registers its task, its spec yields a slot; prints each entry's
    next three slots. Exits 1 if an entry has a problem.
    """
    if offline:
        _check_offline(as_json)
        return
    state = runtime()
    settings = state.settings
    redis_client, unreachable = None, []
    if settings.redis_url:
        try:
            from ..redis_client import UNAVAILABLE, close_client, create_client
        except ImportError:
            raise CommandError("checking Redis needs: pip install 'celery-dbeat[redis]'") from None
        try:
            redis_client = create_client(
                settings.redis_url,
                settings.redis_options,
                socket_timeout=2,
                socket_connect_timeout=2,
            )
        except UNAVAILABLE as exc:  # a cluster client reads the slot map when it is built
            unreachable.append(redis_unavailable(mask_url(settings.redis_url), exc))
    try:
        with state.schedules(check=False) as schedules:
            findings = run_checks(
                settings, schedules.store.engine, redis_client, app=app_argument(state.app)
            )
            findings += unreachable
    finally:
        if redis_client is not None:
            close_client(redis_client)
    if as_json:
        echo_json(
            [{"level": f.level.value, "topic": f.topic, "message": f.message} for f in findings]
        )
    else:
        for finding in findings:
            click.echo(f"{finding.level.value:<7} {finding.topic:<8} {finding.message}")
    if any(f.level is Level.ERROR for f in findings):
        raise CommandError("some checks failed")


def _check_offline(as_json: bool) -> None:
    checks = check_entries(runtime().app, SystemClock().now())
    if as_json:
        echo_json(
            [
                {
                    "name": c.name,
                    "task": c.task,
                    "ok": not c.problems,
                    "problems": list(c.problems),
                    "next_slots": [iso(slot) for slot in c.next_slots],
                }
                for c in checks
            ]
        )
    else:
        for c in checks:
            slots = ", ".join(iso(slot) for slot in c.next_slots)
            click.echo(f"{'ok' if not c.problems else 'error':<7} {c.name}: next {slots or '-'}")
            for problem in c.problems:
                click.echo(f"{'':<7} {problem}")
        if not checks:
            click.echo("beat_schedule is empty")
    failed = [c.name for c in checks if c.problems]
    if failed:
        raise CommandError(f"{len(failed)} of {len(checks)} beat_schedule entries have problems")
