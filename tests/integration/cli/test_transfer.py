"""``export`` and ``import``: export -> import -> export gives the same file, importing a file
twice changes nothing the second time, and a bad file changes nothing at all."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
import redis
import sqlalchemy as sa
import yaml
from celery.schedules import crontab

from celery_dbeat.api import Schedules
from celery_dbeat.cli._documents import dump, load
from celery_dbeat.core.errors import ConfigOwned
from tests.integration.cli.conftest import Cli, make_app, migrated

#: The last Friday of each month but December 2026's, 09:00 in London.
RULE = (
    "DTSTART;TZID=Europe/London:20260105T090000\n"
    "RRULE:FREQ=MONTHLY;BYDAY=-1FR\n"
    "EXDATE:20261225T090000"
)


def versions(cli: Cli) -> dict[str, tuple[int, object]]:
    """Each schedule's definition version and next run: what an import must not touch."""
    with Schedules(cli.app.conf.dbeat_database_url) as api:
        return {i.name: (i.version, i.next_run_at) for i in api.list()}


def fill(cli: Cli) -> None:
    """One schedule of every shape the form can carry."""
    cli.ok(
        "add",
        "cron-ny",
        "proj.tasks.a",
        "--cron",
        "30 2 * * *",
        "--tz",
        "America/New_York",
        "--dst-gap",
        "shift",
        "--dst-fold",
        "second",
        "--args",
        '[1, "x", null]',
        "--kwargs",
        '{"k": {"nested": [true]}}',
        "--options",
        '{"queue": "q", "expires": 60}',
        "--misfire-policy",
        "all",
        "--misfire-grace",
        "90m",
        "--catchup-limit",
        "7",
        "--overlap-policy",
        "buffer_one",
    )
    cli.ok(
        "add",
        "every-90s",
        "proj.tasks.b",
        "--every",
        "90s",
        "--start-at",
        "2030-01-01T00:00:00+01:00",
        "--end-at",
        "2031-01-01T00:00:00Z",
        "--max-runs",
        "3",
        "--overlap-policy",
        "skip",
        "--max-run-time",
        "2h",
    )
    cli.ok("add", "once", "proj.tasks.c", "--at", "2099-06-01T12:00:00+02:00")
    cli.ok("add", "finished", "proj.tasks.d", "--at", "2001-01-01T00:00:00Z")
    cli.ok("add", "paused", "proj.tasks.e", "--cron", "0 0 1 * *", "--disabled")
    cli.ok("add", "unicode-été", "proj.tasks.f", "--every", "1h", "--args", '["été"]')
    cli.ok("add", "rrule-london", "proj.tasks.h", "--rrule", RULE, "--dst-fold", "both")
    cli.app.conf.beat_schedule = {
        "celery-crontab": {
            "task": "proj.tasks.g",
            "schedule": crontab(minute="0", hour="7", day_of_week="mon"),
        },
    }
    cli.ok("sync")


@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_export_import_export_reproduces_the_file_exactly(
    cli_any: Cli, tmp_path: Path, suffix: str
) -> None:
    fill(cli_any)
    first = tmp_path / f"first.{suffix}"
    second = tmp_path / f"second.{suffix}"
    other = Cli(make_app(migrated(f"sqlite:///{tmp_path / 'other.sqlite3'}")))

    cli_any.ok("export", str(first))
    report = other.ok("import", str(first))
    other.ok("export", str(second))

    assert report == f"imported 8 schedules from {first}: created 8, updated 0, unchanged 0\n"
    assert second.read_text() == first.read_text()
    shown = json.loads(other.ok("show", "paused", "--json"))
    assert shown["state"] == "paused"
    loaded = (json.loads if suffix == "json" else yaml.safe_load)(first.read_text())
    assert (loaded["version"], len(loaded["schedules"])) == (1, 8)
    rrule = next(s for s in loaded["schedules"] if s["name"] == "rrule-london")
    assert (rrule["kind"], rrule["rrule"], rrule["timezone"], rrule["dst_fold"]) == (
        "rrule",
        RULE,
        "Europe/London",
        "both",
    )
    overlap = {s["name"]: (s["overlap_policy"], s["max_run_time"]) for s in loaded["schedules"]}
    assert (overlap["cron-ny"], overlap["every-90s"], overlap["once"]) == (
        ("buffer_one", None),
        ("skip", 7200.0),
        (None, None),
    )
    imported = json.loads(other.ok("show", "every-90s", "--json"))
    assert (imported["overlap_policy"], imported["max_run_time"]) == ("skip", 7200.0)


