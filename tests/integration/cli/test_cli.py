"""``celery dbeat`` commands on single schedules: add, update, remove, pause, resume, trigger,
list, show, history; the core flows run on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest
import sqlalchemy as sa

from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import FORM_FIELDS
from celery_dbeat.core.errors import ConfigOwned
from celery_dbeat.core.specs import Every, Solar
from celery_dbeat.store import Store
from tests.integration.cli.conftest import Cli, heartbeat, minutes, tick_fires, utc_now

UTC = timezone.utc

STATE_KEYS = [
    "uid",
    "state",
    "origin",
    "next_run_at",
    "last_slot",
    "run_count",
    "consecutive_failures",
    "last_error",
    "pause_note",
    "paused_at",
    "pause_source",
    "pruned_until",
    "finished_at",
    "created_at",
    "updated_at",
    "alert_kind",
    "alert_episode",
]
SCHEDULE_KEYS = [*FORM_FIELDS, *STATE_KEYS]
FIRE_KEYS = [
    "slot",
    "manual",
    "origin",
    "status",
    "outcome",
    "slot_count",
    "first_slot",
    "task_id",
    "beat",
    "recorded_at",
    "sent_at",
    "lag_seconds",
    "attempts",
    "error",
    "run_status",
    "started_at",
    "finished_at",
    "run_seconds",
    "worker",
    "run_error",
]


def is_utc_iso(text: str) -> bool:
    return text.endswith("Z") and datetime.fromisoformat(text[:-1] + "+00:00").tzinfo is not None


def columns_align(table: str) -> bool:
    """Every line starts its second column at the same offset as the header's."""
    lines = table.splitlines()
    second = lines[0].index("  ", lines[0].index(lines[0].split()[0])) + 2
    second += len(lines[0][second:]) - len(lines[0][second:].lstrip())
    return all(line[second - 2 : second] == "  " and line[second] != " " for line in lines)


# Core flows, on every backend ------------------------------------------------------------------


def test_a_schedule_added_on_the_command_line_is_listed_and_shown(cli_any: Cli) -> None:
    out = cli_any.ok(
        "add",
        "report",
        "proj.tasks.report",
        "--cron",
        "30 7 * * mon-fri",
        "--tz",
        "Europe/Paris",
        "--args",
        "[1, 2]",
        "--kwargs",
        '{"x": "y"}',
        "--queue",
        "io",
        "--priority",
        "5",
        "--misfire-policy",
        "all",
        "--misfire-grace",
        "1h30m",
        "--catchup-limit",
        "3",
        "--max-runs",
        "10",
        "--end-at",
        "2099-01-01T00:00:00+01:00",
    )
    assert out.startswith("added 'report': cron '30 7 * * mon-fri' Europe/Paris; active, next run")

    listed = json.loads(cli_any.ok("list", "--json"))
    shown = json.loads(cli_any.ok("show", "report", "--json"))

    assert listed == [shown]
    assert list(shown) == SCHEDULE_KEYS
    assert re.fullmatch("[0-9a-f]{32}", shown["uid"])  # its identity: task ids derive from it
    volatile = ("uid", "next_run_at", "created_at", "updated_at")
    assert {k: shown[k] for k in shown if k not in volatile} == {
        "name": "report",
        "task": "proj.tasks.report",
        "kind": "cron",
        "cron": "30 7 * * mon-fri",
        "timezone": "Europe/Paris",
        "dst_gap": None,
        "dst_fold": None,
        "cron_days": None,
        "rrule": None,
        "every": None,
        "run_at": None,
        "solar_event": None,
        "latitude": None,
        "longitude": None,
        "args": [1, 2],
        "kwargs": {"x": "y"},
        "options": {"queue": "io", "priority": 5},
        "enabled": True,
        "start_at": None,
        "end_at": "2098-12-31T23:00:00Z",
        "max_runs": 10,
        "misfire_policy": "all",
        "misfire_grace": 5400.0,
        "catchup_limit": 3,
        "jitter": None,
        "overlap_policy": None,
        "max_run_time": None,
        "calendar": None,
        "pause_after_failures": None,
        "history_limit": None,
        "slot_kwarg": None,
        "previous_slot_kwarg": None,
        "alert_after_failures": None,
        "alert_deadline": None,
        "alert_task": None,
        "alert_webhook": None,
        "state": "active",
        "origin": "api",
        "last_slot": None,
        "run_count": 0,
        "consecutive_failures": 0,
        "last_error": None,
        "pause_note": None,
        "paused_at": None,
        "pause_source": None,
        "pruned_until": None,
        "finished_at": None,
        "alert_kind": None,
        "alert_episode": None,
    }
    assert all(is_utc_iso(shown[k]) for k in ("next_run_at", "created_at", "updated_at"))
    # 07:30 in Paris is 05:30 or 06:30 UTC, on a weekday.
    next_run = datetime.fromisoformat(shown["next_run_at"].replace("Z", "+00:00"))
    assert (next_run.minute, next_run.weekday() < 5) == (30, True)


