"""``import --from django-celery-beat``: periodic tasks that django-celery-beat itself stored (its
models and migrations, in a process of its own: import_django_celery_beat_site.py) become
schedules that fire when django-celery-beat would have fired them, with their options; what
cannot be represented is refused by name, and importing twice changes nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from celery_dbeat.api import Schedules
from celery_dbeat.core.errors import ValidationError
from celery_dbeat.importers.celery_specs import crontab_spec
from tests.integration.cli.conftest import Cli, instant, make_app, migrated, shown
from tests.services import private_database

UTC = timezone.utc
SITE = Path(__file__).with_name("import_django_celery_beat_site.py")
CONFIG: dict[str, dict[str, Any]] = {"from-config": {"task": "proj.tasks.config", "every": 60}}
FROM = ("import", "--from", "django-celery-beat")


def create(url: str, scenario: dict[str, Any]) -> dict[str, Any]:
    """Run the scenario with django-celery-beat on ``url``; returns what it stored and said."""
    done = subprocess.run(
        [sys.executable, str(SITE), url],
        input=json.dumps(scenario),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    state: dict[str, Any] = json.loads(done.stdout)
    return state


@dataclass
class Source:
    url: str
    now: datetime
    #: What django-celery-beat stored, by task name, and when it said it would fire them.
    tasks: dict[str, Any]
    due: dict[str, Any]

    def last_run_at(self, name: str) -> datetime:
        value = instant(self.tasks[name]["last_run_at"])
        assert value is not None
        return value

    def next_fire(self, name: str) -> datetime:
        """django-celery-beat's own answer: asked at ``at``, due in ``in`` seconds."""
        asked = self.due[name]
        assert asked["due"] is False
        at = instant(asked["at"])
        assert at is not None
        return at + timedelta(seconds=asked["in"])


def scenario(now: datetime) -> dict[str, Any]:
    day = timedelta(days=1)
    iso = datetime.isoformat
    return {
        "beat_schedule": CONFIG,
        "setup_scheduler": True,  # stores from-config and its own celery.backend_cleanup
        "tasks": [
            {
                "name": "poll",
                "task": "proj.tasks.poll",
                "interval": {"every": 10, "period": "minutes"},
                "args": '[1, "x"]',
                "kwargs": '{"k": {"nested": true}}',
                "queue": "io",
                "priority": 5,
                "headers": '{"trace": "abc"}',
                "expire_seconds": 300,
                "description": "polls the feed",
            },
            {
                "name": "report",
                "task": "proj.tasks.report",
                "crontab": {
                    "minute": "30",
                    "hour": "7",
                    "day_of_week": "1-5",
                    "timezone": "Europe/Paris",
                },
                "exchange": "reports",
                "routing_key": "r.daily",
                "last_run_at": iso(now),
            },
            {  # Celery wraps fri-sun around the week; celery-dbeat's parser would refuse it.
                "name": "weekend",
                "task": "proj.tasks.weekend",
                "crontab": {
                    "minute": "0",
                    "hour": "9",
                    "day_of_week": "fri-sun",
                    "timezone": "America/New_York",
                },
            },
            {
                "name": "sunset",
                "task": "proj.tasks.lights",
                "solar": {"event": "sunset", "latitude": "48.858844", "longitude": "2.294351"},
                "last_run_at": iso(now),
            },
            {
                "name": "launch",
                "task": "proj.tasks.launch",
                "clocked": {"clocked_time": iso(now + 2 * day)},
                "one_off": True,
            },
            {  # ran, then disabled by django-celery-beat itself (check)
                "name": "launched",
                "task": "proj.tasks.launch",
                "clocked": {"clocked_time": iso(now - day)},
                "one_off": True,
            },
            {  # its time passed while no beat ran: the source owes it
                "name": "missed",
                "task": "proj.tasks.launch",
                "clocked": {"clocked_time": iso(now - timedelta(hours=1))},
                "one_off": True,
            },
            {  # ran once; django-celery-beat has not looked at it since
                "name": "one-off-ran",
                "task": "proj.tasks.once",
                "interval": {"every": 1, "period": "hours"},
                "one_off": True,
            },
            {
                "name": "one-off-waiting",
                "task": "proj.tasks.once",
                "interval": {"every": 1, "period": "hours"},
                "one_off": True,
                "last_run_at": iso(now),
            },
            {
                "name": "paused",
                "task": "proj.tasks.paused",
                "crontab": {"minute": "0", "hour": "3", "timezone": "UTC"},
                "enabled": False,
            },
            {
                "name": "later",
                "task": "proj.tasks.later",
                "interval": {"every": 1, "period": "days"},
                "start_time": iso(now + 3 * day),
            },
            {
                "name": "bounded",
                "task": "proj.tasks.bounded",
                "crontab": {"minute": "0", "hour": "12", "day_of_month": "1", "timezone": "UTC"},
                "expires": iso(now + 90 * day),
                "last_run_at": iso(now),
            },
            {
                "name": "n" * 200,
                "task": "proj.tasks.long",
                "interval": {"every": 1500000, "period": "microseconds"},
                "last_run_at": iso(now),
            },
            # Refused:
            {
                "name": "sunday",
                "task": "proj.tasks.sunday",
                "crontab": {"minute": "0", "hour": "3", "day_of_week": "7"},
            },
            {
                "name": "too-fast",
                "task": "proj.tasks.fast",
                "interval": {"every": 500000, "period": "microseconds"},
            },
            {
                "name": "reserved-header",
                "task": "proj.tasks.h",
                "interval": {"every": 1, "period": "hours"},
                "headers": '{"task": "other"}',
            },
            {
                "name": "bad-args",
                "task": "proj.tasks.a",
                "interval": {"every": 1, "period": "hours"},
                "args": "[1, 2",
            },
            {
                "name": "long-expiry",
                "task": "proj.tasks.e",
                "interval": {"every": 1, "period": "hours"},
                "expire_seconds": 40 * 24 * 3600,
            },
        ],
        "fire": ["poll", "launched", "one-off-ran"],
        "check": ["launched"],
        "ask": ["poll", "report", "weekend", "sunset", "launch", "later", "bounded"],
    }