@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_importing_the_same_file_twice_changes_nothing_the_second_time(
    cli: Cli, tmp_path: Path, suffix: str
) -> None:
    fill(cli)
    path = tmp_path / f"schedules.{suffix}"
    cli.ok("export", str(path))
    before = versions(cli)

    first = cli.ok("import", str(path), "--json")
    second = cli.ok("import", str(path), "--json")

    assert json.loads(first)["unchanged"] == sorted(before)
    assert json.loads(second) == json.loads(first)
    assert versions(cli) == before


def test_import_creates_and_updates_by_name_and_leaves_other_schedules_alone(
    cli: Cli, tmp_path: Path
) -> None:
    cli.ok("add", "keep", "proj.tasks.keep", "--every", "1m")
    cli.ok("add", "edit", "proj.tasks.edit", "--every", "1m")
    document = json.loads(cli.ok("export", "--search", "edit"))
    document["schedules"][0].update(every="5m", enabled=False)
    document["schedules"].append(
        {"name": "new", "task": "proj.tasks.new", "kind": "interval", "every": "30s", "args": "[1]"}
    )
    path = tmp_path / "in.json"
    path.write_text(json.dumps(document))

    report = json.loads(cli.ok("import", str(path), "--json"))

    assert report == {
        "created": ["new"],
        "updated": ["edit"],
        "unchanged": [],
        "dry_run": False,
        "unknown_tasks": {},
    }
    edited = json.loads(cli.ok("show", "edit", "--json"))
    assert (edited["every"], edited["state"]) == (300.0, "paused")
    assert json.loads(cli.ok("show", "new", "--json"))["args"] == [1]
    assert json.loads(cli.ok("show", "keep", "--json"))["every"] == 60.0


def test_import_refuses_a_file_that_changes_a_beat_schedule_entry_before_writing_anything(
    cli: Cli, tmp_path: Path
) -> None:
    cli.app.conf.beat_schedule = {"nightly": {"task": "proj.tasks.n", "schedule": 3600}}
    cli.ok("sync")
    document = json.loads(cli.ok("export"))
    paused = json.loads(json.dumps(document))
    document["schedules"][0]["every"] = "2h"
    document["schedules"].append(
        {"name": "new", "task": "proj.tasks.new", "kind": "interval", "every": "30s"}
    )
    document["calendars"] = [{"name": "closed", "timezone": "UTC", "dates": ["2030-12-25"]}]
    path, pause = tmp_path / "in.json", tmp_path / "pause.json"
    path.write_text(json.dumps(document))
    paused["schedules"][0]["enabled"] = False
    pause.write_text(json.dumps(paused))
    before = versions(cli)

    refused = cli.fails("import", str(path), code=1)
    dry_run = cli.fails("import", str(path), "--dry-run", code=1)
    after = versions(cli)
    pausing = json.loads(cli.ok("import", str(pause), "--json"))

    # The API's words; an import has no override (beat_schedule is the place to change it).
    assert refused == f"Error: {path}: {ConfigOwned('nightly').told(None)}" == dry_run
    assert after == before
    assert cli.ok("calendar", "list", "--json") == "[]\n"
    assert pausing["updated"] == ["nightly"]  # a pause survives a sync: allowed
    assert json.loads(cli.ok("show", "nightly", "--json"))["state"] == "paused"


def test_import_dry_run_says_what_would_change_and_changes_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text("schedules:\n- {name: a, task: proj.tasks.a, kind: interval, every: 1m}\n")

    out = cli.ok("import", str(path), "--dry-run")

    assert out == f"would import 1 schedules from {path}: created 1, updated 0, unchanged 0\n"
    assert cli.ok("list", "--json") == "[]\n"


def test_import_reads_stdin_and_export_writes_stdout(cli: Cli) -> None:
    cli.ok("add", "a", "proj.tasks.a", "--every", "1m")
    exported = cli.ok("export")
    cli.ok("remove", "a")

    out = cli.ok("import", "-", input=exported)

    assert out == "imported 1 schedules from <stdin>: created 1, updated 0, unchanged 0\n"
    assert cli.ok("export") == exported


def test_export_format_option_overrides_the_file_extension(cli: Cli, tmp_path: Path) -> None:
    cli.ok("add", "a", "proj.tasks.a", "--every", "1m")

    cli.ok("export", str(tmp_path / "out.txt"), "--format", "yaml")

    assert yaml.safe_load((tmp_path / "out.txt").read_text())["schedules"][0]["name"] == "a"


