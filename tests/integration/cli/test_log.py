"""``celery dbeat log``: the audit trail of the CLI's writes, as ``--actor`` or the OS user, of
schedules and (``--calendar NAME``) of calendars; exported as JSON; a bad ``--actor`` refused with
one line, recording nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from celery_dbeat.cli import _common
from tests.integration.cli.conftest import Cli


def test_writes_are_recorded_as_the_os_user_or_actor_and_log_shows_them(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_common, "os_user", lambda: "deploy")
    cli.ok("add", "report", "proj.tasks.report", "--every", "1m")
    cli.ok("pause", "report", "--actor", "alice")
    cli.ok("update", "report", "--every", "2m", "--actor", "alice")

    entries = json.loads(cli.ok("log", "report", "--json"))
    assert [(e["action"], e["actor"], e["surface"]) for e in entries] == [
        ("update", "alice", "cli"),
        ("pause", "alice", "cli"),
        ("create", "deploy", "cli"),
    ]
    assert entries[0]["changes"] == {"every": [60.0, 120.0]}
    table = cli.ok("log", "--limit", "1")
    assert "alice" in table
    assert "every: 60.0 -> 120.0" in table


def test_an_imported_file_is_recorded_through_the_import_surface(cli: Cli) -> None:
    document = [{"name": "n", "task": "proj.tasks.n", "kind": "interval", "every": 60}]
    cli.ok("import", "-", "--format", "json", "--actor", "ci", input=json.dumps(document))
    (entry,) = json.loads(cli.ok("log", "--json"))
    assert (entry["action"], entry["actor"], entry["surface"]) == ("create", "ci", "import")


def test_an_empty_actor_is_refused_and_nothing_is_written(cli: Cli) -> None:
    cli.fails("add", "r", "proj.tasks.r", "--every", "1m", "--actor", " ", code=1, fragment="actor")
    assert json.loads(cli.ok("log", "--json")) == []
    assert cli.ok("log") == "no audit entries\n"


def test_an_actor_with_a_control_character_is_refused_escaped_and_nothing_is_written(
    cli: Cli,
) -> None:
    line = cli.fails("add", "r", "proj.tasks.r", "--every", "1m", "--actor", "ali\x1b[2Jce", code=1)

    assert line == (
        "Error: actor='ali\\x1b[2Jce': contains the control character U+001B ('\\x1b') at "
        "position 3; remove it"
    )
    assert cli.ok("log") == "no audit entries\n"
    assert cli.ok("list", "--json") == "[]\n"


def test_calendar_commands_are_recorded_as_actor_and_log_calendar_shows_them(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_common, "os_user", lambda: "deploy")
    cli.ok("calendar", "add", "office", "--dates", "2030-12-25", "--actor", "alice")
    cli.ok("calendar", "import", "office", "--dates", "2030-12-26", "--actor", "bob")
    cli.ok("calendar", "update", "office", "--description", "closures")
    cli.ok("add", "office", "proj.tasks.office", "--every", "1m")  # a schedule of that name
    cli.ok("remove", "office")
    cli.ok("calendar", "remove", "office", "--actor", "alice")

    entries = json.loads(cli.ok("log", "--calendar", "office", "--json"))
    assert [(e["action"], e["actor"], e["surface"], e["kind"]) for e in entries] == [
        ("calendar-remove", "alice", "cli", "calendar"),
        ("calendar-update", "deploy", "cli", "calendar"),
        ("calendar-update", "bob", "cli", "calendar"),
        ("calendar-create", "alice", "cli", "calendar"),
    ]
    assert entries[2]["changes"] == {"dates": [["2030-12-25"], ["2030-12-25..2030-12-26"]]}
    schedule = json.loads(cli.ok("log", "office", "--json"))
    assert [e["action"] for e in schedule] == ["remove", "create"]
    table = cli.ok("log", "--calendar", "office")
    assert "calendar-update" in table
    assert "description: - -> closures" in table
    assert cli.ok("log", "--calendar", "nope") == "no audit entries for calendar 'nope'\n"


def test_an_imported_files_calendars_are_recorded_through_the_import_surface(cli: Cli) -> None:
    calendar: dict[str, Any] = {"name": "xmas", "timezone": "UTC", "dates": ["2030-12-25"]}
    document = {"version": 1, "schedules": [], "calendars": [calendar]}
    cli.ok("import", "-", "--format", "json", "--actor", "ci", input=json.dumps(document))
    calendar["dates"] = ["2031-12-25"]
    cli.ok("import", "-", "--format", "json", "--actor", "ci", input=json.dumps(document))
    cli.ok("import", "-", "--format", "json", "--dry-run", input=json.dumps(document))

    entries = json.loads(cli.ok("log", "--calendar", "xmas", "--json"))
    assert [(e["action"], e["actor"], e["surface"]) for e in entries] == [
        ("calendar-update", "ci", "import"),
        ("calendar-create", "ci", "import"),
    ]


def test_log_refuses_a_schedule_name_and_a_calendar_at_once(cli: Cli) -> None:
    result = cli("log", "report", "--calendar", "office")

    assert result.exit_code == 2
    assert "Error: give a schedule's NAME or --calendar NAME, not both" in result.stderr


def test_a_sync_is_recorded_as_actor_through_the_sync_surface(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_common, "os_user", lambda: "deploy")
    cli.app.conf.beat_schedule = {"nightly": {"task": "proj.tasks.n", "schedule": 60.0}}
    cli.ok("sync")
    cli.app.conf.beat_schedule = {"nightly": {"task": "proj.tasks.n", "schedule": 120.0}}
    cli.ok("sync", "--actor", "alice")

    entries = json.loads(cli.ok("log", "nightly", "--json"))
    assert [(e["action"], e["actor"], e["surface"]) for e in entries] == [
        ("update", "alice", "sync"),
        ("create", "deploy", "sync"),
    ]