def test_update_pause_resume_and_remove_change_the_stored_schedule(cli_any: Cli) -> None:
    cli_any.ok("add", "poll", "proj.tasks.poll", "--every", "5m", "--args", "[1]")
    before = json.loads(cli_any.ok("show", "poll", "--json"))

    out = cli_any.ok("update", "poll", "--kwargs", '{"k": 1}', "--task", "proj.tasks.poll2")
    after_payload = json.loads(cli_any.ok("show", "poll", "--json"))
    cli_any.ok("update", "poll", "--every", "1h30m")
    after_timing = json.loads(cli_any.ok("show", "poll", "--json"))
    paused = cli_any.ok("pause", "poll")
    state_paused = json.loads(cli_any.ok("show", "poll", "--json"))["state"]
    resumed = cli_any.ok("resume", "poll")
    removed = cli_any.ok("remove", "poll")

    assert out.startswith("updated 'poll': every 5m; active")
    assert (after_payload["task"], after_payload["kwargs"], after_payload["args"]) == (
        "proj.tasks.poll2",
        {"k": 1},
        [1],
    )
    assert after_payload["next_run_at"] == before["next_run_at"]  # payload edits keep it
    assert after_timing["every"] == 5400.0
    assert after_timing["next_run_at"] != before["next_run_at"]  # timing edits recompute it
    assert paused.startswith("paused 'poll'")
    assert state_paused == "paused"
    assert resumed.startswith("resumed 'poll': every 1h30m; active")
    assert removed == "removed 'poll' and its fire history\n"
    assert cli_any.ok("list", "--json") == "[]\n"


def test_trigger_records_a_manual_fire_that_history_shows(cli_any: Cli) -> None:
    cli_any.ok("add", "poll", "proj.tasks.poll", "--every", "1h")
    heartbeat(cli_any.app.conf.dbeat_database_url, "beat-1", timedelta(seconds=1))

    task_id = json.loads(cli_any.ok("trigger", "poll", "--json"))
    fires = json.loads(cli_any.ok("history", "poll", "--json"))

    assert list(task_id) == ["name", "task_id", "live_beats"]
    assert task_id["live_beats"] == 1
    assert [list(f) for f in fires] == [FIRE_KEYS]
    assert (fires[0]["task_id"], fires[0]["manual"], fires[0]["status"]) == (
        task_id["task_id"],
        True,
        "pending",
    )
    assert is_utc_iso(fires[0]["slot"])


# add -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        pytest.param(["--every", "30s"], {"kind": "interval", "every": 30.0}, id="every-30s"),
        pytest.param(["--every", "1h30m"], {"kind": "interval", "every": 5400.0}, id="every-1h30m"),
        pytest.param(
            ["--at", "2099-05-06T14:00:00+02:00"],
            {"kind": "once", "run_at": "2099-05-06T12:00:00Z"},
            id="once-with-offset",
        ),
        pytest.param(
            [
                "--cron",
                "30 2 * * *",
                "--tz",
                "America/New_York",
                "--dst-gap",
                "skip",
                "--dst-fold",
                "both",
                "--cron-days",
                "all",
            ],
            {
                "kind": "cron",
                "timezone": "America/New_York",
                "dst_gap": "skip",
                "dst_fold": "both",
                "cron_days": "all",
            },
            id="cron-with-dst-rules",
        ),
        pytest.param(
            ["--cron", "0 * * * *", "--options", '{"expires": 30}', "--queue", "io"],
            {"options": {"expires": 30, "queue": "io"}},
            id="queue-shortcut-merges-into-options",
        ),
        pytest.param(
            ["--every", "1m", "--start-at", "2099-01-01T00:00:00Z"],
            {"start_at": "2099-01-01T00:00:00Z", "next_run_at": "2099-01-01T00:01:00Z"},
            id="interval-anchored-at-start-at",
        ),
        pytest.param(
            ["--every", "1m", "--disabled"], {"enabled": False, "state": "paused"}, id="disabled"
        ),
    ],
)
def test_add_stores_what_its_options_say(
    cli: Cli, options: list[str], expected: dict[str, object]
) -> None:
    cli.ok("add", "s", "proj.tasks.s", *options)

    shown = json.loads(cli.ok("show", "s", "--json"))

    assert {key: shown[key] for key in expected} == expected


