"""``import --from redbeat``: entries that RedBeat itself stored in a real Redis (its
``RedBeatSchedulerEntry(...).save()``, its scheduler's start-up, its records of runs) become
schedules that fire when RedBeat would have fired them; an rrule or a relative interval that
celery-dbeat cannot express is refused by name, and importing twice changes nothing.

Each test has its own key prefix; every key under it is deleted afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from celery import Celery
from celery.schedules import crontab, schedule
from click.testing import Result
from redbeat import RedBeatSchedulerEntry
from redbeat.schedulers import RedBeatScheduler, get_redis
from redbeat.schedules import rrule

from celery_dbeat.api import Schedules
from tests.integration.cli.conftest import Cli, instant, shown

UTC = timezone.utc
#: RedBeat keeps a DTSTART's offset, not its zone.
PLUS_ONE = timezone(timedelta(hours=1))
FROM = ("import", "--from", "redbeat")
CONFIG = {"from-config": {"task": "proj.tasks.config", "schedule": timedelta(seconds=60)}}
LONG_NAME = "n" * 201
IMPORTED = (
    "ended",
    "hourly-relative",
    "last-of-month",
    "owed",
    "paused",
    "poll",
    "quarter-hours",
    "report",
)
REFUSED = {
    "drifting": "relative=True rounds each run down to the hour, so every=5400s drifts",
    "minutes-ahead": "DTSTART's UTC offset (5:30:00) is not whole hours",
    "linked": "unsupported option 'link'",
    LONG_NAME: "is longer than 200 characters",
}
SKIPPED = {
    "celery.backend_cleanup": "Celery's own daily result cleanup",
    "from-config": "RedBeat copied it from beat_schedule",
}


@dataclass
class Source:
    #: RedBeat sets its own attributes on it (``redbeat_conf``).
    app: Any
    now: datetime
    quarter_start: datetime

    def entry(self, name: str) -> Any:
        return RedBeatSchedulerEntry.from_key(self.app.redbeat_conf.key_prefix + name, app=self.app)

    def last_run_at(self, name: str) -> datetime:
        value: datetime = self.entry(name).last_run_at
        return value

    def next_fire(self, name: str) -> datetime:
        """RedBeat's own answer: not due, next in so many seconds from now."""
        asked = datetime.now(UTC)
        due, seconds = self.entry(name).is_due()
        assert due is False
        return asked + timedelta(seconds=seconds)


def save(app: Celery, name: str, task_schedule: Any, **fields: Any) -> Any:
    return RedBeatSchedulerEntry(
        name, f"proj.tasks.{name.replace('-', '_')}", task_schedule, app=app, **fields
    ).save()


@pytest.fixture
def redbeat_source(cli: Cli, redis_url: str, redis_prefix: str) -> Iterator[Source]:
    """RedBeat's entries under a private prefix, in the app the CLI runs for (Europe/Paris)."""
    app = cli.app
    app.conf.update(
        redbeat_redis_url=redis_url,
        redbeat_key_prefix=f"{redis_prefix}redbeat:",
        timezone="Europe/Paris",
        beat_schedule=CONFIG,
    )
    # RedBeat's start-up stores beat_schedule (noting it in :statics) and Celery's cleanup entry.
    RedBeatScheduler(app, lazy=True).setup_schedule()
    now = datetime.now(UTC).replace(microsecond=0)
    poll = save(
        app,
        "poll",
        schedule(timedelta(minutes=10)),
        args=[1, "x"],
        kwargs={"k": {"nested": True}},
        options={"queue": "io", "priority": 3, "expires": 60, "headers": {"trace": "t"}},
    )
    poll.reschedule(last_run_at=now - timedelta(minutes=2))  # RedBeat records a run
    report = save(app, "report", crontab(minute=30, hour=7, day_of_week="mon-fri"))
    next(report)  # a fire, recorded as RedBeat's beat records it (meta: last_run_at, count)
    hourly = save(app, "hourly-relative", schedule(timedelta(hours=1), relative=True))
    # Half way into this hour: due at the top of the next (Celery rounds last run + 1 h down).
    hour = now.replace(minute=0, second=0)
    hourly.reschedule(last_run_at=hour + (now - hour) / 2)
    owed = save(app, "owed", schedule(timedelta(minutes=1)))
    owed.reschedule(last_run_at=now - timedelta(minutes=10, seconds=30))
    # Every 15 minutes from an hour ago, the next occurrence 7.5 minutes from now.
    quarter_start = now - timedelta(minutes=52, seconds=30)
    save(
        app,
        "quarter-hours",
        rrule("MINUTELY", interval=15, dtstart=quarter_start, until=now + timedelta(days=30)),
    )
    save(app, "ended", rrule("HOURLY", dtstart=datetime(2020, 1, 1, tzinfo=UTC), count=3))
    save(app, "paused", crontab(minute=0, hour=3), enabled=False)
    # An rrule that is no interval, imported as the same rule from the same DTSTART:
    save(
        app,
        "last-of-month",
        rrule("MONTHLY", bymonthday=-1, byhour=18, dtstart=datetime(2024, 1, 1, tzinfo=PLUS_ONE)),
    )
    # Refused:
    save(
        app,
        "minutes-ahead",
        rrule(
            "DAILY",
            byhour=9,
            dtstart=datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        ),
    )
    save(app, "drifting", schedule(timedelta(minutes=90), relative=True))
    save(app, "linked", schedule(timedelta(hours=1)), options={"link": "proj.tasks.after"})
    save(app, LONG_NAME, schedule(timedelta(hours=1)))
    yield Source(app, now, quarter_start)
    get_redis(app).close()