REFUSED = {
    "sunday": "Celery's crontab refuses it (Invalid end range: 7 > 6.)",
    "too-fast": "interval every 500000 microseconds: every=0.5: must be at least 1 s",
    "reserved-header": "options.headers='task': is a header Celery or celery-dbeat sets itself",
    "bad-args": "args='[1, 2' is not valid JSON",
    "long-expiry": "options.expires=3456000: must be at most 2,678,400 seconds (31 days)",
}
SKIPPED = ("celery.backend_cleanup", "from-config")
IMPORTED = (
    "bounded",
    "later",
    "launch",
    "launched",
    "missed",
    "n" * 200,
    "one-off-ran",
    "one-off-waiting",
    "paused",
    "poll",
    "report",
    "sunset",
    "weekend",
)


@pytest.fixture(scope="module")
def django_celery_beat_source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Source]:
    """A private PostgreSQL database holding django-celery-beat's tables and the scenario."""
    with private_database("postgresql", tmp_path_factory) as url:
        now = datetime.now(UTC).replace(microsecond=0)
        state = create(url, scenario(now))
        yield Source(url, now, state["tasks"], state["due"])


@pytest.fixture
def cli(cli: Cli) -> Cli:
    """Overrides tests/integration/cli/conftest.py's ``cli`` on purpose, for every test here:
    the same CLI on a private SQLite database, its app's ``beat_schedule`` holding
    :data:`CONFIG`, as the project's Celery config does beside django-celery-beat's rows."""
    cli.app.conf.beat_schedule = {
        name: {"task": entry["task"], "schedule": timedelta(seconds=entry["every"])}
        for name, entry in CONFIG.items()
    }
    return cli


def imported_json(cli: Cli, source: Source, *more: str) -> tuple[Result, dict[str, Any]]:
    result = cli.run(*FROM, "--source-url", source.url, "--json", *more)
    return result, json.loads(result.stdout)


