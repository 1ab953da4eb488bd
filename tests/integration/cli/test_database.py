"""Commands on the whole database: ``migrate``, ``sync`` (beat_schedule -> database), ``status``."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from celery import Celery
from celery.schedules import crontab

from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.specs import Cron, Every
from celery_dbeat.store.database import _head
from tests.integration.cli.conftest import Cli, heartbeat, make_app, migrated, minutes, utc_now

# migrate ---------------------------------------------------------------------------------------


def test_migrate_installs_the_tables_once_and_check_then_passes(database_url: str) -> None:
    cli = Cli(make_app(database_url))

    cli.fails("migrate", "--check", code=4, fragment="tables are not installed")
    first = cli.ok("migrate")
    second = cli.ok("migrate")
    check = cli.ok("migrate", "--check")

    assert first == second
    assert first.startswith("schema of ")
    assert first.endswith(" (current)\n")
    assert "is current (revision " in check
    assert cli.ok("list") == "no schedules\n"


def test_migrate_names_the_database_and_the_revision(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/db.sqlite3"
    cli = Cli(make_app(url))

    assert cli.ok("migrate") == f"schema of {url} is at revision {_head()} (current)\n"


# sync ------------------------------------------------------------------------------------------


def test_sync_creates_then_leaves_unchanged_then_disables_removed_entries(cli: Cli) -> None:
    cli.app.conf.beat_schedule = {
        "nightly": {"task": "proj.tasks.nightly", "schedule": crontab(hour=3, minute=0)},
        "poll": {"task": "proj.tasks.poll", "schedule": Every(30), "options": {"queue": "io"}},
    }

    first = cli.ok("sync")
    second = json.loads(cli.ok("sync", "--json"))
    cli.app.conf.beat_schedule = {"poll": cli.app.conf.beat_schedule["poll"]}
    third = json.loads(cli.ok("sync", "--json"))

    assert first == (
        "synced 2 beat_schedule entries: created 2, updated 0, unchanged 0, disabled 0\n"
    )
    assert second == {
        "created": [],
        "updated": [],
        "unchanged": ["nightly", "poll"],
        "disabled": [],
        "conflicts": [],
        "refused": {},
        "dry_run": False,
        "unknown_tasks": {},
    }
    assert (third["unchanged"], third["disabled"]) == (["poll"], ["nightly"])
    nightly = json.loads(cli.ok("show", "nightly", "--json"))
    assert (nightly["state"], nightly["origin"]) == ("paused", "config:removed")


def test_sync_dry_run_names_what_a_sync_would_change_and_changes_nothing(cli: Cli) -> None:
    cli.app.conf.beat_schedule = {
        "kept": {"task": "proj.tasks.k", "schedule": 60},
        "edited": {"task": "proj.tasks.e", "schedule": 60},
        "dropped": {"task": "proj.tasks.d", "schedule": 60},
    }
    cli.ok("sync")
    assert cli("update", "edited", "--every", "5m", "--force").exit_code == 0
    cli.app.conf.beat_schedule = {
        "kept": {"task": "proj.tasks.k", "schedule": 60},
        "edited": {"task": "proj.tasks.e", "schedule": 60},
        "new": {"task": "proj.tasks.n", "schedule": 60},
    }
    before = cli.ok("list", "--json")

    dry = cli.ok("sync", "--dry-run")
    as_json = json.loads(cli.ok("sync", "--dry-run", "--json"))
    after = cli.ok("list", "--json")
    real = json.loads(cli.ok("sync", "--json"))

    assert dry == (
        "would sync 3 beat_schedule entries: created 1, updated 1, unchanged 1, disabled 1\n"
        "  would be created: new\n"
        "  would be updated: edited\n"
        "  would be disabled: dropped\n"
    )
    assert after == before
    assert as_json == {**real, "dry_run": True}  # the same report, as it would be
    assert (real["created"], real["updated"], real["disabled"]) == (
        ["new"],
        ["edited"],
        ["dropped"],
    )


def test_sync_reports_a_name_taken_by_a_schedule_made_elsewhere(cli: Cli) -> None:
    cli.ok("add", "poll", "proj.tasks.mine", "--every", "1m")
    cli.app.conf.beat_schedule = {"poll": {"task": "proj.tasks.poll", "schedule": 30}}

    result = cli("sync")

    assert result.exit_code == 0
    assert "unchanged 0" in result.stdout
    assert result.stderr == (
        "not synced, the name belongs to a schedule made outside beat_schedule: poll\n"
    )


def test_sync_of_a_bad_entry_exits_1_naming_it_and_changes_nothing(cli: Cli) -> None:
    cli.app.conf.beat_schedule = {
        "good": {"task": "proj.tasks.good", "schedule": 60},
        "bad": {"task": "proj.tasks.bad", "schedule": 0},
    }

    cli.fails("sync", code=1, fragment="beat_schedule['bad']=")

    assert cli.ok("list", "--json") == "[]\n"


# status ----------------------------------------------------------------------------------------


def fill(cli: Cli) -> None:
    """A due schedule (its slot 3 minutes ago), one upcoming, a paused one, one in error, and
    two beats: one seen 2 s ago, one 1 h ago."""
    url = cli.app.conf.dbeat_database_url
    now = utc_now()
    with Schedules(url, clock=FixedClock(now - minutes(13))) as api:
        api.add("late", "proj.tasks.late", Every(600))
    with Schedules(url, clock=FixedClock(now)) as api:
        api.add("soon", "proj.tasks.soon", Every(3600))
        api.add("later", "proj.tasks.later", Every(7200))
        api.add("off", "proj.tasks.off", Every(60), enabled=False)
        api.add("broken", "proj.tasks.broken", Cron("0 0 1 1 *"))
        with api.store.engine.begin() as conn:
            conn.exec_driver_sql(
                "UPDATE dbeat_schedules SET last_error = 'timezone=''Mars/Olympus'': unknown', "
                "next_run_at = NULL WHERE name = 'broken'"
            )
    heartbeat(url, "host:1", timedelta(seconds=2))
    heartbeat(url, "host:2", timedelta(hours=1))


def test_status_json_reports_beats_backlog_next_fires_and_errors(cli: Cli) -> None:
    fill(cli)

    data = json.loads(cli.ok("status", "--json", "--next", "2"))

    assert list(data) == [
        "database",
        "now",
        "live_within_seconds",
        "live_beats",
        "beats",
        "schedules",
        "paused_by",
        "backlog",
        "queued",
        "next_fires",
        "errors",
        "unhealthy",
        "in_alert",
    ]
    assert data["database"] == cli.app.conf.dbeat_database_url
    assert data["live_within_seconds"] == 15.0  # 3 x dbeat_max_interval (5 s)
    assert [(b["name"], b["live"]) for b in data["beats"]] == [("host:1", True), ("host:2", False)]
    assert list(data["beats"][0]) == [
        "name",
        "hostname",
        "pid",
        "version",
        "started_at",
        "last_seen_at",
        "age_seconds",
        "live",
    ]
    assert data["live_beats"] == 1
    assert 1 <= data["beats"][0]["age_seconds"] < 15
    assert data["schedules"] == {"total": 5, "active": 3, "paused": 1, "finished": 0, "error": 1}
    assert data["backlog"]["count"] == 1
    assert [s["name"] for s in data["backlog"]["schedules"]] == ["late"]
    assert data["backlog"]["oldest_next_run_at"] == data["backlog"]["schedules"][0]["next_run_at"]
    assert data["backlog"]["behind_seconds"] > 0
    assert data["queued"] == {"count": 0, "oldest_slot": None}
    assert [s["name"] for s in data["next_fires"]] == ["soon", "later"]
    assert data["errors"] == [
        {
            "name": "broken",
            "task": "proj.tasks.broken",
            "last_error": "timezone='Mars/Olympus': unknown",
        }
    ]


def test_status_prints_a_readable_summary(cli: Cli) -> None:
    fill(cli)

    lines = cli.ok("status").splitlines()
    words = [" ".join(line.split()) for line in lines]

    assert lines[0] == f"database   {cli.app.conf.dbeat_database_url}"
    assert lines[1].startswith("now        ")
    assert lines[2] == "beats      1 live, 1 silent (live: seen within 15s)"
    assert words[3] == "NAME HOST PID VERSION STARTED (UTC) LAST SEEN STATE"
    assert words[4].startswith("host:1 host 42 0.1 ")
    assert words[4].endswith("s ago live")
    assert words[5].endswith(" 1h ago silent")
    assert lines[6] == "schedules  5: 3 active, 1 paused, 0 finished, 1 in error"
    assert lines[7].startswith("backlog    1 due, oldest since ")
    assert words[8:10] == ["next fires", "NEXT RUN (UTC) NAME TASK"]
    assert [w.split()[1:] for w in words[10:12]] == [
        ["soon", "proj.tasks.soon"],
        ["later", "proj.tasks.later"],
    ]
    assert words[12:] == [
        "errors",
        "NAME LAST ERROR",
        "broken timezone='Mars/Olympus': unknown",
        "runs 0 unhealthy",
    ]


def test_status_of_an_empty_database_has_no_beats_and_no_backlog(cli: Cli) -> None:
    out = cli.ok("status")

    assert "beats      0 live, 0 silent" in out
    assert "backlog    0 due\n" in out
    assert "next fires" not in out


def test_check_passes_on_a_current_schema_and_fails_in_one_line_without_one(
    sqlite_url: str,
) -> None:
    bare = Cli(make_app(sqlite_url))
    failed = bare("check")  # every finding on stdout, then one error line
    assert failed.exit_code == 1
    assert "error   schema   the celery-dbeat tables are not installed" in failed.stdout
    assert failed.stderr.splitlines() == ["Error: some checks failed"]
    migrated(sqlite_url)
    output = bare.ok("check")
    assert "ok      schema" in output
    findings = json.loads(bare.ok("check", "--json"))
    assert {f["level"] for f in findings} == {"ok"}
    assert {f["topic"] for f in findings} >= {"settings", "schema", "database"}


def test_dbeat_check_shows_where_the_default_database_is_and_what_it_means(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    cli = Cli(Celery("proj", set_as_current=False))
    cli.ok("migrate")

    result = cli("check")

    path = tmp_path / "celery-dbeat" / "proj.sqlite3"
    assert result.exit_code == 0, result.output
    assert (
        f"warning settings dbeat_database_url is not set: the schedules are in the SQLite file "
        f"{path}, which only this user's beats on this host share; " in result.stdout
    )