def test_a_yaml_timestamp_written_without_quotes_is_read_as_an_instant(
    cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(
        "schedules:\n- {name: a, task: t.a, kind: once, run_at: 2099-01-01 09:00:00+01:00}\n"
    )

    cli.ok("import", str(path))

    assert json.loads(cli.ok("show", "a", "--json"))["run_at"] == "2099-01-01T08:00:00Z"


BAD_FILES = [
    pytest.param("in.json", "{", "in.json: not valid JSON", id="not-json"),
    pytest.param("in.yaml", "a: [", "in.yaml: not valid YAML", id="not-yaml"),
    pytest.param("in.json", '{"schedules": 5}', 'expected {"version": 1', id="not-a-list"),
    pytest.param("in.json", '{"version": 2, "schedules": []}', "version=2", id="newer-version"),
    pytest.param("in.json", "[5]", "schedules[0]: expected an object", id="entry-not-an-object"),
    pytest.param(
        "in.json",
        '[{"name": "ok", "task": "t", "kind": "interval", "every": 60},'
        ' {"name": "bad", "task": "t", "kind": "cron", "cron": "61 * * * *"}]',
        "schedules[1] ('bad'): cron='61 * * * *': minute field '61'",
        id="bad-entry",
    ),
    pytest.param(
        "in.json",
        '[{"name": "ok", "task": "t", "kind": "interval", "every": 60, "colour": "red"}]',
        "schedules[0] ('ok'): colour='red': is not a schedule field",
        id="unknown-field",
    ),
    pytest.param(
        "in.json",
        '[{"name": "a", "task": "t", "kind": "interval", "every": 60},'
        ' {"name": "a", "task": "t", "kind": "interval", "every": 90}]',
        "schedules[1]: name 'a' appears twice",
        id="duplicate-name",
    ),
    pytest.param(
        "in.json",
        "[" * 100_000 + "]" * 100_000,
        "in.json: nested too deeply to read",
        id="json-nested-100000-deep",
    ),
    pytest.param(
        "in.yaml",
        "schedules: " + "[" * 100_000 + "]" * 100_000,
        "in.yaml: nested too deeply to read",
        id="yaml-nested-100000-deep",
    ),
]


def alias_bomb() -> str:
    """A "billion laughs": each anchor lists the one before 9 times, so the ``args`` of its one
    schedule stand for 9**10 strings (such a file grew past 1.5 GB on import)."""
    lines = ["a: &a [x,x,x,x,x,x,x,x,x]"]
    pairs = itertools.pairwise("abcdefghij")
    lines += [f"{n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]" for p, n in pairs]
    lines.append("schedules: [{name: b, task: t, kind: interval, every: 60, args: *j}]")
    return "\n".join(lines) + "\n"


ALIASED_FILES = [
    pytest.param(alias_bomb(), "found &a: YAML anchors and aliases", id="billion-laughs"),
    pytest.param(
        "base: &base {task: t, kind: interval, every: 60}\nschedules: [{<<: *base, name: a}]\n",
        "found &base: YAML anchors and aliases",
        id="merge-key",
    ),
    pytest.param(
        "schedules: [{name: a, task: t, kind: interval, every: 60, args: *nowhere}]\n",
        "found *nowhere: YAML anchors and aliases",
        id="alias-without-anchor",
    ),
]


@pytest.mark.parametrize(("filename", "text", "fragment"), BAD_FILES)
def test_a_bad_import_file_exits_1_and_writes_nothing(
    cli: Cli, tmp_path: Path, filename: str, text: str, fragment: str
) -> None:
    path = tmp_path / filename
    path.write_text(text)

    cli.fails("import", str(path), code=1, fragment=fragment)

    assert cli.ok("list", "--json") == "[]\n"


# A guard, not a timing claim: without the refusal the bomb takes minutes and gigabytes.
@pytest.mark.timeout(60)
@pytest.mark.parametrize(("text", "fragment"), ALIASED_FILES)
def test_a_yaml_file_with_anchors_or_aliases_is_refused_before_it_expands(
    cli: Cli, tmp_path: Path, text: str, fragment: str
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    assert path.stat().st_size < 512

    cli.fails("import", str(path), code=1, fragment=f"in.yaml: not valid YAML: {fragment}")

    assert cli.ok("list", "--json") == "[]\n"


def test_a_value_repeated_in_a_yaml_export_is_written_in_full_and_reads_back() -> None:
    options = {"queue": "q"}  # one object twice: PyYAML's safe_dump writes &id001 ... *id001
    forms = [{"name": "a", "options": options}, {"name": "b", "options": options}]

    text = dump({"version": 1, "schedules": forms}, "yaml")

    assert "&" not in text, text
    assert "*" not in text, text
    assert load(text, "yaml", "out.yaml") == forms


def test_a_missing_import_file_is_a_command_line_error(cli: Cli, tmp_path: Path) -> None:
    result = cli("import", str(tmp_path / "nope.json"))

    assert result.exit_code == 2
    assert "No such file or directory" in result.stderr


def test_a_stored_row_beat_cannot_use_is_named_when_exporting(cli: Cli, tmp_path: Path) -> None:
    cli.ok("add", "a", "proj.tasks.a", "--every", "1m")
    with Schedules(cli.app.conf.dbeat_database_url) as api, api.store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE dbeat_schedules SET args = '[1,' WHERE name = 'a'")

    cli.fails(
        "export",
        str(tmp_path / "out.json"),
        code=1,
        fragment="'a' cannot be exported: args='[1,': is not valid JSON",
    )

    assert not (tmp_path / "out.json").exists()


def test_a_stored_row_nested_too_deeply_to_decode_is_shown_as_stored_and_named_by_export(
    cli_any: Cli, tmp_path: Path
) -> None:
    cli_any.ok("add", "deep", "proj.tasks.a", "--every", "1m")
    cli_any.ok("add", "plain", "proj.tasks.b", "--every", "1m")
    deep = "[" * 30_000 + "]" * 30_000  # far past the recursion limit; fits MySQL's TEXT
    url = cli_any.app.conf.dbeat_database_url
    with Schedules(url) as api, api.store.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE dbeat_schedules SET args = :deep, kwargs = :deep WHERE name = 'deep'"),
            {"deep": deep},
        )

    with Schedules(url) as api:
        assert {i.name: (i.args, i.kwargs) for i in api.list()} == {
            "deep": (deep, deep),
            "plain": ([], {}),
        }
        assert api.get("deep").args == deep
    listed = json.loads(cli_any.ok("list", "--json"))
    assert {s["name"]: s["args"] for s in listed} == {"deep": deep, "plain": []}
    assert [line.split()[0] for line in cli_any.ok("list").splitlines()] == [
        "NAME",
        "deep",
        "plain",
    ]
    assert json.loads(cli_any.ok("show", "deep", "--json"))["args"] == deep
    assert deep in cli_any.ok("show", "deep")
    cli_any.fails(
        "export",
        str(tmp_path / "out.json"),
        code=1,
        fragment="schedule 'deep' cannot be exported: args='[[[[",
    )
    assert not (tmp_path / "out.json").exists()
    assert json.loads(cli_any.ok("export", "--search", "plain"))["schedules"][0]["name"] == "plain"


def test_import_shows_progress_on_a_terminal_only(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forms = [
        {"name": f"s{i}", "task": "proj.tasks.s", "kind": "interval", "every": 60} for i in range(3)
    ]
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"version": 1, "schedules": forms}))
    monkeypatch.setattr("celery_dbeat.cli._common.is_terminal", lambda: True)

    result = cli("import", str(path))

    assert result.exit_code == 0
    assert result.stdout == f"imported 3 schedules from {path}: created 3, updated 0, unchanged 0\n"
    assert result.stderr.startswith("importing")