def test_add_with_a_name_in_use_exits_1_naming_it(cli: Cli) -> None:
    cli.ok("add", "poll", "proj.tasks.poll", "--every", "1m")

    cli.fails(
        "add",
        "poll",
        "proj.tasks.other",
        "--every",
        "1m",
        code=1,
        fragment="a schedule named 'poll' exists already",
    )


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        pytest.param([], "give one of --cron, --rrule, --every or --at", id="no-spec"),
        pytest.param(
            ["--cron", "* * * * *", "--every", "5m"], "not --cron and --every", id="two-specs"
        ),
        pytest.param(
            ["--every", "5m", "--tz", "UTC"],
            "--tz applies to cron or rrule schedules only (give --cron or --rrule)",
            id="tz-without-cron",
        ),
        pytest.param(
            ["--every", "5m", "--priority", "high"],
            "'high' is not a valid integer",
            id="priority-not-a-number",
        ),
    ],
)
def test_a_malformed_command_line_exits_2(cli: Cli, options: list[str], fragment: str) -> None:
    result = cli("add", "s", "proj.tasks.s", *options)

    assert result.exit_code == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.output


# update ----------------------------------------------------------------------------------------


def test_update_can_switch_the_kind_and_clear_an_optional_field(cli: Cli) -> None:
    cli.ok(
        "add",
        "s",
        "proj.tasks.s",
        "--cron",
        "0 * * * *",
        "--tz",
        "Europe/Paris",
        "--end-at",
        "2099-01-01T00:00:00Z",
        "--max-runs",
        "3",
    )

    cli.ok("update", "s", "--every", "10m", "--end-at", "", "--max-runs", "")
    shown = json.loads(cli.ok("show", "s", "--json"))

    assert {k: shown[k] for k in ("kind", "cron", "timezone", "every", "end_at", "max_runs")} == {
        "kind": "interval",
        "cron": None,
        "timezone": None,
        "every": 600.0,
        "end_at": None,
        "max_runs": None,
    }


def test_update_of_the_cron_keeps_the_zone_and_tz_alone_changes_it(cli: Cli) -> None:
    cli.ok("add", "s", "proj.tasks.s", "--cron", "0 9 * * *", "--tz", "Asia/Tokyo")

    cli.ok("update", "s", "--cron", "0 10 * * *")
    first = json.loads(cli.ok("show", "s", "--json"))
    cli.ok("update", "s", "--tz", "Europe/London")
    second = json.loads(cli.ok("show", "s", "--json"))

    assert (first["cron"], first["timezone"]) == ("0 10 * * *", "Asia/Tokyo")
    assert (second["cron"], second["timezone"]) == ("0 10 * * *", "Europe/London")


def test_update_with_nothing_new_says_unchanged(cli: Cli) -> None:
    cli.ok("add", "s", "proj.tasks.s", "--every", "1m", "--args", "[1]")

    out = cli.ok("update", "s", "--args", "[1]")

    assert out.startswith("unchanged 's'")


def test_update_disabled_and_enabled_pause_and_resume(cli: Cli) -> None:
    cli.ok("add", "s", "proj.tasks.s", "--every", "1m")

    paused = cli.ok("update", "s", "--disabled")
    resumed = cli.ok("update", "s", "--enabled")

    assert paused.endswith("; paused\n")
    assert "; active," in resumed