def test_a_dry_run_lists_every_entry_and_writes_nothing(
    cli: Cli, django_celery_beat_source: Source
) -> None:
    result = cli.run(*FROM, "--source-url", django_celery_beat_source.url, "--dry-run")

    lines = result.stdout.splitlines()
    actions = {line.split()[1]: line.split()[0] for line in lines if not line[0].isspace()}
    assert {name for name, action in actions.items() if action == "created"} == set(IMPORTED)
    assert {n for n, a in actions.items() if a == "refused"} == set(REFUSED)
    assert {n for n, a in actions.items() if a == "skipped"} == set(SKIPPED)
    assert lines[-1] == (
        "would import (dry run, nothing written) 13 schedules from django-celery-beat at "
        f"{django_celery_beat_source.url}: created 13, updated 0, unchanged 0, skipped 2, refused 5"
    )
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "Error: 5 entries cannot be imported (see the reasons above): 'bad-args', "
        "'long-expiry', 'reserved-header', 'sunday', 'too-fast'"
    ]
    with Schedules(cli.app.conf.dbeat_database_url) as api:
        assert api.list() == []


def test_every_kind_is_imported_with_its_options(
    cli: Cli, django_celery_beat_source: Source
) -> None:
    result, report = imported_json(cli, django_celery_beat_source)
    assert result.exit_code == 1
    assert sorted(report["created"]) == sorted(IMPORTED)

    poll = shown(cli, "poll")
    assert (poll["task"], poll["kind"], poll["every"]) == ("proj.tasks.poll", "interval", 600.0)
    assert (poll["args"], poll["kwargs"]) == ([1, "x"], {"k": {"nested": True}})
    assert poll["options"] == {
        "queue": "io",
        "priority": 5,
        "expires": 300,  # expire_seconds
        # django-celery-beat names each message after its task; the header goes on.
        "headers": {"trace": "abc", "periodic_task_name": "poll"},
    }
    assert report["notes"]["poll"] == [
        "its description is not carried over (celery-dbeat keeps none)"
    ]
    report_ = shown(cli, "report")
    assert (report_["kind"], report_["cron"], report_["timezone"], report_["cron_days"]) == (
        "cron",
        "30 7 * * 1-5",
        "Europe/Paris",
        "all",  # Celery's crontab: both day fields must match
    )
    assert report_["options"] == {
        "exchange": "reports",
        "routing_key": "r.daily",
        "headers": {"periodic_task_name": "report"},
    }
    weekend = shown(cli, "weekend")
    assert (weekend["cron"], weekend["timezone"]) == ("0 9 * * 0,5-6", "America/New_York")
    sunset = shown(cli, "sunset")
    assert (sunset["solar_event"], sunset["latitude"], sunset["longitude"]) == (
        "sunset",
        48.858844,
        2.294351,
    )
    launch = shown(cli, "launch")
    assert (launch["kind"], launch["run_at"], launch["state"]) == (
        "once",
        (django_celery_beat_source.now + timedelta(days=2)).isoformat().replace("+00:00", "Z"),
        "active",
    )
    tiny = shown(cli, "n" * 200)
    assert tiny["every"] == 1.5  # 1,500,000 microseconds, exactly
    bounded = shown(cli, "bounded")
    expires = django_celery_beat_source.now + timedelta(days=90)
    # django-celery-beat fires nothing at or after expires; end_at is inclusive.
    assert instant(bounded["end_at"]) == expires - timedelta(microseconds=1)

    states = {name: shown(cli, name)["state"] for name in IMPORTED}
    assert states == dict.fromkeys(IMPORTED, "active") | {
        "launched": "finished",  # ran; its time is past
        "missed": "finished",  # its time passed unfired
        "one-off-ran": "paused",  # django-celery-beat would disable it at its next look
        "paused": "paused",
    }
    assert {name: shown(cli, name)["max_runs"] for name in ("one-off-ran", "one-off-waiting")} == {
        "one-off-ran": 1,
        "one-off-waiting": 1,
    }