def test_import_wakes_running_beats_once_for_the_whole_file(
    sqlite_url: str, tmp_path: Path, redis_url: str, redis_prefix: str
) -> None:
    cli = Cli(
        make_app(
            migrated(sqlite_url), dbeat_redis_url=redis_url, dbeat_redis_key_prefix=redis_prefix
        )
    )
    forms = [
        {"name": f"s{i}", "task": "proj.tasks.t", "kind": "interval", "every": 60} for i in range(5)
    ]
    path = tmp_path / "in.json"
    path.write_text(json.dumps(forms))
    client = redis.Redis.from_url(redis_url)
    listener = client.pubsub(ignore_subscribe_messages=True)
    listener.subscribe(f"{redis_prefix}changes")
    listener.get_message(timeout=1)  # the subscription confirmation

    cli.ok("import", str(path))
    cli.ok("import", str(path))  # nothing changes: no wake-up
    cli.ok("add", "one-more", "proj.tasks.t", "--every", "1m")
    messages = []
    while (message := listener.get_message(timeout=0.5)) is not None:
        messages.append(message["data"])
    listener.close()
    client.close()

    assert messages == [b"1", b"1"]


# Stored values that cannot be read (PostgreSQL's '-infinity', text that is no timestamp in SQLite)


def corrupt(cli: Cli, name: str, **columns: str) -> None:
    """Write ``columns`` of schedule ``name`` as raw SQL literals, as a hand edit would."""
    values = ", ".join(f"{column} = {value}" for column, value in columns.items())
    with Schedules(cli.app.conf.dbeat_database_url) as api, api.store.engine.begin() as conn:
        conn.exec_driver_sql(f"UPDATE dbeat_schedules SET {values} WHERE name = '{name}'")


