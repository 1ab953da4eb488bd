"""The CLI's side of run tracking: the overlap options of ``add``/``update``/``show``, the
lifecycle columns of ``history``, and the unhealthy schedules of ``status``."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import FixedClock
from celery_dbeat.config import Settings
from celery_dbeat.core.fires import RunStatus
from celery_dbeat.locks import DatabaseLock
from celery_dbeat.store import Store
from celery_dbeat.store.runs import RunEvent, record_runs
from tests.integration.cli.conftest import Cli, minutes, tick_fires, utc_now
from tests.integration.cli.test_cli import FIRE_KEYS, columns_align


def test_add_update_and_show_carry_the_overlap_policy_and_max_run_time(cli_any: Cli) -> None:
    out = cli_any.ok(
        "add", "sync", "proj.tasks.sync", "--every", "1h",
        "--overlap-policy", "skip", "--max-run-time", "1h30m",
    )  # fmt: skip
    assert out.startswith("added 'sync': every 1h; active")
    shown = json.loads(cli_any.ok("show", "sync", "--json"))
    assert (shown["overlap_policy"], shown["max_run_time"]) == ("skip", 5400.0)

    # An edit of another field keeps them.
    cli_any.ok("update", "sync", "--args", "[1]")
    kept = json.loads(cli_any.ok("show", "sync", "--json"))
    assert (kept["overlap_policy"], kept["max_run_time"], kept["args"]) == ("skip", 5400.0, [1])
    assert kept["next_run_at"] == shown["next_run_at"]

    cli_any.ok("update", "sync", "--overlap-policy", "buffer_one", "--max-run-time", "")
    changed = json.loads(cli_any.ok("show", "sync", "--json"))
    assert (changed["overlap_policy"], changed["max_run_time"]) == ("buffer_one", None)
    assert changed["next_run_at"] == shown["next_run_at"]  # not a timing change


def test_show_prints_the_max_run_time_as_a_duration(cli: Cli) -> None:
    cli.ok(
        "add", "s", "proj.tasks.s", "--every", "1h", "--overlap-policy", "buffer_one",
        "--max-run-time", "5400",
    )  # fmt: skip

    lines = cli.ok("show", "s").splitlines()

    fields = dict(line.split(None, 1) for line in lines[1:])
    assert (fields["overlap_policy"], fields["max_run_time"]) == ("buffer_one", "1h30m")


def test_the_help_of_add_and_update_explains_the_overlap_options(cli: Cli) -> None:
    for command in ("add", "update"):
        text = " ".join(cli.ok(command, "--help").split())
        assert "--overlap-policy POLICY" in text
        assert "allow (default) sends it, skip records it as overlap, buffer_one" in text
        assert "--max-run-time DURATION" in text
        assert "(default dbeat_max_run_time)" in text


def report(url: str, events: list[RunEvent]) -> None:
    """What the worker hook writes."""
    store = Store(url)
    record_runs(store.engine, events)
    store.close()


def beat_fires(cli: Cli, now: datetime) -> list[str]:
    """A minutely schedule created 3.5 minutes before ``now`` that one beat tick fires (its
    misfire policy 'all' sends the three slots); returns the task ids, oldest first."""
    return tick_fires(cli, now - minutes(3.5), now, "all")


def test_history_shows_each_runs_status_start_duration_worker_and_error(cli_any: Cli) -> None:
    now = utc_now()
    ok, bad, running = beat_fires(cli_any, now)
    url = cli_any.app.conf.dbeat_database_url
    started = now + timedelta(seconds=1)
    report(
        url,
        [
                RunEvent(ok, RunStatus.STARTED, started, worker="celery@w1"),
                RunEvent(ok, RunStatus.SUCCEEDED, started + timedelta(seconds=90), runtime=90.0),
                RunEvent(bad, RunStatus.STARTED, started, worker="celery@w2"),
                RunEvent(
                    bad, RunStatus.FAILED, started + timedelta(seconds=2), runtime=1.5,
                    error="ValueError: no report today",
                ),
                RunEvent(running, RunStatus.STARTED, started, worker="celery@w1"),
        ],
    )  # fmt: skip

    fires = json.loads(cli_any.ok("history", "tick", "--json"))
    table = cli_any.ok("history", "tick", "--wide")

    assert [list(f) for f in fires] == [FIRE_KEYS] * 3
    assert [(f["task_id"], f["status"], f["run_status"], f["outcome"]) for f in fires] == [
        (running, "sent", "started", "started"),
        (bad, "sent", "failed", "failed"),
        (ok, "sent", "succeeded", "succeeded"),
    ]
    assert (fires[2]["run_seconds"], fires[2]["worker"], fires[2]["run_error"]) == (
        90.0,
        "celery@w1",
        None,
    )
    assert (fires[1]["run_seconds"], fires[1]["run_error"]) == (1.5, "ValueError: no report today")
    assert fires[0]["finished_at"] is None

    header, *lines = table.splitlines()
    assert header.split() == [
        "SLOT", "(UTC)", "KIND", "STATUS", "SENT", "(UTC)", "LAG", "BEAT", "TASK", "ID", "RUN",
        "STARTED", "(UTC)", "RAN", "WORKER", "NOTE",
    ]  # fmt: skip
    assert columns_align(table)
    assert lines[0].split()[-3:] == ["-", "celery@w1", "-"]  # still running
    assert lines[1].split()[6:] == [
        bad, "failed", started.isoformat().replace("+00:00", "Z"), "1.5s", "celery@w2",
        "ValueError:", "no", "report", "today",
    ]  # fmt: skip
    assert lines[2].split()[7:] == [
        "succeeded",
        started.isoformat().replace("+00:00", "Z"),
        "1m30s",
        "celery@w1",
        "-",
    ]


def test_status_lists_schedules_whose_last_run_failed_or_that_are_overdue(cli: Cli) -> None:
    now = utc_now()
    ok, bad, _ = beat_fires(cli, now)
    url = cli.app.conf.dbeat_database_url
    report(
        url,
        [
            RunEvent(ok, RunStatus.SUCCEEDED, now - minutes(3), runtime=1.0),
            RunEvent(bad, RunStatus.FAILED, now, runtime=1.0, error="KeyError: 'day'"),
        ],
    )

    data = json.loads(cli.ok("status", "--json"))
    lines = cli.ok("status").splitlines()

    [unhealthy] = data["unhealthy"]
    assert unhealthy == {
        "name": "tick",
        "task": "proj.tasks.tick",
        "state": "active",
        "reason": "failed",
        "last_slot": fires_slot(cli, bad),
        "last_finished_at": unhealthy["last_finished_at"],
        "last_success_at": unhealthy["last_success_at"],
        "period_seconds": 60.0,
        "task_id": bad,
        "error": "KeyError: 'day'",
    }
    at = lines.index("runs       1 unhealthy: 1 failed")
    assert lines[at + 1].split() == [
        "NAME", "STATE", "REASON", "LAST", "SLOT", "(UTC)", "LAST", "SUCCESS", "(UTC)", "ERROR",
    ]  # fmt: skip
    assert lines[at + 2].split()[:3] == ["tick", "active", "failed"]
    assert lines[at + 2].endswith("KeyError: 'day'")


def fires_slot(cli: Cli, task_id: str) -> str:
    fires = json.loads(cli.ok("history", "tick", "--json"))
    slot: str = next(f["slot"] for f in fires if f["task_id"] == task_id)
    return slot


def test_status_calls_a_schedule_overdue_when_nothing_succeeded_for_two_periods(
    cli: Cli,
) -> None:
    now = utc_now()
    url = cli.app.conf.dbeat_database_url
    ok, *_ = beat_fires(cli, now - minutes(4))  # the slots of 4-6 minutes ago
    report(url, [RunEvent(ok, RunStatus.SUCCEEDED, now - minutes(6))])
    store = Store(url)
    Ticker(
        store,
        DatabaseLock(),
        lambda *_: None,
        Settings.from_mapping({"instance_name": "beat-a"}),
        FixedClock(now),
    ).tick()  # sends the slots of the last minutes; no worker reports on them
    store.close()

    [unhealthy] = json.loads(cli.ok("status", "--json"))["unhealthy"]

    assert (unhealthy["name"], unhealthy["reason"], unhealthy["error"]) == ("tick", "overdue", None)
    assert "runs       1 unhealthy: 1 overdue" in cli.ok("status")