def test_imported_schedules_fire_next_when_django_celery_beat_would_have(
    cli: Cli, django_celery_beat_source: Source
) -> None:
    before = datetime.now(UTC)
    _, report = imported_json(cli, django_celery_beat_source)

    poll_last = django_celery_beat_source.last_run_at(
        "poll"
    )  # its fire, recorded by django-celery-beat
    assert instant(shown(cli, "poll")["start_at"]) == poll_last
    assert instant(shown(cli, "poll")["next_run_at"]) == poll_last + timedelta(minutes=10)
    start = instant(django_celery_beat_source.tasks["later"]["start_time"])
    assert start is not None
    assert instant(shown(cli, "later")["next_run_at"]) == start  # first fire at start_time
    for name in ("poll", "report", "weekend", "sunset", "launch", "later", "bounded"):
        # django-celery-beat answers in seconds from its own clock (a solar event to the
        # microsecond, celery-dbeat's to the second): equal within a second.
        stored = instant(shown(cli, name)["next_run_at"])
        assert stored is not None
        assert abs(stored - django_celery_beat_source.next_fire(name)) < timedelta(seconds=1), name
        timing = [n for n in report["notes"].get(name, []) if n.startswith("the source")]
        assert timing == [], name
    # An interval keeps its grid: last run + n * period, n >= 1, even after a slot was missed.
    long_name = "n" * 200
    tiny = instant(shown(cli, long_name)["next_run_at"])
    assert tiny is not None
    assert tiny > before
    steps = (tiny - django_celery_beat_source.last_run_at(long_name)) / timedelta(seconds=1.5)
    assert steps == int(steps) >= 1
    owed = django_celery_beat_source.now - timedelta(hours=1)
    assert report["notes"]["missed"][0].startswith(
        f"the source owes the fire of {owed.isoformat()[:19]}"
    )


def test_importing_twice_changes_nothing_the_second_time(
    cli: Cli, django_celery_beat_source: Source
) -> None:
    imported_json(cli, django_celery_beat_source)
    with Schedules(cli.app.conf.dbeat_database_url) as api:
        first = {i.name: (i.version, i.next_run_at, i.updated_at) for i in api.list()}

    result, report = imported_json(cli, django_celery_beat_source)

    assert sorted(report["unchanged"]) == sorted(IMPORTED)
    assert (report["created"], report["updated"]) == ([], [])
    with Schedules(cli.app.conf.dbeat_database_url) as api:
        assert {i.name: (i.version, i.next_run_at, i.updated_at) for i in api.list()} == first
    assert result.exit_code == 1  # the refused entries are still refused


def test_refused_entries_are_named_with_their_reason_and_the_rest_imported(
    cli: Cli, django_celery_beat_source: Source
) -> None:
    result = cli.run(*FROM, "--source-url", django_celery_beat_source.url)

    assert result.exit_code == 1
    assert result.stderr.startswith("Error: 5 entries cannot be imported")
    lines = {line.split()[1]: line for line in result.stdout.splitlines() if line[0] != " "}
    for name, reason in REFUSED.items():
        assert lines[name].startswith("refused "), lines[name]
        assert reason in lines[name], lines[name]
    assert "django-celery-beat's own daily result cleanup" in lines["celery.backend_cleanup"]
    assert "in this app's beat_schedule" in lines["from-config"]
    with Schedules(cli.app.conf.dbeat_database_url) as api:
        assert sorted(i.name for i in api.list()) == sorted(IMPORTED)


def test_the_source_is_the_dbeat_database_unless_told_otherwise(
    django_celery_beat_source: Source,
) -> None:
    # A Django project's dbeat tables usually sit beside django-celery-beat's.
    cli = Cli(make_app(migrated(django_celery_beat_source.url)))
    result = cli.run(*FROM, "--dry-run", "--json")

    assert sorted(json.loads(result.stdout)["created"]) == sorted([*IMPORTED, "from-config"])