@pytest.mark.parametrize(
    ("database_url", "column", "value", "given"),
    [
        pytest.param("postgresql", "start_at", "'infinity'", "", id="pg-start-at"),
        pytest.param("postgresql", "end_at", "'-infinity'", "", id="pg-end-at"),
        pytest.param(
            "postgresql", "run_at", "'infinity'", "2030-01-01T00:00:00+00:00", id="pg-run-at"
        ),
        pytest.param("sqlite", "start_at", "'garbage'", "", id="sqlite-start-at"),
        pytest.param(
            "sqlite",
            "run_at",
            "'2030-13-01 00:00:00'",
            "2030-01-01T00:00:00+00:00",
            id="sqlite-run-at",
        ),
    ],
    indirect=["database_url"],
)
def test_export_refuses_a_schedule_whose_instant_cannot_be_read_and_its_advice_works(
    cli_any: Cli, tmp_path: Path, column: str, value: str, given: str
) -> None:
    """Written as empty, the value would import as a schedule without its bound or instant."""
    cli_any.ok("add", "good", "proj.tasks.a", "--every", "1m")
    cli_any.ok("add", "bad", "proj.tasks.b", "--at", "2029-06-01T12:00:00Z")
    corrupt(cli_any, "bad", **{column: value})
    out = tmp_path / "out.json"

    error = cli_any.fails("export", str(out), code=1)

    option = "--at" if column == "run_at" else f"--{column.replace('_', '-')}"
    assert error.startswith(
        f"Error: cannot export schedule 'bad': the stored value of {column} cannot be read ("
    )
    assert f"Give the value again ('celery dbeat update bad {option} ...'" in error
    assert error.endswith("nothing was written")
    assert not out.exists()

    cli_any.ok("update", "bad", option, given)  # as the message says
    cli_any.ok("export", str(out))
    exported = {s["name"]: s for s in json.loads(out.read_text())["schedules"]}
    assert exported["bad"][column] == (given or None)
    again = Cli(make_app(migrated(f"sqlite:///{tmp_path / 'again.sqlite3'}")))
    again.ok("import", str(out))
    assert again.ok("export") == out.read_text()


def test_export_names_every_schedule_it_cannot_read(cli: Cli, tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        cli.ok("add", name, f"proj.tasks.{name}", "--every", "1m")
    corrupt(cli, "c", start_at="'soon'", end_at="'later'")
    corrupt(cli, "a", end_at="'2031-02-30 00:00:00'")

    error = cli.fails("export", str(tmp_path / "out.json"), code=1)

    assert error.startswith(
        "Error: cannot export 2 schedules whose stored values cannot be read: "
        "'a' (end_at: day is out of range for month: '2031-02-30 00:00:00'), 'c' (start_at: "
    )
    assert re.search(r"'c' \(start_at: [^;]*'soon'; end_at: [^)]*'later'\); a file", error)
    assert "Give the value again ('celery dbeat update NAME --end-at ...'" in error


@pytest.mark.parametrize(
    ("database_url", "next_run_at", "last_slot"),
    [
        pytest.param("postgresql", "'-infinity'", "'infinity'", id="postgresql"),
        pytest.param("sqlite", "'garbage'", "'2024-01-99 25:61:00'", id="sqlite"),
    ],
    indirect=["database_url"],
)
def test_a_schedule_whose_next_run_cannot_be_read_is_exported_whole(
    cli_any: Cli, next_run_at: str, last_slot: str
) -> None:
    """next_run_at and last_slot are beat's state, not the definition a file holds."""
    fill(cli_any)
    before = cli_any.ok("export")
    corrupt(cli_any, "every-90s", next_run_at=next_run_at, last_slot=last_slot)
    assert json.loads(cli_any.ok("show", "every-90s", "--json"))["state"] == "error"
    assert cli_any.ok("export") == before
