"""``celery dbeat backfill NAME --from ... --to ...``: queue a past range of slots, say what was
already sent, refuse what it cannot do with one line."""

from __future__ import annotations

import json
from datetime import timedelta

from celery_dbeat.store import Store
from celery_dbeat.store.runs import prune_history
from tests.integration.cli.conftest import Cli, heartbeat, utc_now

HOUR = timedelta(hours=1)


def _hourly(cli: Cli) -> tuple[str, str]:
    """An hourly schedule that started two days ago; the last three hours as --from, --to."""
    now = utc_now().replace(minute=0, second=0, microsecond=0)
    start_at = (now - 2 * timedelta(days=1)).isoformat()
    cli.ok("add", "hourly", "proj.tasks.hourly", "--cron", "0 * * * *", "--start-at", start_at)
    return (now - 3 * HOUR).isoformat(), (now - HOUR).isoformat()


def test_a_backfill_queues_the_range_and_a_second_one_says_nothing_is_left(cli: Cli) -> None:
    start, end = _hourly(cli)
    heartbeat(cli.app.conf.dbeat_database_url, "beat-1", timedelta(seconds=1))

    first = cli.ok("backfill", "hourly", "--from", start, "--to", end)
    second = cli.ok("backfill", "hourly", "--from", start, "--to", end)

    assert first.startswith("queued 3 fire(s) of 'hourly' from ")
    assert "(0 of the 3 slot(s) in the range already sent or on their way)" in first
    assert second == (
        "nothing to backfill: 3 slot(s) of 'hourly' in the range, 3 already sent or on their way\n"
    )
    history = json.loads(cli.ok("history", "hourly", "--json"))
    # The three slots wait as one queued run.
    assert [(f["status"], f["origin"], f["slot_count"]) for f in history] == [
        ("queued", "backfill", 3)
    ]


def test_a_backfill_of_a_pruned_range_sends_nothing_and_says_so_unless_asked_to_resend(
    cli: Cli,
) -> None:
    start, end = _hourly(cli)
    heartbeat(cli.app.conf.dbeat_database_url, "beat-1", timedelta(seconds=1))
    cli.ok("backfill", "hourly", "--from", start, "--to", end)
    store = Store(cli.app.conf.dbeat_database_url, server_clock=False)
    now = utc_now()  # the beats sent them; then their history aged out
    sent = store.claim_queued(now, now + timedelta(seconds=30), 10, "beat-1")
    store.mark_sent([r.task_id for r in sent], now, "beat-1")
    assert prune_history(store.engine, utc_now()) == 3
    store.close()

    again = cli.ok("backfill", "hourly", "--from", start, "--to", end)
    resent = json.loads(
        cli.ok("backfill", "hourly", "--from", start, "--to", end, "--resend", "--json")
    )

    assert again.startswith("nothing to backfill: 3 slot(s) of 'hourly' in the range, 0 already")
    assert f", 3 at or before {end[:19]}Z, whose history was pruned (they may have been" in again
    assert "backfill with resend to send them anyway" in again
    assert (len(resent["queued"]), resent["pruned"], resent["resend"]) == (3, 3, True)
    assert resent["pruned_until"] == f"{end[:19]}Z"


def test_a_dry_run_counts_and_records_nothing(cli: Cli) -> None:
    start, end = _hourly(cli)

    out = json.loads(
        cli.ok("backfill", "hourly", "--from", start, "--to", end, "--dry-run", "--json")
    )

    assert (out["dry_run"], out["slots"], len(out["queued"]), out["already"]) == (True, 3, 3, 0)
    assert (out["paused"], out["calendar"], out["excluded"]) == (False, None, [])
    assert json.loads(cli.ok("history", "hourly", "--json")) == []


def test_a_backfill_of_a_paused_schedule_says_its_fires_wait_for_the_resume(cli: Cli) -> None:
    start, end = _hourly(cli)
    heartbeat(cli.app.conf.dbeat_database_url, "beat-1", timedelta(seconds=1))
    cli.ok("pause", "hourly")

    said = cli.ok("backfill", "hourly", "--from", start, "--to", end)
    out = json.loads(
        cli.ok("backfill", "hourly", "--from", start, "--to", end, "--dry-run", "--json")
    )

    assert said.startswith("queued 3 fire(s) of 'hourly' from ")
    assert said.endswith(
        "; 'hourly' is paused: they wait, and once it is resumed beats send them behind on-time"
        " fires\n"
    )
    assert (out["paused"], out["queued"], out["already"]) == (True, [], 3)


def test_a_backfill_lists_the_slots_the_calendar_excludes(cli: Cli) -> None:
    now = utc_now().replace(hour=10, minute=0, second=0, microsecond=0) - timedelta(days=1)
    days = [now - n * timedelta(days=1) for n in range(6, 0, -1)]
    holiday = days[2].date().isoformat()
    cli.ok("calendar", "add", "bank", "--dates", holiday)
    start_at = (days[0] - timedelta(days=1)).isoformat()
    cli.ok(
        "add", "daily", "proj.tasks.hourly", "--cron", "0 10 * * *", "--start-at", start_at,
        "--calendar", "bank",
    )  # fmt: skip

    out = json.loads(
        cli.ok(
            "backfill", "daily", "--from", days[0].isoformat(), "--to", days[-1].isoformat(),
            "--dry-run", "--json",
        )
    )  # fmt: skip
    said = cli.ok(
        "backfill", "daily", "--from", days[0].isoformat(), "--to", days[-1].isoformat(),
        "--dry-run",
    )  # fmt: skip

    assert (out["slots"], len(out["queued"]), out["calendar"]) == (5, 5, "bank")
    assert out["excluded"] == [f"{days[2].isoformat()[:19]}Z"]
    assert f"1 excluded by calendar 'bank', never sent ({days[2].isoformat()[:19]}Z)" in said


def test_a_range_reaching_into_the_future_or_over_the_limit_is_refused_in_one_line(
    cli: Cli,
) -> None:
    start, _ = _hourly(cli)
    later = (utc_now() + HOUR).isoformat()

    future = cli.fails("backfill", "hourly", "--from", start, "--to", later, code=1)
    limited = cli.fails(
        "backfill", "hourly", "--from", start, "--to", _hourly_end(), "--limit", "2", code=1
    )
    missing = cli.fails("backfill", "nope", "--from", start, "--to", start, code=3)

    assert "is after now" in future
    assert "fire on their own" in future
    assert "holds more than 2 slots (the limit)" in limited
    assert "no schedule named 'nope'" in missing


def test_with_no_beat_running_the_backfill_says_when_it_will_be_sent(cli: Cli) -> None:
    start, end = _hourly(cli)
    result = cli.run("backfill", "hourly", "--from", start, "--to", end)
    assert result.exit_code == 0
    assert "no beat is running" in result.stderr


def _hourly_end() -> str:
    return (utc_now().replace(minute=0, second=0, microsecond=0) - HOUR).isoformat()