# remove, pause, resume, trigger ---------------------------------------------------------------


def test_a_beat_schedule_entry_is_not_removed_or_changed_without_force(cli: Cli) -> None:
    cli.app.conf.beat_schedule = {"nightly": {"task": "proj.tasks.n", "schedule": 3600}}
    cli.ok("sync")

    removed = cli.fails("remove", "nightly", code=1)
    changed = cli.fails("update", "nightly", "--every", "2h", code=1)
    paused = cli.ok("update", "nightly", "--disabled")  # a pause survives a sync: allowed
    same = cli.ok("update", "nightly", "--every", "1h")  # saving what is stored changes nothing

    # The API's own words, with the CLI's way to force it.
    assert removed == f"Error: {ConfigOwned('nightly', removal=True).told('pass --force')}"
    assert changed == f"Error: {ConfigOwned('nightly').told('pass --force')}"
    assert changed == (
        "Error: 'nightly' comes from beat_schedule, and the next beat start (or `dbeat sync`) "
        "puts its definition back: change beat_schedule instead (`dbeat sync --dry-run` shows "
        "what a sync does), or pass --force to have it changed until then"
    )
    assert "every 1h; paused" in paused
    assert same.startswith("unchanged 'nightly'")
    assert json.loads(cli.ok("show", "nightly", "--json"))["every"] == 3600.0
    assert cli.ok("resume", "nightly").startswith("resumed 'nightly'")


def test_force_changes_a_beat_schedule_entry_until_the_next_sync_and_says_so(cli: Cli) -> None:
    cli.app.conf.beat_schedule = {"nightly": {"task": "proj.tasks.n", "schedule": 3600}}
    cli.ok("sync")

    changed = cli("update", "nightly", "--every", "2h", "--force")
    synced = cli.ok("sync")
    removed = cli("remove", "nightly", "--force")
    resynced = cli.ok("sync")

    assert (changed.exit_code, removed.exit_code) == (0, 0)
    assert changed.stdout.startswith("updated 'nightly': every 2h;")
    assert changed.stderr == f"warning: {ConfigOwned.forced('nightly')}\n"
    assert changed.stderr == (
        "warning: 'nightly' comes from beat_schedule; the change lasts until the next beat start"
        " or `dbeat sync`\n"
    )
    assert "updated 1" in synced  # the sync put the hour back
    assert removed.stdout == "removed 'nightly' and its fire history\n"
    assert removed.stderr == f"warning: {ConfigOwned.forced('nightly', removal=True)}\n"
    assert "created 1" in resynced
    assert json.loads(cli.ok("show", "nightly", "--json"))["every"] == 3600.0


def test_resume_with_catch_up_keeps_the_missed_slot_and_without_moves_it(cli: Cli) -> None:
    past = utc_now() - minutes(30)
    with Schedules(cli.app.conf.dbeat_database_url, clock=FixedClock(past)) as api:
        api.add("a", "proj.tasks.a", Every(600))
        api.add("b", "proj.tasks.b", Every(600))
        api.pause("a")
        api.pause("b")
        due_at = api.get("a").next_run_at

    cli.ok("resume", "a", "--catch-up")
    cli.ok("resume", "b")

    assert json.loads(cli.ok("show", "a", "--json"))["next_run_at"] == (
        due_at.strftime("%Y-%m-%dT%H:%M:%SZ") if due_at else None
    )
    # Without catch-up beat recomputes it from now (NULL until then), never in the past.
    b = json.loads(cli.ok("show", "b", "--json"))["next_run_at"]
    assert b is None or b > utc_now().strftime("%Y-%m-%dT%H:%M:%SZ")


def test_trigger_prints_the_task_id_and_when_a_beat_sends_it(cli: Cli) -> None:
    cli.ok("add", "s", "proj.tasks.s", "--every", "1h")
    heartbeat(cli.app.conf.dbeat_database_url, "beat-1", timedelta(seconds=5))

    out = cli.ok("trigger", "s")
    cli.app.conf.dbeat_redis_url = "redis://127.0.0.1:1/0"  # notifies beats (or tries to)
    notified = cli.ok("trigger", "s")

    assert out.startswith("triggered 's': task id ")
    assert out.endswith("(a beat sees it within 5s; with dbeat_redis_url set, at once)\n")
    assert re.fullmatch(r"triggered 's': task id \S+\n", notified)


