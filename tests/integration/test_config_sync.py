"""Copying the app's ``beat_schedule`` into the database, on every backend.

``SEMANTICS.md``: "Editing a spec recomputes next_run_at from the edit time in the same
transaction; the old slot never fires after the edit. Editing only args/options keeps
next_run_at." A new cron schedule first fires at its first matching slot after creation (or
``start_at``); a new interval one at ``anchor + every``. Re-enabling never fires "immediately".
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from celery import Celery
from celery.schedules import crontab, schedule

from celery_dbeat import Cron, Every, Once
from celery_dbeat.beat_schedule import definitions_from_app
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.errors import ConfigurationError
from celery_dbeat.store import Store
from celery_dbeat.store.sync import SyncReport, sync_config
from tests.integration.conftest import (
    START,
    MakeTicker,
    RecordingPublisher,
    Tables,
    at,
    run,
    task_id_of,
)

UTC = timezone.utc


def define(name: str, schedule: Any, **fields: Any) -> Definition:
    fields.setdefault("task", f"tasks.{name}")
    return Definition.create(name=name, schedule=schedule, **fields)


# Creating ----------------------------------------------------------------------------------------

CREATED = [
    # definition, next_run_at, enabled
    pytest.param(define("quarter", Cron("*/15 * * * *")), at("09:15"), True, id="cron"),
    pytest.param(define("ten", Every(600)), at("09:17"), True, id="interval-anchored-at-creation"),
    pytest.param(define("later", Every(600), start_at=at("10:00")), at("10:10"), True,
                 id="interval-anchored-at-start-at"),
    pytest.param(define("from-ten", Cron("*/15 * * * *"), start_at=at("10:00")), at("10:00"), True,
                 id="cron-from-start-at-inclusive"),
    pytest.param(define("paris", Cron("0 9 * * *", timezone="Europe/Paris")),
                 datetime(2024, 5, 7, 7, 0, tzinfo=UTC), True, id="cron-in-paris"),
    pytest.param(define("noon", Once(datetime(2024, 5, 6, 14, tzinfo=ZoneInfo("Europe/Paris")))),
                 at("12:00"), True, id="once"),
    pytest.param(define("off", Every(60), enabled=False), at("09:08"), False, id="disabled"),
]  # fmt: skip


@pytest.mark.parametrize(("definition", "next_run_at", "enabled"), CREATED)
def test_sync_creates_a_row_with_its_first_slot_after_the_sync_time(
    tables: Tables, definition: Definition, next_run_at: datetime, enabled: bool
) -> None:
    now = at("09:07")

    report = tables.sync([definition], now)

    assert report == SyncReport(created=[definition.name])
    row = tables.row(definition.name)
    assert (row.next_run_at, row.enabled, row.origin) == (next_run_at, enabled, "config")
    assert (row.version, row.run_count, row.created_at, row.updated_at) == (1, 0, now, now)
    assert row.anchor_at == (definition.start_at or now)
    assert (row.finished_at, row.last_error, row.last_slot) == (None, None, None)


def test_sync_stores_the_payload_as_json(tables: Tables) -> None:
    definition = define(
        "payload", Every(60), args=(1, "two"), kwargs={"b": 2, "a": [1]},
        options={"queue": "reports", "priority": 3},
    )  # fmt: skip

    tables.sync([definition], START)

    row = tables.row("payload")
    assert (row.task, row.args, row.kwargs) == ("tasks.payload", '[1, "two"]', '{"a": [1], "b": 2}')
    assert row.options == '{"priority": 3, "queue": "reports"}'


def test_a_once_schedule_already_past_is_created_finished(tables: Tables) -> None:
    tables.sync([define("gone", Once(at("08:00")))], at("09:07"))

    row = tables.row("gone")
    assert (row.enabled, row.next_run_at, row.finished_at) == (False, None, at("09:07"))


# Idempotence -------------------------------------------------------------------------------------

EVERYTHING = [
    define("cron", Cron("*/15 9-17 * * mon-fri", timezone="America/New_York")),
    define("interval", Every("1h30m"), start_at=at("08:00"), end_at=at("23:00")),
    define("once", Once(datetime(2024, 5, 7, 14, tzinfo=ZoneInfo("Europe/Paris")))),
    define("payload", Every(90), args=[1, {"x": None}], kwargs={"k": "v"},
           options={"queue": "q", "headers": {"h": 1}}),
    define("policies", Cron("@hourly"), misfire_policy="all", misfire_grace="90m",
           catchup_limit=5, max_runs=10),
    define("dst", Cron("30 2 * * *", timezone="Europe/London", dst_gap="skip", dst_fold="both")),
    define("off", Every(60), enabled=False),
]  # fmt: skip


def test_sync_is_idempotent(tables: Tables) -> None:
    first = tables.sync(EVERYTHING, at("09:07"))
    before = tables.rows()

    second = tables.sync(EVERYTHING, at("09:50"))

    assert first.created == [d.name for d in EVERYTHING]
    assert second == SyncReport(unchanged=[d.name for d in EVERYTHING])
    assert tables.rows() == before


@pytest.mark.parametrize(
    "database_url",
    [
        "sqlite",
        "postgresql",
        pytest.param("mysql"),
    ],
    indirect=True,
)
@pytest.mark.parametrize(
    "definition",
    [
        pytest.param(define("s", Every(3600.001)), id="every-3600.001s"),
        pytest.param(define("s", Every(1_234_567)), id="every-1234567s"),
        pytest.param(define("s", Cron("@hourly"), misfire_grace=1_234_567), id="grace-1234567s"),
    ],
)
def test_interval_lengths_and_grace_windows_survive_the_database_exactly(
    tables: Tables, definition: Definition
) -> None:
    tables.sync([definition], at("09:00"))

    row = tables.row("s")
    assert (row.every, row.misfire_grace) == (
        definition.spec.get("every"),
        definition.misfire_grace,
    )
    assert tables.sync([definition], at("09:05")) == SyncReport(unchanged=["s"])


# Edits -------------------------------------------------------------------------------------------

TIMING_EDITS = [
    # before, after, next_run_at after an edit at 09:07
    pytest.param(Cron("0 * * * *"), Cron("10 * * * *"), at("09:10"), id="cron-expression"),
    pytest.param(Cron("0 12 * * *"), Cron("0 12 * * *", timezone="Europe/Paris"), at("10:00"),
                 id="cron-zone"),
    pytest.param(Every(600), Every(900), at("09:22"), id="interval-re-anchored-at-the-edit"),
    pytest.param(Cron("0 * * * *"), Every(300), at("09:12"), id="cron-to-interval"),
    pytest.param(Every(3600), Once(at("09:30")), at("09:30"), id="interval-to-once"),
]  # fmt: skip


@pytest.mark.parametrize(("before", "after", "next_run_at"), TIMING_EDITS)
def test_changing_the_timing_recomputes_next_run_at_from_the_sync_time(
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    before: Any,
    after: Any,
    next_run_at: datetime,
) -> None:
    tables.sync([define("s", before)], START)
    old_next = tables.row("s").next_run_at

    report = tables.sync([define("s", after)], at("09:07"))

    assert report == SyncReport(updated=["s"])
    row = tables.row("s")
    assert (row.next_run_at, row.version, row.updated_at) == (next_run_at, 2, at("09:07"))
    assert row.anchor_at == at("09:07")
    # The old slot never fires after the edit.
    clock.set(at("09:07"))
    run(make_ticker(max_interval="1h", lock_ttl="2h"), clock, max(old_next, next_run_at))
    assert publisher.fires[0] == ("s", next_run_at)
    assert ("s", old_next) not in publisher.fires


PAYLOAD_EDITS = [
    pytest.param({"args": [2]}, id="args"),
    pytest.param({"kwargs": {"k": 2}}, id="kwargs"),
    pytest.param({"options": {"queue": "other"}}, id="options"),
    pytest.param({"task": "tasks.renamed"}, id="task"),
    pytest.param({"max_runs": 100}, id="max-runs"),
    pytest.param({"misfire_policy": "skip", "misfire_grace": "5m"}, id="misfire-policy"),
]


@pytest.mark.parametrize("edit", PAYLOAD_EDITS)
@pytest.mark.parametrize(
    "spec",
    [pytest.param(Every(600), id="interval"), pytest.param(Cron("*/10 * * * *"), id="cron")],
)
def test_changing_only_the_payload_keeps_next_run_at(
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    spec: Any,
    edit: dict[str, Any],
) -> None:
    tables.sync([define("s", spec, args=[1])], START)
    before = tables.row("s")

    report = tables.sync([define("s", spec, **{"args": [1], **edit})], at("09:07"))

    assert report == SyncReport(updated=["s"])
    after = tables.row("s")
    assert (after.next_run_at, after.anchor_at) == (before.next_run_at, before.anchor_at)
    assert after.version == before.version + 1
    clock.set(at("09:10"))
    make_ticker().tick()
    ((request, args, kwargs, options),) = publisher
    assert request.slot == at("09:10")
    sent = {"args": args, "kwargs": kwargs, "options": options, "task": request.task}
    for key, value in edit.items():
        if key in sent:
            assert sent[key] == value


# Removal, revival, ownership ---------------------------------------------------------------------


def test_an_entry_removed_from_config_is_disabled_and_comes_back_when_re_added(
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    keep, drop = define("keep", Every(300)), define("drop", Cron("*/10 * * * *"))
    tables.sync([keep, drop], START)
    ticker = make_ticker()
    run(ticker, clock, at("09:20"), step=timedelta(seconds=30))
    assert [slot for name, slot in publisher.fires if name == "drop"] == [
        at("09:10"), at("09:20"),
    ]  # fmt: skip

    removed = tables.sync([keep], at("09:21"))

    assert removed == SyncReport(unchanged=["keep"], disabled=["drop"])
    row = tables.row("drop")
    assert (row.enabled, row.origin) == (False, "config:removed")
    assert [f.slot for f in tables.fires("drop")] == [at("09:10"), at("09:20")]
    publisher.clear()
    run(ticker, clock, at("10:03"), step=timedelta(seconds=30))
    assert {name for name, _ in publisher.fires} == {"keep"}

    revived = tables.sync([keep, drop], at("10:03"))

    assert revived == SyncReport(updated=["drop"], unchanged=["keep"])
    row = tables.row("drop")
    assert (row.enabled, row.origin, row.next_run_at) == (True, "config", at("10:10"))
    publisher.clear()
    run(ticker, clock, at("10:10"), step=timedelta(seconds=30))
    assert [slot for name, slot in publisher.fires if name == "drop"] == [at("10:10")]
    assert len(tables.fires("drop")) == 3


def test_setting_enabled_false_in_config_pauses_and_true_resumes_without_the_paused_slots(
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    def entry(enabled: bool) -> Definition:
        return define("s", Cron("*/10 * * * *"), enabled=enabled)

    tables.sync([entry(True)], START)
    ticker = make_ticker()

    paused = tables.sync([entry(False)], at("09:05"))
    run(ticker, clock, at("09:45"), step=timedelta(minutes=1))
    resumed = tables.sync([entry(True)], at("09:45"))
    run(ticker, clock, at("10:00"), step=timedelta(minutes=1))

    assert (paused, resumed) == (SyncReport(updated=["s"]), SyncReport(updated=["s"]))
    assert publisher.fires == [("s", at("09:50")), ("s", at("10:00"))]


def test_a_name_owned_by_an_api_schedule_is_reported_as_a_conflict_and_left_alone(
    tables: Tables,
) -> None:
    tables.insert("shared", next_run_at=at("10:00"), task="tasks.by_hand", origin="api")
    before = tables.row("shared")

    report = tables.sync([define("shared", Every(60), task="tasks.from_config")], at("09:07"))
    emptied = tables.sync([], at("09:08"))

    assert report == SyncReport(conflicts=["shared"])
    assert emptied == SyncReport()
    assert tables.row("shared") == before


def test_an_empty_beat_schedule_disables_every_config_row(tables: Tables) -> None:
    tables.sync([define("a", Every(60)), define("b", Every(60))], START)

    report = tables.sync([], at("09:07"))

    assert report == SyncReport(disabled=["a", "b"])
    assert [(r.name, r.enabled) for r in tables.rows()] == [("a", False), ("b", False)]


# Racing beats ------------------------------------------------------------------------------------


def _race(
    store: Store, definitions: list[Definition], now: datetime, beats: int
) -> list[SyncReport]:
    barrier = threading.Barrier(beats, timeout=30)
    reports: list[SyncReport] = []
    errors: list[BaseException] = []

    def start_beat() -> None:
        try:
            barrier.wait()
            reports.append(sync_config(store, definitions, now))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start_beat) for _ in range(beats)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == [], errors
    return reports


def _tally(reports: list[SyncReport], kind: str) -> Counter[str]:
    return Counter(itertools.chain.from_iterable(getattr(r, kind) for r in reports))


@pytest.mark.parametrize("database_url", ["postgresql", "mysql", "sqlite"], indirect=True)
def test_beats_syncing_at_once_end_consistent(store: Store, tables: Tables) -> None:
    names = [f"s{n:02}" for n in range(30)]
    created = _race(store, [define(n, Every(60)) for n in names], START, beats=4)

    assert _tally(created, "created") == Counter(names)
    assert [r.name for r in tables.rows()] == names
    assert {r.version for r in tables.rows()} == {1}

    edited = _race(store, [define(n, Every(60), args=[2]) for n in names], at("09:05"), beats=4)

    assert _tally(edited, "updated") == Counter(names)
    assert {(r.version, r.args) for r in tables.rows()} == {(2, "[2]")}
    assert {r.next_run_at for r in tables.rows()} == {at("09:01")}


# Celery's beat_schedule --------------------------------------------------------------------------


def celery_app(beat_schedule: dict[str, Any], zone: str | None = "Europe/Paris") -> Celery:
    app = Celery("integration", set_as_current=False)
    app.conf.update(beat_schedule=beat_schedule, timezone=zone)
    return app


def celery_slots(entry: Any, zone: str, since: datetime, days: int) -> list[datetime]:
    """Instants after ``since`` matching ``entry`` as Celery reads it: every field must match."""
    tz = ZoneInfo(zone)
    local = since.astimezone(tz).replace(second=0, microsecond=0, tzinfo=None)
    found = []
    for minute in range(days * 24 * 60):
        wall = local + timedelta(minutes=minute + 1)
        if (
            wall.minute in entry.minute
            and wall.hour in entry.hour
            and wall.isoweekday() % 7 in entry.day_of_week
            and wall.day in entry.day_of_month
            and wall.month in entry.month_of_year
        ):
            found.append(wall.replace(tzinfo=tz).astimezone(UTC))
    return found


CRONTABS = [
    pytest.param(crontab(minute="*/15", hour="9-17", day_of_week="mon-fri"),
                 "*/15 9-17 * * mon-fri", id="quarter-hours-office-days"),
    pytest.param(crontab(minute=0, hour=[9, 17]), "0 9,17 * * *", id="hour-list"),
    pytest.param(crontab(minute=30, hour=4, day_of_month="1,15"), "30 4 1,15 * *",
                 id="day-of-month"),
    pytest.param(crontab(minute=0, hour=3, month_of_year="*/3", day_of_month=1),
                 "0 3 1 */3 *", id="quarterly"),
    pytest.param(crontab(minute=0, hour=9, day_of_week="mon", day_of_month="1-7"),
                 "0 9 1-7 * mon", id="first-monday"),
]  # fmt: skip


@pytest.mark.parametrize(("entry", "expr"), CRONTABS)
def test_a_celery_crontab_converts_to_the_same_cron_in_the_app_time_zone(
    entry: crontab, expr: str
) -> None:
    app = celery_app({"job": {"task": "tasks.job", "schedule": entry, "args": (1, 2)}})

    (definition,) = definitions_from_app(app)

    assert definition.spec["kind"] == "cron"
    assert (definition.spec["cron"], definition.spec["timezone"]) == (expr, "Europe/Paris")
    assert definition.args == [1, 2]
    since = datetime(2024, 1, 1, tzinfo=UTC)
    theirs = celery_slots(entry, "Europe/Paris", since, days=366)[:200]
    assert definition.timing(since).preview(since, len(theirs)) == theirs


def test_a_crontab_is_evaluated_in_utc_when_the_app_sets_no_time_zone() -> None:
    app = celery_app({"job": {"task": "t", "schedule": crontab(minute=0, hour=9)}}, zone=None)

    (definition,) = definitions_from_app(app)

    assert definition.spec["timezone"] == "UTC"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        pytest.param(schedule(timedelta(seconds=30)), 30.0, id="celery-schedule"),
        pytest.param(timedelta(minutes=5), 300.0, id="timedelta"),
        pytest.param(45, 45.0, id="int-seconds"),
        pytest.param(2.5, 2.5, id="float-seconds"),
        pytest.param(Every("1h"), 3600.0, id="dbeat-every"),
    ],
)
def test_intervals_and_plain_numbers_become_interval_schedules(value: Any, seconds: float) -> None:
    app = celery_app({"job": {"task": "tasks.job", "schedule": value}})

    (definition,) = definitions_from_app(app)

    assert definition.spec == {"kind": "interval", "every": seconds}


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        pytest.param({"task": "t", "schedule": "every day"}, "unsupported schedule type str",
                     id="string"),
        pytest.param({"task": "t", "schedule": object()}, "unsupported schedule type object",
                     id="object"),
        pytest.param({"task": "t", "schedule": True}, "unsupported schedule type bool",
                     id="boolean"),
        pytest.param({"schedule": 30}, "needs 'task' and 'schedule'", id="no-task"),
        pytest.param({"task": "t", "schedule": 30, "priority": 1}, "unknown key 'priority'",
                     id="unknown-key"),
        pytest.param({"task": "t", "schedule": 0.5}, "every", id="too-short"),
        pytest.param("tasks.t", "must be a dict", id="not-a-dict"),
    ],
)  # fmt: skip
def test_an_unsupported_entry_raises_a_configuration_error_naming_it(
    entry: Any, problem: str
) -> None:
    app = celery_app({"fine": {"task": "t", "schedule": 60}, "nightly-report": entry})

    with pytest.raises(ConfigurationError) as raised:
        definitions_from_app(app)

    assert raised.value.key == "beat_schedule['nightly-report']"
    assert "nightly-report" in str(raised.value)
    assert problem in str(raised.value)


def test_a_synced_celery_crontab_fires_at_the_app_zone_wall_time(
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    app = celery_app({
        "morning": {"task": "tasks.m", "schedule": crontab(minute=0, hour=9), "kwargs": {"a": 1}},
    })  # fmt: skip
    clock.set(datetime(2024, 5, 6, 6, 0, tzinfo=UTC))
    tables.sync(definitions_from_app(app), clock.now())

    ticker = make_ticker(max_interval="1d", lock_ttl="2d")
    run(ticker, clock, datetime(2024, 5, 7, 8, 0, tzinfo=UTC))

    paris_nine = [datetime(2024, 5, 6, 7, 0, tzinfo=UTC), datetime(2024, 5, 7, 7, 0, tzinfo=UTC)]
    assert publisher.fires == [("morning", t) for t in paris_nine]
    assert [r.task_id for r, *_ in publisher] == [task_id_of("morning", t) for t in paris_nine]
    assert {(r.task, str(kw)) for r, _, kw, _ in publisher} == {("tasks.m", "{'a': 1}")}


def test_an_entry_the_database_refuses_is_reported_and_the_others_are_synced(
    tables: Tables,
) -> None:
    """Before, the refusal failed the whole sync (and beat's start-up) however often it ran."""
    tables.refuse("INSERT", "dbeat_schedules", "name refused here", when="NEW.name = 'bad'")
    entries = [define(name, Every(60)) for name in ("a", "bad", "c")]

    report = tables.sync(entries, START)
    again = tables.sync(entries, at("09:07"))

    assert (report.created, list(report.refused)) == (["a", "c"], ["bad"])
    assert "name refused here" in report.refused["bad"]
    assert (again.unchanged, list(again.refused)) == (["a", "c"], ["bad"])
    assert [r.name for r in tables.rows()] == ["a", "c"]


# Streaming (issue 30: memory flat in the number of entries) --------------------------------------


def test_the_sync_takes_definitions_a_chunk_at_a_time_writing_each_before_reading_on(
    tables: Tables,
) -> None:
    """A beat's sync makes its definitions as it goes (``iter_definitions``): each chunk is
    written before the next is taken, so no more than a chunk or two are ever held. Before,
    every definition was made (and kept for the beat's life) before the first write."""
    from celery_dbeat.store.sync import CHUNK

    stored_when_taken: dict[int, int] = {}

    def entries() -> Iterator[Definition]:
        for i in range(3 * CHUNK):
            if i % CHUNK == 0:
                stored_when_taken[i] = len(tables.rows())
            yield define(f"e{i:05d}", Every(60), task="tasks.e")

    report = tables.sync(entries(), START)

    assert len(report.created) == 3 * CHUNK
    assert stored_when_taken == {0: 0, CHUNK: CHUNK, 2 * CHUNK: 2 * CHUNK}


def test_the_names_listed_decide_which_config_schedules_left_beat_schedule(
    store: Store,
) -> None:
    """Beat passes the app's own ``beat_schedule`` as ``listed`` (``EntryNames``), not a set of
    every name: a config schedule is disabled when its name is not in it, whatever the
    definitions applied."""
    from celery_dbeat.beat_schedule import EntryNames

    app = celery_app({
        name: {"task": f"tasks.{name}", "schedule": 60.0} for name in ("a", "b", "c")
    })  # fmt: skip
    sync_config(store, definitions_from_app(app), START, listed=EntryNames(app))
    del app.conf.beat_schedule["b"]

    only_a = (d for d in definitions_from_app(app) if d.name == "a")
    report = sync_config(store, only_a, at("09:07"), listed=EntryNames(app))

    # "c" was not applied this time, but it is listed: left as it is.
    assert (report.unchanged, report.disabled) == (["a"], ["b"])
    assert [(r.name, r.enabled) for r in Tables(store).rows()] == [
        ("a", True),
        ("b", False),
        ("c", True),
    ]
