"""``celery -A proj dbeat backfill NAME --from ... --to ...``: send a past range of slots."""

from __future__ import annotations

from datetime import datetime

import click

from ..core.backfill import MAX_BACKFILL
from ._common import DBeatCommand, actor_option, echo_json, instant, iso, runtime

__all__ = ["backfill"]


@click.command(cls=DBeatCommand)
@actor_option
@click.argument("name")
@click.option(
    "--from",
    "start",
    metavar="INSTANT",
    required=True,
    callback=instant,
    help="The first slot's earliest instant (inclusive).",
)
@click.option(
    "--to",
    "end",
    metavar="INSTANT",
    required=True,
    callback=instant,
    help="The last slot's latest instant (inclusive); not after now.",
)
@click.option(
    "--limit",
    type=int,
    default=10_000,
    show_default=True,
    help=f"Refuse a range holding more slots than this (at most {MAX_BACKFILL}).",
)
@click.option("--dry-run", is_flag=True, help="Count the slots; record nothing.")
@click.option(
    "--resend",
    is_flag=True,
    help="Also send the slots whose history was pruned (they may have been sent already).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def backfill(
    name: str,
    start: datetime,
    end: datetime,
    limit: int,
    dry_run: bool,
    resend: bool,
    as_json: bool,
) -> None:
    """Send the slots of schedule NAME between --from and --to that were never sent.

    Each goes out with its usual task id, queued behind on-time fires (beats send them with the
    capacity those leave, at most dbeat_catchup_rate a second each), and shows as "backfill" in
    its history. A slot already sent or on its way is left alone, so backfilling a range twice
    sends nothing the second time. A slot whose fire record the history retention or the
    schedule's history_limit pruned may have been sent: it is left alone too, and said so,
    unless --resend. The slots the schedule's calendar excludes are listed apart and never
    sent. A paused schedule's backfill waits for its resume.
    """
    with runtime().schedules() as schedules:
        report = schedules.backfill(name, start, end, limit=limit, dry_run=dry_run, resend=resend)
        live = [] if dry_run else schedules.live_beats()
    if as_json:
        echo_json(
            {
                "name": report.name,
                "from": iso(report.start),
                "to": iso(report.end),
                "dry_run": report.dry_run,
                "slots": report.slots,
                "queued": [iso(slot) for slot in report.queued],
                "already": report.already,
                "pruned": report.pruned,
                "pruned_until": iso(report.pruned_until),
                "resend": report.resend,
                "calendar": report.calendar,
                "excluded": [iso(slot) for slot in report.excluded],
                "paused": report.paused,
            }
        )
        return
    click.echo(report.summary())
    if not report.queued:
        return
    if not dry_run and not live:
        waiting = f"{name!r}'s backfill is"
        click.echo(f"warning: {schedules.no_beat_running(waiting)}", err=True)