def test_naive_timestamps_of_sqlite_are_read_as_utc_or_in_the_zone_given(
    cli: Cli, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'django.sqlite3'}"
    last = datetime(2020, 1, 6, 12, 0, tzinfo=UTC)
    create(
        url,
        {
            "tasks": [
                {  # a cleanup entry the user changed: theirs, imported
                    "name": "celery.backend_cleanup",
                    "task": "celery.backend_cleanup",
                    "crontab": {"minute": "0", "hour": "3"},
                    "expire_seconds": 43200,
                },
                {
                    "name": "daily",
                    "task": "proj.tasks.daily",
                    "interval": {"every": 1, "period": "days"},
                    "last_run_at": last.isoformat(),
                },
            ]
        },
    )
    result, utc = imported_json(cli, Source(url, last, {}, {}), "--dry-run")
    assert result.exit_code == 0, result.output
    _, tokyo = imported_json(
        cli, Source(url, last, {}, {}), "--dry-run", "--source-timezone", "Asia/Tokyo"
    )

    assert utc["created"] == ["celery.backend_cleanup", "daily"]
    next_utc, next_tokyo = (instant(r["next_run_at"]["daily"]) for r in (utc, tokyo))
    assert next_utc is not None
    assert next_tokyo is not None
    assert (next_utc - last) % timedelta(days=1) == timedelta(0)
    # 12:00 read in Tokyo is 03:00 UTC: the same daily grid, nine hours earlier.
    assert (next_utc - next_tokyo) % timedelta(days=1) == timedelta(hours=9)


def test_a_database_without_django_celery_beat_exits_4(cli: Cli) -> None:
    url = cli.app.conf.dbeat_database_url
    line = cli.fails(*FROM, "--source-url", url, code=4)

    assert line == (
        f"Error: cannot read django-celery-beat's tables at {url}: no "
        "django_celery_beat_periodictask table: give --source-url with the database "
        "django-celery-beat uses (Django's DATABASES)"
    )


def test_an_unreachable_source_database_exits_4(cli: Cli) -> None:
    url = "postgresql+psycopg://someone:secret@127.0.0.1:1/none"
    line = cli.fails(*FROM, "--source-url", url, code=4)

    assert line.startswith(
        "Error: cannot read django-celery-beat's tables at "
        "postgresql+psycopg://someone:***@127.0.0.1:1/none: "
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        pytest.param(("schedules.json", "--from", "redbeat"), "not both", id="file-and-from"),
        pytest.param((), "give a FILE, or --from", id="neither"),
        pytest.param(("schedules.json", "--source-url", "redis://"), "applies to --from", id="url"),
        pytest.param((*FROM[1:], "--key-prefix", "p:"), "--from redbeat only", id="prefix"),
        pytest.param((*FROM[1:], "--format", "yaml"), "FILE only", id="format"),
    ],
)
def test_malformed_import_command_lines_exit_2(
    cli: Cli, tmp_path: Path, args: tuple[str, ...], fragment: str
) -> None:
    (tmp_path / "schedules.json").write_text('{"version": 1, "schedules": []}')
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        result = cli("import", *args)
    assert result.exit_code == 2, result.output
    assert fragment in result.stderr


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param({"minute": "*/15"}, "*/15 * * * *", id="steps-kept"),
        pytest.param({"day_of_week": "mon-fri"}, "* * * * mon-fri", id="names-kept"),
        pytest.param({"day_of_week": "fri-sun"}, "* * * * 0,5-6", id="wrapped-range"),
        pytest.param({"day_of_week": "sunday"}, "* * * * 0", id="full-day-name"),
        pytest.param({"day_of_week": "0-6"}, "* * * * 0-6", id="whole-week"),
        pytest.param({"hour": "0-23/6", "minute": 0}, "0 0-23/6 * * *", id="number-field"),
        pytest.param({"minute": [0, 30]}, "0,30 * * * *", id="list-field"),
        pytest.param({"month_of_year": "*/3"}, "* * * */3 *", id="month-steps"),
    ],
)
def test_crontab_fields_keep_their_text_where_both_parsers_agree(
    fields: dict[str, Any], expected: str
) -> None:
    assert crontab_spec(fields, "UTC").expr == expected


@pytest.mark.parametrize("day_of_week", ["7", "0,7", "5-7"])
def test_a_crontab_celery_refuses_is_refused(day_of_week: str) -> None:
    with pytest.raises(ValidationError, match="Celery's crontab refuses it"):
        crontab_spec({"day_of_week": day_of_week}, "UTC")