def imported_json(cli: Cli, *more: str) -> tuple[Result, dict[str, Any]]:
    result = cli.run(*FROM, "--json", *more)
    return result, json.loads(result.stdout)


def test_a_dry_run_lists_every_entry_and_writes_nothing(cli: Cli, redbeat_source: Source) -> None:
    result = cli.run(*FROM, "--dry-run")

    lines = [line for line in result.stdout.splitlines() if not line[0].isspace()]
    actions = {line.split()[1]: line.split()[0] for line in lines[:-1]}
    assert actions == (
        dict.fromkeys(IMPORTED, "created")
        | dict.fromkeys(REFUSED, "refused")
        | dict.fromkeys(SKIPPED, "skipped")
    )
    assert lines[-1].startswith("would import (dry run, nothing written) 8 schedules from RedBeat")
    assert lines[-1].endswith("created 8, updated 0, unchanged 0, skipped 2, refused 4")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: 4 entries cannot be imported")
    with Schedules(cli.app.conf.dbeat_database_url) as api:
        assert api.list() == []


def test_each_kind_is_imported_with_its_options(cli: Cli, redbeat_source: Source) -> None:
    result, report = imported_json(cli)
    assert result.exit_code == 1
    assert sorted(report["created"]) == sorted(IMPORTED)

    poll = shown(cli, "poll")
    assert (poll["kind"], poll["every"], poll["args"], poll["kwargs"]) == (
        "interval",
        600.0,
        [1, "x"],
        {"k": {"nested": True}},
    )
    assert poll["options"] == {
        "queue": "io",
        "priority": 3,
        "expires": 60,
        "headers": {"trace": "t"},
    }
    cron = shown(cli, "report")
    # RedBeat stores no zone: Celery evaluates its crontabs in the app's timezone.
    assert (cron["cron"], cron["timezone"], cron["cron_days"]) == (
        "30 7 * * mon-fri",
        "Europe/Paris",
        "all",
    )
    quarters = shown(cli, "quarter-hours")
    assert quarters["every"] == 900.0
    # DTSTART has passed: the interval is anchored there, and no slot precedes it.
    assert instant(quarters["start_at"]) == redbeat_source.quarter_start
    assert instant(quarters["end_at"]) == redbeat_source.now + timedelta(days=30)
    ended = shown(cli, "ended")
    assert (ended["every"], ended["end_at"], ended["state"]) == (
        3600.0,
        "2020-01-01T02:00:00Z",  # COUNT=3: DTSTART and two more
        "finished",
    )
    last_of_month = shown(cli, "last-of-month")
    assert (last_of_month["kind"], last_of_month["timezone"]) == ("rrule", "Etc/GMT-1")
    assert last_of_month["rrule"] == (
        "DTSTART;TZID=Etc/GMT-1:20240101T000000\nRRULE:FREQ=MONTHLY;INTERVAL=1;BYMONTHDAY=-1;BYHOUR=18"
    )
    # RedBeat's own next occurrence (dateutil's), as an instant: 18:00 at +01:00.
    upcoming = rrule(
        "MONTHLY", bymonthday=-1, byhour=18, dtstart=datetime(2024, 1, 1, tzinfo=PLUS_ONE)
    )
    expected = upcoming.rrule.after(datetime.now(UTC))
    assert instant(last_of_month["next_run_at"]) == expected
    assert shown(cli, "paused")["state"] == "paused"
    assert report["refused"].keys() == REFUSED.keys()
    for name, reason in REFUSED.items():
        assert reason in report["refused"][name], report["refused"][name]
    for name, reason in SKIPPED.items():
        assert reason in report["skipped"][name], report["skipped"][name]


