"""Time rules end to end: real databases, a Ticker, and a clock that only moves when told.

Sentences of ``SEMANTICS.md`` checked here: ``once`` schedules sharing an instant all fire; slots
are UTC whatever the process or database session zone; a jittered fire is published once, at its
``fire_at``, keyed by its slot; pausing and resuming never fires the pause's slots unless asked
to, and never fires "immediately" by accident; a timing edit recomputes ``next_run_at`` from the
edit time and the old slot never fires, an args edit keeps it.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat import Cron, Every, Once, api
from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import PublishRequest
from celery_dbeat.core.timing.jitter import fire_at
from celery_dbeat.locks import DatabaseLock
from celery_dbeat.store import Store, migrate
from celery_dbeat.store.database import create_engine
from tests.integration.conftest import (
    START,
    MakeTicker,
    RecordingPublisher,
    Tables,
    at,
    fires,
    published,
    run,
    settings,
    slots,
    task_id_of,
    uid_of,
)

UTC = timezone.utc
#: Beat settings that let ``run`` sleep straight to the next due instant.
LONG_SLEEPS = {"max_interval": "1h", "lock_ttl": "2h"}


def recorded(tables: Tables, name: str, status: str = "sent") -> list[datetime]:
    return [f.slot for f in tables.fires(name) if f.status == status]


# (a) once schedules sharing an instant --------------------------------------------------------


def test_once_schedules_at_the_same_instant_all_fire_each_exactly_once(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    names = [f"once-{n}" for n in range(7)]
    tables.sync(
        [Definition.create(name=n, task=f"tasks.{n}", schedule=Once(at("09:30"))) for n in names],
        START,
    )
    # Fewer per batch than share the instant: the rest must come in the following batches.
    ticker = make_ticker(batch_size=3, **LONG_SLEEPS)

    run(ticker, clock, at("10:30"))

    assert sorted(published(publisher)) == sorted(
        fire for name in names for fire in fires(name, [at("09:30")])
    )
    for name in names:
        row = tables.row(name)
        assert recorded(tables, name) == [at("09:30")]
        assert (row.enabled, row.next_run_at, row.run_count) == (False, None, 1)
        assert row.finished_at == at("09:30")


# (b) slots are UTC whatever the process and session zones -------------------------------------


@pytest.fixture
def kathmandu_process() -> Iterator[None]:
    """The process's local zone (``TZ``) at UTC+05:45, restored after."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Kathmandu"
    time.tzset()
    try:
        yield
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()


#: The session zone every connection of the zoned store sets (SQLite has none).
SESSION_ZONE = {"postgresql": "Pacific/Chatham", "mysql": "+05:45"}