def test_trigger_with_no_live_beat_records_the_fire_and_says_when_it_is_sent(cli: Cli) -> None:
    cli.ok("add", "s", "proj.tasks.s", "--every", "1h")
    heartbeat(cli.app.conf.dbeat_database_url, "stopped", timedelta(seconds=16))

    result = cli("trigger", "s")
    as_json = cli("trigger", "s", "--json")

    assert result.exit_code == 0
    assert result.stdout.startswith("triggered 's': task id ")
    assert result.stderr == (
        "warning: no beat is running (none seen within 15s): 's' is sent when a beat starts\n"
    )
    assert json.loads(as_json.stdout)["live_beats"] == 0
    assert as_json.stderr == result.stderr
    assert [f["manual"] for f in json.loads(cli.ok("history", "s", "--json"))] == [True, True]


# list, show, history ---------------------------------------------------------------------------


def test_list_prints_an_aligned_table_and_filters(cli: Cli) -> None:
    cli.ok("add", "report-daily", "proj.tasks.report", "--cron", "0 7 * * *", "--tz", "Asia/Tokyo")
    cli.ok("add", "p", "proj.tasks.poll", "--every", "90s", "--disabled")
    cli.ok("add", "once", "proj.tasks.launch", "--at", "2099-01-01T00:00:00Z")

    table = cli.ok("list")
    paused = json.loads(cli.ok("list", "--paused", "--json"))
    found = json.loads(cli.ok("list", "--search", "report", "--json"))
    limited = json.loads(cli.ok("list", "--limit", "1", "--json"))

    lines = table.splitlines()
    assert lines[0].split() == ["NAME", "TASK", "SCHEDULE", "STATE", "NEXT", "RUN", "(UTC)", "NOTE"]
    assert [line.split()[0] for line in lines[1:]] == ["once", "p", "report-daily"]
    assert "every 1m30s" in lines[2]
    assert "paused" in lines[2]
    assert "cron '0 7 * * *' Asia/Tokyo" in lines[3]
    assert "once 2099-01-01T00:00:00Z" in lines[1]
    assert columns_align(table)
    assert [s["name"] for s in paused] == ["p"]
    assert [s["name"] for s in found] == ["report-daily"]
    assert [s["name"] for s in limited] == ["once"]


def test_list_of_an_empty_database_says_so(cli: Cli) -> None:
    assert cli.ok("list") == "no schedules\n"


def test_show_prints_one_field_per_line(cli: Cli) -> None:
    cli.ok("add", "s", "proj.tasks.s", "--every", "1h30m", "--misfire-grace", "5m")

    lines = cli.ok("show", "s").splitlines()

    fields = dict(line.split(None, 1) for line in lines[1:])
    assert fields["schedule"] == "every 1h30m"
    assert (fields["every"], fields["misfire_grace"], fields["end_at"]) == ("1h30m", "5m", "-")
    assert [line.split()[0] for line in lines[1:4]] == ["name", "task", "schedule"]


def test_show_writes_json_values_as_people_write_them_and_json_stays_valid(cli: Cli) -> None:
    kwargs = {"greeting": "Grüße aus München", "line": "a\nb", "emoji": "⏰"}
    cli.ok("add", "s", "proj.tasks.s", "--every", "1m", "--kwargs", json.dumps(kwargs))

    lines = cli.ok("show", "s").splitlines()
    data = json.loads(cli.ok("show", "s", "--json"))

    fields = dict(line.split(None, 1) for line in lines[1:])
    assert fields["kwargs"] == ('{"emoji": "⏰", "greeting": "Grüße aus München", "line": "a\\nb"}')
    assert data["kwargs"] == kwargs