def test_imported_schedules_fire_next_when_redbeat_would_have(
    cli: Cli, redbeat_source: Source
) -> None:
    before = datetime.now(UTC)
    _, report = imported_json(cli)

    poll_last = redbeat_source.last_run_at("poll")
    assert instant(shown(cli, "poll")["next_run_at"]) == poll_last + timedelta(minutes=10)
    hourly = instant(shown(cli, "hourly-relative")["next_run_at"])
    # relative=True: Celery rounds last run + 1 h down to the hour.
    rounded = (redbeat_source.last_run_at("hourly-relative") + timedelta(hours=1)).replace(
        minute=0, second=0, microsecond=0
    )
    assert hourly == rounded
    for name in ("poll", "report", "hourly-relative", "quarter-hours"):
        stored = instant(shown(cli, name)["next_run_at"])
        assert stored is not None
        # RedBeat answers in seconds from its own clock: equal within a second.
        assert abs(stored - redbeat_source.next_fire(name)) < timedelta(seconds=1), name
        assert name not in report["notes"], report["notes"][name]
    # RedBeat owes "owed" a fire (its last run is 10.5 min old, it runs every minute); the
    # import does not send it, and keeps the grid of its last run.
    owed_last = redbeat_source.last_run_at("owed")
    owed = instant(shown(cli, "owed")["next_run_at"])
    assert owed is not None
    assert owed > before
    assert (owed - owed_last) % timedelta(minutes=1) == timedelta(0)
    assert report["notes"]["owed"][0].startswith(
        f"the source owes the fire of {(owed_last + timedelta(minutes=1)).isoformat()[:19]}Z"
    )


def test_importing_twice_changes_nothing_the_second_time(cli: Cli, redbeat_source: Source) -> None:
    imported_json(cli)
    with Schedules(cli.app.conf.dbeat_database_url) as api:
        first = {i.name: (i.version, i.next_run_at, i.updated_at) for i in api.list()}

    result, report = imported_json(cli)

    assert sorted(report["unchanged"]) == sorted(IMPORTED)
    assert (report["created"], report["updated"]) == ([], [])
    with Schedules(cli.app.conf.dbeat_database_url) as api:
        assert {i.name: (i.version, i.next_run_at, i.updated_at) for i in api.list()} == first
    assert result.exit_code == 1


def test_a_running_redbeat_is_named_and_its_entries_still_read(
    cli: Cli, redbeat_source: Source
) -> None:
    # The lock RedBeat's beat takes at start-up (acquire_distributed_beat_lock).
    lock = get_redis(redbeat_source.app).lock(redbeat_source.app.redbeat_conf.lock_key, timeout=60)
    assert lock.acquire(blocking=False)
    try:
        _, report = imported_json(cli, "--dry-run")
    finally:
        lock.release()

    lock_key = redbeat_source.app.redbeat_conf.lock_key
    assert report["warnings"] == [
        f"RedBeat's lock {lock_key} is held: a RedBeat beat is running; "
        "stop it before importing for real, or the fires it sends until then are sent again by "
        "celery-dbeat (docs/tutorial/migrating.md)"
    ]
    assert sorted(report["created"]) == sorted(IMPORTED)