@pytest.fixture
def zoned_store(database_url: str) -> Iterator[Store]:
    """A migrated store whose every connection runs in a non-UTC session time zone."""
    engine = create_engine(database_url)
    dialect = engine.dialect.name
    if dialect != "sqlite":

        @sa.event.listens_for(engine, "connect")
        def _set_zone(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            if dialect == "postgresql":
                cursor.execute(f"SET TIME ZONE '{SESSION_ZONE[dialect]}'")
            else:
                cursor.execute(f"SET time_zone = '{SESSION_ZONE['mysql']}'")
            cursor.close()
            if dialect == "postgresql":
                dbapi_connection.commit()  # else the pool's reset rolls the SET back

    store = Store(engine, server_clock=False)  # the test's FixedClock times writes and leases
    migrate(engine)
    yield store
    engine.dispose()


def _session_zone(store: Store) -> str | None:
    with store.engine.connect() as conn:
        if store.engine.dialect.name == "postgresql":
            return str(conn.execute(sa.text("SHOW TIME ZONE")).scalar())
        if store.engine.dialect.name in ("mysql", "mariadb"):
            return str(conn.execute(sa.text("SELECT @@session.time_zone")).scalar())
    return None


def test_cron_and_interval_slots_are_the_same_utc_instants_on_every_backend_and_zone(
    kathmandu_process: None, zoned_store: Store
) -> None:
    assert time.localtime(START.timestamp()).tm_gmtoff == 5 * 3600 + 45 * 60
    assert _session_zone(zoned_store) == SESSION_ZONE.get(zoned_store.engine.dialect.name)
    tables = Tables(zoned_store)
    anchor = START + timedelta(seconds=7, microseconds=250_000)

    def cron(name: str, expr: str, zone: str) -> Definition:
        return Definition.create(name=name, task="t", schedule=Cron(expr, timezone=zone))

    tables.sync(
        [
            cron("every-20m", "*/20 * * * *", "UTC"),
            cron("kathmandu-9am", "0 9 * * *", "Asia/Kathmandu"),
            cron("chatham-midnight", "0 0 * * *", "Pacific/Chatham"),
            Definition.create(name="every-25m", task="t", schedule=Every(1500), start_at=anchor),
        ],
        START,
    )
    clock, publisher = FixedClock(START), RecordingPublisher()
    end = datetime(2024, 5, 7, 12, 0, tzinfo=UTC)

    run(Ticker(zoned_store, DatabaseLock(), publisher, settings(**LONG_SLEEPS), clock), clock, end)

    expected = {
        "every-20m": slots(at("09:20"), timedelta(minutes=20), end),
        # 09:00 at UTC+05:45 is 03:15Z.
        "kathmandu-9am": [datetime(2024, 5, 7, 3, 15, tzinfo=UTC)],
        # Midnight at UTC+12:45 (Chatham standard time in May) is 11:15Z the day before.
        "chatham-midnight": [
            datetime(2024, 5, 6, 11, 15, tzinfo=UTC),
            datetime(2024, 5, 7, 11, 15, tzinfo=UTC),
        ],
        "every-25m": slots(anchor + timedelta(seconds=1500), timedelta(seconds=1500), end),
    }
    assert len(expected["every-20m"]) == 81
    assert len(expected["every-25m"]) == 64
    for name, instants in expected.items():
        assert recorded(tables, name) == instants, name
        assert [f.task_id for f in tables.fires(name)] == [
            task_id_of(name, t, store=zoned_store) for t in instants
        ]
        assert all(f.slot.utcoffset() == timedelta(0) for f in tables.fires(name))
    assert sorted(published(publisher)) == sorted(
        fire for name, instants in expected.items() for fire in fires(name, instants, zoned_store)
    )
    assert tables.row("every-20m").next_run_at == datetime(2024, 5, 7, 12, 20, tzinfo=UTC)
    assert tables.row("kathmandu-9am").next_run_at == datetime(2024, 5, 8, 3, 15, tzinfo=UTC)
    assert tables.row("every-25m").next_run_at == expected["every-25m"][-1] + timedelta(
        seconds=1500
    )


# (c) jitter through two beats ------------------------------------------------------------------


class TimedPublisher(list[tuple[datetime, PublishRequest]]):
    """A broker that notes when (on the test clock) each fire reached it."""

    def __init__(self, clock: FixedClock) -> None:
        super().__init__()
        self.clock = clock

    def __call__(self, request: PublishRequest, *payload: Any) -> None:
        self.append((self.clock.now(), request))


def test_a_jittered_schedule_fires_once_per_slot_at_its_fire_at_through_two_beats(
    store: Store, open_store: Callable[[], Store], tables: Tables
) -> None:
    jitters: dict[str, tuple[Cron | Every, float]] = {
        "every-2m": (Every(120), 100.0),
        "five-minutely": (Cron("*/5 * * * *"), 900.0),  # wider than the 5 min gap
    }
    tables.sync(
        [
            Definition.create(name=name, task="t", schedule=spec, jitter=jitter)
            for name, (spec, jitter) in jitters.items()
        ],
        START,
    )
    clock = FixedClock(START)
    publisher = TimedPublisher(clock)
    beats = [
        Ticker(s, DatabaseLock(), publisher, settings(name), clock)
        for s, name in ((store, "beat-1"), (open_store(), "beat-2"))
    ]
    step, end = timedelta(seconds=5), at("09:16")

    for n in range((end - START) // step):
        clock.advance(step)
        for beat in beats if n % 2 else reversed(beats):
            beat.tick()

    gaps = {"every-2m": timedelta(minutes=2), "five-minutely": timedelta(minutes=5)}
    expected: dict[tuple[str, datetime], datetime] = {}
    for name, gap in gaps.items():
        jitter = timedelta(seconds=jitters[name][1])
        for slot in slots(START + gap, gap, end):
            due = fire_at(uid_of(name), slot, jitter, slot + gap)
            if due <= end:
                expected[(name, slot)] = due
    # The jitter really moves fires, and the 15 min window is narrowed to the 5 min gap.
    assert max(due - slot for (_, slot), due in expected.items()) > 2 * step
    assert all(due - slot < gaps[name] for (name, slot), due in expected.items())

    sent = Counter((r.schedule_name, r.slot) for _, r in publisher)
    assert sent == Counter(expected.keys())
    for when, request in publisher:
        due = expected[(request.schedule_name, request.slot)]
        assert due <= when < due + step, request
        assert request.task_id == task_id_of(request.schedule_name, request.slot)
    for name in gaps:
        assert recorded(tables, name) == sorted(s for n, s in expected if n == name)


# (d) pause and resume --------------------------------------------------------------------------


@pytest.fixture
def managed(store: Store, clock: FixedClock) -> Iterator[api.Schedules]:
    """The management API on the test store, reading the test clock."""
    with api.Schedules(store, clock=clock) as schedules:
        yield schedules


def _hourly_fired_at_ten_then_paused(
    managed: api.Schedules, clock: FixedClock, ticker: Ticker, publisher: RecordingPublisher
) -> None:
    """``hourly`` (0 * * * *, policy latest) created at 09:00, fires 10:00, is paused at 10:20."""
    managed.add("hourly", "tasks.hourly", Cron("0 * * * *"), misfire_policy="latest")
    run(ticker, clock, at("10:00:30"))
    assert published(publisher) == fires("hourly", [at("10:00")])
    clock.set(at("10:20"))
    assert managed.pause("hourly").state == "paused"
    publisher.clear()


@pytest.mark.parametrize(
    ("resumed_at", "next_slot"),
    [
        pytest.param("13:10", "14:00", id="three-slots-paused"),
        pytest.param("12:00:01", "13:00", id="resumed-1s-after-a-slot"),
        pytest.param("12:00", "13:00", id="resumed-on-a-slot"),
        pytest.param("10:40", "11:00", id="no-slot-paused"),
    ],
)
def test_resuming_fires_none_of_the_paused_slots_and_next_the_first_slot_after_the_resume(
    managed: api.Schedules,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    resumed_at: str,
    next_slot: str,
) -> None:
    ticker = make_ticker(**LONG_SLEEPS)
    _hourly_fired_at_ten_then_paused(managed, clock, ticker, publisher)
    run(ticker, clock, at(resumed_at))  # paused: nothing is due
    assert publisher == []

    managed.resume("hourly")
    run(ticker, clock, at(next_slot) - timedelta(microseconds=1))
    assert publisher == []  # never "immediately"
    assert managed.get("hourly").next_run_at == at(next_slot)
    run(ticker, clock, at(next_slot) + timedelta(hours=1, seconds=30))

    after = [at(next_slot), at(next_slot) + timedelta(hours=1)]
    assert published(publisher) == fires("hourly", after)
    # (Whether the pause's slots are also counted as dropped in the history is left open here.)
    assert recorded(tables, "hourly") == [at("10:00"), *after]
    assert recorded(tables, "hourly", "pending") == []


def test_a_slot_between_the_resume_and_the_next_tick_fires(
    managed: api.Schedules,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    ticker = make_ticker(**LONG_SLEEPS)
    _hourly_fired_at_ten_then_paused(managed, clock, ticker, publisher)
    clock.set(at("10:59:59"))
    managed.resume("hourly")
    clock.set(at("11:00:04"))  # beat's next look, within the default max_interval (5 s)

    ticker.tick()

    # 11:00 is the first slot after the resume, not a slot of the pause.
    assert published(publisher) == fires("hourly", [at("11:00")])


@pytest.mark.parametrize(
    ("policy", "sent", "skipped"),
    [
        pytest.param("latest", ["13:00"], ("11:00", "12:00", 2), id="latest-the-newest"),
        pytest.param("earliest", ["11:00"], ("12:00", "13:00", 2), id="earliest-the-oldest"),
        pytest.param("all", ["11:00", "12:00", "13:00"], None, id="all-every-slot"),
        pytest.param("skip", [], ("11:00", "13:00", 3), id="skip-none"),
    ],
)
def test_resuming_with_catch_up_sends_the_paused_slots_through_the_misfire_policy(
    managed: api.Schedules,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    policy: str,
    sent: list[str],
    skipped: tuple[str, str, int] | None,
) -> None:
    ticker = make_ticker(**LONG_SLEEPS)
    _hourly_fired_at_ten_then_paused(managed, clock, ticker, publisher)
    managed.update("hourly", misfire_policy=policy)
    clock.set(at("13:10"))

    managed.resume("hourly", catch_up=True)
    ticker.tick()

    assert published(publisher) == fires("hourly", [at(t) for t in sent])
    skip_rows = [f for f in tables.fires("hourly") if f.status == "skipped"]
    assert [
        (f.first_slot.strftime("%H:%M"), f.slot.strftime("%H:%M"), f.slot_count) for f in skip_rows
    ] == ([skipped] if skipped else [])
    assert managed.get("hourly").next_run_at == at("14:00")
    publisher.clear()
    run(ticker, clock, at("14:00:30"))
    assert published(publisher) == fires("hourly", [at("14:00")])


def test_resuming_with_catch_up_a_pause_without_slots_fires_nothing_early(
    managed: api.Schedules,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    ticker = make_ticker(**LONG_SLEEPS)
    _hourly_fired_at_ten_then_paused(managed, clock, ticker, publisher)
    clock.set(at("10:40"))

    managed.resume("hourly", catch_up=True)
    run(ticker, clock, at("10:59:59"))
    assert publisher == []
    run(ticker, clock, at("11:00"))
    assert published(publisher) == fires("hourly", [at("11:00")])


def test_a_resumed_interval_keeps_its_anchor_grid_and_skips_the_slot_just_passed(
    managed: api.Schedules,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    ticker = make_ticker(**LONG_SLEEPS)
    managed.add("ten-minutely", "tasks.t", Every(600))
    run(ticker, clock, at("09:20"))
    clock.set(at("09:25"))
    managed.pause("ten-minutely")
    clock.set(at("09:40:01"))

    managed.resume("ten-minutely")
    run(ticker, clock, at("10:00"))

    assert published(publisher) == fires(
        "ten-minutely", [at("09:10"), at("09:20"), at("09:50"), at("10:00")]
    )


# (e) edits -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "edited_at", "edit", "old_slot", "new_slot", "sent"),
    [
        pytest.param(Cron("0 * * * *"), "09:30", Cron("15,45 * * * *"), "10:00", "09:45",
                     ["09:45"], id="cron-edited-before-its-slot"),
        pytest.param(Cron("0 * * * *"), "10:00:30", Cron("30 * * * *"), "10:00", "10:30",
                     ["10:30"], id="cron-edited-while-its-slot-is-due"),
        pytest.param(Every(600), "09:13", Every(900), "09:20", "09:28", ["09:10", "09:28"],
                     id="interval-re-anchored-at-the-edit"),
        pytest.param(Every(600), "09:20:30", Every(900), "09:20", "09:35:30",
                     ["09:10", "09:35:30"], id="interval-edited-while-its-slot-is-due"),
    ],
)  # fmt: skip
def test_a_timing_edit_recomputes_next_run_at_from_the_edit_time_and_the_old_slot_never_fires(
    managed: api.Schedules,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    spec: Cron | Every,
    edited_at: str,
    edit: Cron | Every,
    old_slot: str,
    new_slot: str,
    sent: list[str],
) -> None:
    ticker = make_ticker(**LONG_SLEEPS)
    managed.add("s", "tasks.s", spec)
    # Beat is behind: it last looked a minute before the edit.
    run(ticker, clock, at(edited_at) - timedelta(minutes=1))
    assert managed.get("s").next_run_at == at(old_slot)
    clock.set(at(edited_at))

    assert managed.update("s", schedule=edit).next_run_at == at(new_slot)
    run(ticker, clock, max(at(old_slot), at(new_slot)) + timedelta(seconds=30))

    assert published(publisher) == fires("s", [at(t) for t in sent])
    assert [f.slot for f in tables.fires("s")] == [at(t) for t in sent]


@pytest.mark.parametrize(
    ("spec", "edited_at", "next_slot"),
    [
        pytest.param(Cron("0 * * * *"), "09:30", "10:00", id="cron"),
        pytest.param(Every(600), "09:13", "09:20", id="interval-keeps-its-grid"),
        pytest.param(Cron("0 * * * *"), "10:00:30", "10:00", id="cron-edited-while-due"),
    ],
)
def test_an_args_only_edit_keeps_next_run_at(
    managed: api.Schedules,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    spec: Cron | Every,
    edited_at: str,
    next_slot: str,
) -> None:
    ticker = make_ticker(**LONG_SLEEPS)
    managed.add("s", "tasks.s", spec, args=[1])
    run(ticker, clock, at(edited_at) - timedelta(minutes=1))
    publisher.clear()
    clock.set(at(edited_at))
    before = managed.get("s")

    after = managed.update("s", args=[2], kwargs={"k": "v"})

    assert after.next_run_at == before.next_run_at == at(next_slot)
    assert after.version == before.version + 1
    run(ticker, clock, max(at(edited_at), at(next_slot)) + timedelta(seconds=30))
    assert published(publisher) == fires("s", [at(next_slot)])
    ((_, args, kwargs, _),) = publisher
    assert (args, kwargs) == ([2], {"k": "v"})


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param({"jitter": 30}, id="jitter"),
        pytest.param({"end_at": at("12:00")}, id="end_at"),
    ],
)
def test_an_edit_of_other_fields_keeps_an_interval_on_its_anchor_grid(
    managed: api.Schedules,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    edit: dict[str, Any],
) -> None:
    # SEMANTICS.md: slots stay anchor + n * every across "edits of other fields".
    ticker = make_ticker(**LONG_SLEEPS)
    managed.add("ten-minutely", "tasks.t", Every(600))
    run(ticker, clock, at("09:10:30"))
    clock.set(at("09:13"))

    info = managed.update("ten-minutely", **edit)

    assert info.next_run_at == at("09:20")