def test_show_explains_days_all_where_it_matters(cli: Cli) -> None:
    for name, cron in (("both", "0 9 1 * mon"), ("one", "0 4 * * *")):
        cli.ok("add", name, "proj.tasks.s", "--cron", cron, "--cron-days", "all")

    both = dict(line.split(None, 1) for line in cli.ok("show", "both").splitlines()[1:])
    one = dict(line.split(None, 1) for line in cli.ok("show", "one").splitlines()[1:])
    listed = cli.ok("list").splitlines()

    explained = "days=all (both day fields must match, as in Celery's crontab)"
    assert both["schedule"] == f"cron '0 9 1 * mon' UTC {explained}"
    assert both["cron_days"] == (
        "all: both day fields must match, as in Celery's crontab (cron(8)'s default, any, "
        "matches either)"
    )
    assert one["schedule"] == "cron '0 4 * * *' UTC"  # a day field is *: all and any agree
    assert explained in listed[1]
    assert "days=" not in listed[2]
    assert json.loads(cli.ok("show", "both", "--json"))["cron_days"] == "all"


def test_history_shows_the_fires_a_beat_recorded(cli: Cli) -> None:
    now = utc_now()
    sent = tick_fires(cli, now - minutes(10) - timedelta(seconds=3), now, "skip")  # 3 s late

    fires = json.loads(cli.ok("history", "tick", "--json"))
    table = cli.ok("history", "tick")

    assert [(f["status"], f["manual"]) for f in fires] == [("sent", False), ("skipped", False)]
    assert (fires[0]["task_id"], fires[0]["beat"]) == (sent[0], "beat-a")
    assert (fires[1]["slot_count"], fires[1]["first_slot"] is not None) == (9, True)
    assert "sent" in table.splitlines()[1]
    assert table.splitlines()[2].endswith("  9 slots")
    assert "9 slots from" in cli.ok("history", "tick", "--wide").splitlines()[2]
    assert columns_align(table)


def test_history_fits_100_columns_and_wide_shows_every_value_in_full(cli: Cli) -> None:
    now = utc_now()
    sent = tick_fires(cli, now - minutes(10) - timedelta(seconds=3), now, "skip")
    beat, error = "worker-17.eu-west-1.compute.internal:2147483", "ConnectionError: " + "x" * 200
    with Store(cli.app.conf.dbeat_database_url).engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE dbeat_fires SET beat = :b, error = :e"), {"b": beat, "e": error}
        )

    table = cli.ok("history", "tick")
    wide = cli.ok("history", "tick", "--wide")

    assert max(len(line) for line in table.splitlines()) <= 100, table
    assert table.splitlines()[0].split() == [
        "SLOT", "(UTC)", "KIND", "STATUS", "LAG", "BEAT", "RUN", "RAN", "NOTE",
    ]  # fmt: skip
    assert "worker-17.eu-…" in table
    assert sent[0] not in table
    assert all(line.endswith("…") for line in table.splitlines()[1:])
    assert beat in wide
    assert sent[0] in wide
    assert max(len(line) for line in wide.splitlines()) > 100
    assert columns_align(table)
    assert columns_align(wide)


def test_history_of_a_schedule_that_never_fired_says_so(cli: Cli) -> None:
    cli.ok("add", "s", "proj.tasks.s", "--every", "1h")

    assert cli.ok("history", "s") == "no fires recorded for 's' yet\n"


def test_a_paused_schedule_shows_no_next_run_but_json_keeps_the_stored_value(cli: Cli) -> None:
    cli.ok("add", "p", "proj.tasks.p", "--every", "1h")

    paused = cli.ok("pause", "p")
    listed = cli.ok("list").splitlines()[1].split()
    shown = dict(line.split(None, 1) for line in cli.ok("show", "p").splitlines()[1:])
    stored = json.loads(cli.ok("show", "p", "--json"))["next_run_at"]

    assert paused == "paused 'p': every 1h; paused\n"
    assert listed == ["p", "proj.tasks.p", "every", "1h", "paused", "-", "-"]  # no note
    assert shown["next_run_at"] == f"- (stored {stored}; paused)"
    assert stored is not None


def test_list_and_show_name_a_solar_schedule_by_its_spec(cli: Cli) -> None:
    with Schedules(cli.app.conf.dbeat_database_url) as api:
        api.add("lights", "proj.tasks.lights", Solar("sunset", 48.85, 2.35))

    listed = cli.ok("list").splitlines()[1]
    shown = cli.ok("show", "lights")

    assert "solar sunset at 48.85, 2.35" in listed
    assert "(invalid spec)" not in listed + shown