def test_redbeat_falls_back_to_broker_url_and_the_prefix_can_be_given(
    cli: Cli, redbeat_source: Source, redis_url: str, redis_prefix: str
) -> None:
    prefix = redbeat_source.app.conf.redbeat_key_prefix
    del redbeat_source.app.conf["redbeat_redis_url"]
    redbeat_source.app.conf.update(broker_url=redis_url)
    redbeat_source.app.conf.redbeat_key_prefix = f"{redis_prefix}elsewhere:"

    _, configured = imported_json(cli, "--dry-run")
    _, given = imported_json(cli, "--dry-run", "--key-prefix", prefix)

    assert configured["created"] == []
    assert configured["warnings"] == [
        f"nothing is listed in {redis_prefix}elsewhere::schedule: is the key prefix "
        f"'{redis_prefix}elsewhere:' RedBeat's (redbeat_key_prefix, --key-prefix)?"
    ]
    assert sorted(given["created"]) == sorted(IMPORTED)
    assert given["source"] == f"RedBeat at {redis_url} ({prefix}*)"


def test_an_unreachable_redis_exits_4(cli: Cli, redbeat_source: Source) -> None:
    line = cli.fails(*FROM, "--source-url", "redis://127.0.0.1:1/0", code=4)

    assert line.startswith("Error: cannot read RedBeat's Redis redis://127.0.0.1:1/0: ")


@pytest.mark.parametrize(
    ("conf", "args", "line"),
    [
        pytest.param(
            {"broker_url": "amqp://guest:s3cret@127.0.0.1:5672//"},
            [],
            "Error: broker_url='amqp://guest:***@127.0.0.1:5672//': not a Redis URL, so "
            "RedBeat's entries are not there; give --source-url with the Redis RedBeat used "
            "(redis://HOST:6379/DB)",
            id="broker-url-amqp",
        ),
        pytest.param(
            {"redbeat_redis_url": "memory://", "broker_url": "redis://127.0.0.1:6379/0"},
            [],
            "Error: redbeat_redis_url='memory://': not a Redis URL, so RedBeat's entries are not "
            "there; give --source-url with the Redis RedBeat used (redis://HOST:6379/DB)",
            id="redbeat-redis-url",
        ),
        pytest.param(
            {},
            ["--source-url", "postgresql://beat:s3cret@db/proj"],
            "Error: --source-url='postgresql://beat:***@db/proj': not a Redis URL, so RedBeat's "
            "entries are not there; give --source-url with the Redis RedBeat used "
            "(redis://HOST:6379/DB)",
            id="source-url",
        ),
        pytest.param(
            {},
            ["--source-url", "redis://u:HEAD/TAIL@127.0.0.1:6379/0"],
            "Error: --source-url='redis://u:***@127.0.0.1:6379/0': the password (or another "
            "part before the '@') holds a '/', '?' or '#', which ends it early in a URL; "
            "percent-encode it (urllib.parse.quote(password, safe='')), and any '@' after the "
            "host",
            id="source-url-password-cut-in-two",
        ),
    ],
)
def test_a_url_that_is_not_redbeats_redis_exits_4_naming_where_it_came_from(
    cli: Cli, conf: dict[str, str], args: list[str], line: str
) -> None:
    cli.app.conf.update(conf)

    assert cli.fails(*FROM, *args, code=4) == line


def test_an_rrule_not_started_yet_keeps_dtstart_as_its_first_fire_and_says_why_start_at_is_before(
    cli: Cli, redis_url: str, redis_prefix: str
) -> None:
    app = cli.app
    app.conf.update(redbeat_redis_url=redis_url, redbeat_key_prefix=f"{redis_prefix}redbeat:")
    dtstart = (datetime.now(UTC) + timedelta(days=2)).replace(microsecond=0)
    save(app, "later", rrule("HOURLY", interval=2, dtstart=dtstart))

    _, report = imported_json(cli)

    later = shown(cli, "later")
    assert instant(later["start_at"]) == dtstart - timedelta(hours=2)
    assert instant(later["next_run_at"]) == dtstart
    assert report["notes"]["later"] == [
        f"start_at is one period (2h) before DTSTART ({dtstart.isoformat()[:19]}Z): an "
        "interval's first slot is one period after its start_at, so DTSTART itself stays an "
        "occurrence"
    ]
