"""The tick algorithm against real databases and locks, driven by a clock that only moves on demand.

Each test checks sentences of ``SEMANTICS.md``: every fire is published exactly once with
``task_id = f(schedule, slot)`` however many beats tick; a recorded fire is published later by any
live beat if its own beat died or the broker was down; misfires follow the policy table; one bad
row never stops the others; a database outage makes beat wait, not crash.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import redis
import sqlalchemy as sa

from celery_dbeat import Cron, Every, Once, Rrule
from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import FixedClock
from celery_dbeat.config import Settings
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import FireKey, fire_lock_key
from celery_dbeat.core.misfire import MisfireRules
from celery_dbeat.core.planning import plan
from celery_dbeat.locks import DatabaseLock, FireLock
from celery_dbeat.locks.redis import RedisLock
from celery_dbeat.store import Store, migrate
from tests.integration.conftest import (
    START,
    FailingPublisher,
    LockBackend,
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
)
from tests.services import MYSQL_URL, POSTGRES_URL

UTC = timezone.utc


def every(name: str, seconds: float, **fields: Any) -> Definition:
    return Definition.create(name=name, task=f"tasks.{name}", schedule=Every(seconds), **fields)


def cron(name: str, expr: str, zone: str = "UTC", **fields: Any) -> Definition:
    return Definition.create(
        name=name, task=f"tasks.{name}", schedule=Cron(expr, timezone=zone), **fields
    )


# Exactly once ------------------------------------------------------------------------------------


def test_interval_and_cron_schedules_fire_each_slot_once_with_deterministic_task_ids(
    store: Store,
    lock: FireLock,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    tables.sync(
        [
            every("every-10m", 600, args=[1, "a"], kwargs={"k": 1}, options={"queue": "q"}),
            cron("quarter-hourly", "*/15 * * * *"),
        ],
        START,
    )
    ticker = make_ticker(lock=lock)

    run(ticker, clock, at("10:00"), step=timedelta(seconds=37))

    expected = fires("every-10m", slots(at("09:10"), timedelta(minutes=10), at("10:00")))
    expected += fires("quarter-hourly", slots(at("09:15"), timedelta(minutes=15), at("10:00")))
    assert sorted(published(publisher)) == sorted(expected)
    for request, args, kwargs, options in publisher:
        if request.schedule_name == "every-10m":
            assert (request.task, args, kwargs, options) == (
                "tasks.every-10m", [1, "a"], {"k": 1}, {"queue": "q"},
            )  # fmt: skip
    recorded = tables.fires()
    assert sorted((f.name, f.slot, f.task_id) for f in recorded) == sorted(expected)
    assert {(f.status, f.beat) for f in recorded} == {("sent", "beat-1")}
    assert tables.row("every-10m").next_run_at == at("10:10")
    assert tables.row("quarter-hourly").next_run_at == at("10:15")


def test_interval_slots_stay_on_the_anchor_grid_however_late_and_restarted_beat_is(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    anchor = START + timedelta(microseconds=250_000)
    tables.sync([every("grid", 60, start_at=anchor)], START)
    steps = itertools.cycle([7, 59, 31, 44, 58, 3])

    ticks = 0
    while clock.now() < at("09:30"):
        if ticks % 5 == 0:
            ticker = make_ticker()  # a restart
        ticker.tick()
        ticks += 1
        clock.advance(next(steps))

    assert (
        published(publisher)
        == fires("grid", slots(anchor + timedelta(seconds=60), timedelta(seconds=60), clock.now()))[
            : len(publisher)
        ]
    )
    assert len(publisher) >= 29


SKEWS = [
    pytest.param(timedelta(0), id="same-clock"),
    pytest.param(timedelta(seconds=4), id="beat-2-4s-behind"),
]


@pytest.mark.parametrize("skew", SKEWS)
def test_two_beats_ticking_alternately_for_an_hour_publish_every_slot_once(
    store: Store,
    open_store: Callable[[], Store],
    lock_backend: LockBackend,
    tables: Tables,
    skew: timedelta,
) -> None:
    tables.sync(
        [
            every("every-45s", 45),
            every("every-7m", 420),
            cron("each-minute", "* * * * *"),
            cron("five-past", "5 * * * *"),
        ],
        START,
    )
    publisher = RecordingPublisher()
    clocks = [FixedClock(START), FixedClock(START - skew)]
    beats = [
        Ticker(s, lock_backend.make(name), publisher, settings(name), c)
        for s, name, c in zip((store, open_store()), ("beat-1", "beat-2"), clocks, strict=True)
    ]

    for step in range(120):
        for c in clocks:
            c.advance(30)
        for beat in beats if step % 2 else reversed(beats):
            beat.tick()

    end = max(c.now() for c in clocks)
    expected = (
        fires("every-45s", slots(at("09:00:45"), timedelta(seconds=45), end))
        + fires("every-7m", slots(at("09:07"), timedelta(minutes=7), end))
        + fires("each-minute", slots(at("09:01"), timedelta(minutes=1), end))
        + fires("five-past", [at("09:05")])
    )
    duplicates = [f for f, n in Counter(published(publisher)).items() if n > 1]
    assert duplicates == []
    assert sorted(published(publisher)) == sorted(expected)
    assert {f.status for f in tables.fires()} == {"sent"}
    assert len(tables.fires()) == len(expected)


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql", "mysql"], indirect=True)
def test_two_beats_ticking_at_the_same_instant_in_parallel_publish_every_slot_once(
    database_url: str,
    store: Store,
    open_store: Callable[[], Store],
    lock_backend: LockBackend,
    tables: Tables,
) -> None:
    names = [f"minutely-{n}" for n in range(8)]
    tables.sync([cron(name, "* * * * *") for name in names], START)
    publisher = RecordingPublisher()
    clocks = [FixedClock(START), FixedClock(START)]
    beats = [
        Ticker(s, lock_backend.make(name), publisher, settings(name), c)
        for s, name, c in zip((store, open_store()), ("beat-1", "beat-2"), clocks, strict=True)
    ]
    steps = 30
    barrier = threading.Barrier(2, timeout=60)
    errors: list[BaseException] = []

    def beat_loop(i: int) -> None:
        try:
            for _ in range(steps):
                clocks[i].advance(60)
                barrier.wait()  # both beats tick for the same instant, at the same time
                beats[i].tick()
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=beat_loop, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    assert errors == []
    expected = [
        f
        for name in names
        for f in fires(name, slots(at("09:01"), timedelta(minutes=1), at("09:30")))
    ]
    assert sorted(published(publisher)) == sorted(expected)
    assert len(tables.fires()) == len(expected)


# Crash windows -----------------------------------------------------------------------------------


def test_a_failed_publish_stays_pending_and_is_retried_with_the_same_task_id(
    store: Store,
    open_store: Callable[[], Store],
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    failing_publisher: FailingPublisher,
    make_ticker: MakeTicker,
) -> None:
    tables.sync([cron("flaky", "*/5 * * * *")], START)
    task_id = task_id_of("flaky", at("09:05"))
    failing = make_ticker(publish=failing_publisher)
    clock.set(at("09:05"))

    failing.tick()

    assert [r.task_id for r in failing_publisher.attempts] == [task_id]
    (fire,) = tables.fires("flaky")
    assert (fire.status, fire.attempts, fire.task_id) == ("pending", 1, task_id)
    assert fire.error == "ConnectionError: broker down"
    retry_at = fire.lease_until
    assert retry_at > at("09:05")

    healthy = make_ticker(store=open_store(), instance_name="beat-2")
    clock.set(retry_at - timedelta(seconds=1))
    assert healthy.recover_pending() == 0
    clock.set(retry_at)
    assert healthy.recover_pending() == 1

    assert published(publisher) == [("flaky", at("09:05"), task_id)]
    (fire,) = tables.fires("flaky")
    assert (fire.status, fire.beat, fire.sent_at) == ("sent", "beat-2", retry_at)
    clock.advance(60)
    failing.tick()
    healthy.tick()
    assert len(failing_publisher.attempts) == 1
    assert len(publisher) == 1


def test_a_publish_failing_for_longer_than_the_retry_window_is_recorded_as_failed(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    failing_publisher: FailingPublisher,
    make_ticker: MakeTicker,
) -> None:
    tables.sync([cron("doomed", "0 10 * * *")], START)
    ticker = make_ticker(publish=failing_publisher, publish_retry_window="2m")
    clock.set(at("10:00"))

    run(ticker, clock, at("10:06"), step=timedelta(seconds=5))

    (fire,) = tables.fires("doomed")
    assert fire.status == "failed"
    assert fire.error == "ConnectionError: broker down"
    assert fire.attempts == len(failing_publisher.attempts) >= 2
    assert {r.task_id for r in failing_publisher.attempts} == {task_id_of("doomed", at("10:00"))}


def test_a_fire_recorded_by_a_beat_that_crashed_before_publishing_is_published_by_another(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    tables.sync([cron("orphan", "0 * * * *"), every("bystander", 600)], at("08:59"))
    now = at("09:00")
    # The crashed beat: claimed, planned and recorded in one transaction, then died.
    with store.claim_due(now, 10, "crashed-beat") as batch:
        crashed = batch.record([plan(r, now, MisfireRules()) for r in batch.schedules],
                               now + timedelta(seconds=60))  # fmt: skip
    assert [r.task_id for r in crashed] == [task_id_of("orphan", now)]
    survivor = make_ticker(instance_name="beat-2")

    run(survivor, clock, at("09:00:59"), step=timedelta(seconds=5))
    assert publisher == []
    run(survivor, clock, at("09:02"), step=timedelta(seconds=5))

    assert published(publisher) == fires("orphan", [now])
    (fire,) = tables.fires("orphan")
    assert (fire.status, fire.beat) == ("sent", "beat-2")
    assert tables.row("orphan").next_run_at == at("10:00")


@pytest.mark.parametrize(
    "policy",
    [
        pytest.param("latest", id="latest"),
        pytest.param("earliest", id="earliest"),
        pytest.param("skip", id="skip"),
    ],
)
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_beat_killed_between_its_redis_claim_and_its_record_does_not_lose_the_fire(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    redis_url: str,
    redis_prefix: str,
    policy: str,
) -> None:
    tables.sync([cron("contested", "0 * * * *", misfire_policy=policy)], at("08:59"))
    slot = at("09:00")
    key = FireKey(tables.row("contested").id, slot)
    killed = RedisLock(redis_url, prefix=redis_prefix, owner="killed-beat")
    survivor_lock = RedisLock(redis_url, prefix=redis_prefix, owner="beat-2")
    client = redis.Redis.from_url(redis_url)
    try:
        # The killed beat, running since 08:00, ticked just after the slot: claimed for the
        # default lock TTL, then died before recording. Its heartbeat says it was running when
        # the slot came due, so the fire is only late when the survivor takes it, 30 s on.
        ttl = Settings().lock_ttl
        clock.set(slot + timedelta(milliseconds=200))
        store.heartbeat(
            {
                "name": "killed-beat",
                "hostname": "h",
                "pid": 1,
                "version": "0",
                "started_at": at("08:00"),
            },
            slot - timedelta(seconds=2),
        )
        assert killed.claim([key], ttl) == {key}
        expires = clock.now() + ttl
        survivor = make_ticker(lock=survivor_lock, instance_name="beat-2")

        # The survivor ticks as it asks to (it retries busy rows every half second).
        clock.advance(0.2)
        run(survivor, clock, expires)
        assert publisher == []
        client.delete(fire_lock_key(redis_prefix, key))  # Redis expires the key
        run(survivor, clock, at("09:01:30"))

        assert published(publisher) == fires("contested", [slot])
    finally:
        client.close()
        killed.close()
        survivor_lock.close()


# Misfires ----------------------------------------------------------------------------------------

H = at  # readability of the table below: H("10:00") is 10:00 UTC on the test day

MISFIRES = [
    # policy, grace, catchup_limit, published, skipped (first, last, count), dropped
    pytest.param("skip", None, None, [], ("10:00", "13:00", 4), None, id="skip"),
    pytest.param("latest", None, None, ["13:00"], ("10:00", "12:00", 3), None, id="latest"),
    pytest.param("earliest", None, None, ["10:00"], ("11:00", "13:00", 3), None, id="earliest"),
    pytest.param("all", None, None, ["10:00", "11:00", "12:00", "13:00"], None, None, id="all"),
    pytest.param("all", None, 2, ["12:00", "13:00"], ("10:00", "11:00", 2), None,
                 id="all-catchup-limit-2-keeps-newest"),
    pytest.param("all", None, 0, [], ("10:00", "13:00", 4), None, id="all-catchup-limit-0"),
    pytest.param("skip", "90m", None, [], ("12:00", "13:00", 2), ("10:00", "11:00", 2),
                 id="skip-grace-90m"),
    pytest.param("latest", "90m", None, ["13:00"], ("12:00", "12:00", 1), ("10:00", "11:00", 2),
                 id="latest-grace-90m"),
    pytest.param("earliest", "90m", None, ["12:00"], ("13:00", "13:00", 1),
                 ("10:00", "11:00", 2), id="earliest-grace-90m"),
    pytest.param("all", "90m", None, ["12:00", "13:00"], None, ("10:00", "11:00", 2),
                 id="all-grace-90m"),
]  # fmt: skip


def _down_from_0959_30_to_1310(
    tables: Tables, clock: FixedClock, ticker: Ticker, publisher: RecordingPublisher
) -> None:
    """SEMANTICS' canonical check: hourly, every beat down from 09:59:30 to 13:10:00."""
    clock.set(at("09:00"))
    ticker.tick()
    clock.set(at("09:59:30"))
    ticker.tick()
    assert published(publisher) == fires("hourly", [at("09:00")])
    publisher.clear()
    clock.set(at("13:10"))
    ticker.tick()


def _outcome(tables: Tables, status: str) -> tuple[str, str, int] | None:
    rows = [f for f in tables.fires("hourly") if f.status == status]
    if not rows:
        return None
    (row,) = rows
    assert row.task_id is None
    first = row.first_slot or row.slot
    return (first.strftime("%H:%M"), row.slot.strftime("%H:%M"), row.slot_count)


@pytest.mark.parametrize("spec", [Cron("0 * * * *"), Rrule("FREQ=HOURLY")], ids=["cron", "rrule"])
@pytest.mark.parametrize(("policy", "grace", "limit", "sent", "skipped", "dropped"), MISFIRES)
def test_misfire_after_downtime_publishes_what_the_policy_table_says(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    policy: str,
    grace: str | None,
    limit: int | None,
    sent: list[str],
    skipped: tuple[str, str, int] | None,
    dropped: tuple[str, str, int] | None,
    spec: Cron | Rrule,
) -> None:
    hourly = Definition.create(
        name="hourly",
        task="tasks.hourly",
        schedule=spec,
        misfire_policy=policy,
        misfire_grace=grace,
        catchup_limit=limit,
    )
    tables.sync([hourly], at("08:30"))
    ticker = make_ticker()

    _down_from_0959_30_to_1310(tables, clock, ticker, publisher)

    assert published(publisher) == fires("hourly", [H(t) for t in sent])
    assert _outcome(tables, "skipped") == skipped
    assert _outcome(tables, "dropped") == dropped
    sent_rows = [f.slot for f in tables.fires("hourly") if f.status == "sent"]
    assert sent_rows == [at("09:00")] + [H(t) for t in sent]
    assert tables.row("hourly").next_run_at == at("14:00")
    publisher.clear()
    clock.set(at("14:00"))
    ticker.tick()
    assert published(publisher) == fires("hourly", [at("14:00")])


@pytest.mark.parametrize(
    ("overrides", "sent", "dropped"),
    [
        pytest.param({"misfire_policy": "earliest"}, ["10:00"], None, id="earliest"),
        pytest.param({"misfire_policy": "all", "misfire_grace": "90m"}, ["12:00", "13:00"],
                     ("10:00", "11:00", 2), id="all-grace-90m"),
        pytest.param({"misfire_policy": "all", "catchup_limit": 1}, ["13:00"], None,
                     id="all-catchup-limit-1"),
    ],
)  # fmt: skip
def test_misfire_settings_apply_to_schedules_without_their_own(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    overrides: dict[str, Any],
    sent: list[str],
    dropped: tuple[str, str, int] | None,
) -> None:
    tables.sync([cron("hourly", "0 * * * *")], at("08:30"))
    ticker = make_ticker(**overrides)

    _down_from_0959_30_to_1310(tables, clock, ticker, publisher)

    assert published(publisher) == fires("hourly", [H(t) for t in sent])
    assert _outcome(tables, "dropped") == dropped
    assert tables.row("hourly").next_run_at == at("14:00")


@pytest.mark.parametrize("policy", ["skip", "latest", "earliest", "all"])
def test_a_slot_late_by_less_than_the_tolerance_fires_whatever_the_policy(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    policy: str,
) -> None:
    tables.sync([cron("hourly", "0 * * * *", misfire_policy=policy)], at("09:30"))
    ticker = make_ticker()
    clock.set(at("09:59:30"))
    ticker.tick()

    clock.set(at("10:00:05"))  # 5 s late: exactly the default tolerance
    ticker.tick()

    assert published(publisher) == fires("hourly", [at("10:00")])
    assert [f.status for f in tables.fires("hourly")] == ["sent"]


# Bad rows and raw SQL ----------------------------------------------------------------------------

BROKEN: dict[str, tuple[dict[str, Any], str]] = {
    # name: (columns written by raw SQL, the field the error must name)
    "bad-json-args": ({"args": "[1, 2"}, "args="),
    "kwargs-not-object": ({"kwargs": "[1]"}, "kwargs="),
    "unknown-zone": ({"timezone": "Mars/Olympus_Mons"}, "timezone="),
    "bad-cron": ({"cron": "61 * * * *"}, "cron="),
    "unknown-kind": ({"kind": "sometimes"}, "kind="),
    "eta-option": ({"options": '{"eta": 5}'}, "options="),
    "bad-policy": ({"misfire_policy": "sometimes"}, "misfire_policy="),
    "interval-without-every": ({"kind": "interval", "cron": None, "every": None}, "every="),
    "unknown-zone-to-compute": ({"timezone": "Nowhere/Land", "next_run_at": None}, "timezone="),
}


def test_broken_rows_are_marked_with_their_error_and_every_other_schedule_keeps_firing(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    tables.sync([every("healthy", 300)], START)
    for name, (columns, _) in BROKEN.items():
        tables.insert(name, **{"next_run_at": at("09:00"), **columns})
    ticker = make_ticker(batch_size=3)

    run(ticker, clock, at("09:30"), step=timedelta(seconds=30))

    assert published(publisher) == fires(
        "healthy", slots(at("09:05"), timedelta(minutes=5), at("09:30"))
    )
    for name, (_, field) in BROKEN.items():
        row = tables.row(name)
        assert row.last_error is not None, name
        assert row.last_error.startswith(field), (name, row.last_error)
        assert (row.next_run_at, row.enabled) == (None, True), name
        assert tables.fires(name) == [], name
    assert store.peek()[:2] == (at("09:35"), False)
    assert ticker.tick() > 0  # nothing left to compute: beat sleeps, it does not spin


@pytest.mark.parametrize(
    ("definition", "edit", "edited_at", "recomputed"),
    [
        pytest.param(cron("s", "0 * * * *"), {"cron": "*/25 * * * *"}, "09:20", "09:25",
                     id="cron-edited-by-sql"),
        pytest.param(cron("s", "0 * * * *"), {}, "09:20", "10:00", id="cron-unchanged"),
        pytest.param(every("s", 600), {}, "09:23", "09:30", id="interval-keeps-its-anchor"),
        pytest.param(every("s", 600), {"every": 900.0}, "09:23", "09:30",
                     id="interval-edited-by-sql"),
    ],
)  # fmt: skip
def test_a_null_next_run_at_set_by_raw_sql_is_recomputed_on_the_next_tick(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    definition: Definition,
    edit: dict[str, Any],
    edited_at: str,
    recomputed: str,
) -> None:
    tables.sync([definition], START)
    ticker = make_ticker()
    ticker.tick()
    clock.set(at(edited_at))
    tables.execute("UPDATE dbeat_schedules SET next_run_at = NULL WHERE name = :name", name="s")
    if edit:
        tables.update("s", **edit)
    assert store.peek()[:2] == (None, True)

    ticker.tick()

    assert tables.row("s").next_run_at == at(recomputed)
    assert publisher == []  # a recompute never fires "immediately"
    clock.set(at(recomputed))
    ticker.tick()
    assert published(publisher) == fires("s", [at(recomputed)])


@pytest.mark.parametrize(
    "database_url",
    [
        pytest.param("sqlite"),
        "postgresql",
        "mysql",
    ],
    indirect=True,
)
def test_a_next_run_at_written_by_raw_sql_without_microseconds_fires(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    # Two schedules: their batch is recorded in one statement, which compares what is stored.
    tables.sync([cron("s", "0 * * * *"), cron("t", "0 * * * *")], START)
    tables.execute("UPDATE dbeat_schedules SET next_run_at = '2024-05-06 09:30:00'")
    assert tables.row("s").next_run_at == at("09:30")
    ticker = make_ticker()
    clock.set(at("09:30"))

    sleeps = [ticker.tick() for _ in range(3)]

    assert sorted(published(publisher)) == fires("s", [at("09:30")]) + fires("t", [at("09:30")])
    assert tables.row("s").next_run_at == tables.row("t").next_run_at == at("10:00")
    assert min(sleeps) > 0


def test_a_broken_row_fixed_by_raw_sql_fires_again(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    tables.insert("s", next_run_at=at("09:00"), timezone="Mars/Olympus_Mons")
    ticker = make_ticker()
    ticker.tick()
    assert tables.row("s").last_error is not None

    tables.update("s", timezone="Europe/Paris", last_error=None, next_run_at=None)
    clock.set(at("09:10"))
    ticker.tick()
    clock.set(at("10:00"))
    ticker.tick()

    assert published(publisher) == fires("s", [at("10:00")])


FINISHING = [
    pytest.param(
        Definition.create(name="s", task="t", schedule=Once(at("09:05"))),
        ["09:05"],
        "09:05",
        id="once",
    ),
    pytest.param(every("s", 60, max_runs=2), ["09:01", "09:02"], "09:02", id="max-runs-2"),
    pytest.param(
        every("s", 600, end_at=at("09:25")), ["09:10", "09:20"], "09:20", id="interval-end-at"
    ),
    pytest.param(
        cron("s", "*/15 * * * *", end_at=at("09:30")),
        ["09:15", "09:30"],
        "09:30",
        id="cron-end-at-inclusive",
    ),
]


@pytest.mark.parametrize(("definition", "sent", "finished_at"), FINISHING)
def test_finished_schedules_are_marked_finished_and_disabled(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    definition: Definition,
    sent: list[str],
    finished_at: str,
) -> None:
    tables.sync([definition], START)

    run(make_ticker(max_interval="1h", lock_ttl="2h"), clock, at("11:00"))

    assert published(publisher) == fires("s", [at(t) for t in sent])
    row = tables.row("s")
    assert (row.enabled, row.next_run_at, row.finished_at) == (False, None, at(finished_at))
    assert row.run_count == len(sent)
    assert row.last_error is None


# Outages -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("postgresql+psycopg://postgres@127.0.0.1:1/dbeat", id="postgresql"),
        pytest.param("mysql+pymysql://root@127.0.0.1:1/dbeat", id="mysql"),
        pytest.param("sqlite:////nonexistent-dbeat-dir/x.sqlite3", id="sqlite"),
    ],
)
def test_an_unreachable_database_makes_tick_sleep_instead_of_raising(url: str) -> None:
    store = Store(url)
    clock = FixedClock(START)
    publisher = RecordingPublisher()
    ticker = Ticker(store, DatabaseLock(), publisher, settings(), clock)
    try:
        sleeps = []
        for _ in range(6):
            sleeps.append(ticker.tick())
            clock.advance(sleeps[-1])
        # Backing off 1, 2, 4, 8 s... but never sleeping longer than max_interval (5 s).
        assert sleeps[:4] == [1.0, 2.0, 4.0, 5.0]
        assert all(0 < s <= 5 for s in sleeps), sleeps
        assert publisher == []
    finally:
        store.close()


def test_an_outage_is_said_when_it_begins_then_once_a_minute_then_when_it_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "gone"  # SQLite cannot open a file in a folder that is not there
    store = Store(f"sqlite:///{folder / 'db.sqlite3'}")
    clock = FixedClock(START)
    ticker = Ticker(store, DatabaseLock(), RecordingPublisher(), settings(), clock)
    caplog.set_level(logging.INFO, logger="celery_dbeat")
    try:
        said: list[tuple[float, str]] = []
        while clock.monotonic() < 200:
            caplog.clear()
            clock.advance(ticker.tick())
            said += [(clock.monotonic(), r.getMessage()) for r in caplog.records]
        folder.mkdir()
        migrate(store.engine)
        caplog.clear()
        for _ in range(10):  # until the next try, at most 30 s on
            clock.advance(ticker.tick())
            if caplog.records:
                break
        back = [r.getMessage() for r in caplog.records]
    finally:
        store.close()

    assert all("unable to open database file" in m for _, m in said), said
    assert said[0][1].startswith("dbeat: schedule database unreachable, retrying: ")
    reminders = [re.findall(r"still unreachable after (\d+) s, retrying", m) for _, m in said[1:]]
    assert reminders == [["61"], ["121"], ["181"]]  # the tries are 30 s apart by then
    assert back == ["dbeat: schedule database reachable again after 211.0 s"]


@pytest.mark.parametrize("database_url", ["postgresql", "mysql"], indirect=True)
def test_a_dropped_database_makes_tick_sleep_and_beat_resumes_when_it_is_back(
    database_url: str,
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    definition = every("survivor", 60)
    tables.sync([definition], START)
    ticker = make_ticker()
    run(ticker, clock, at("09:02"), step=timedelta(seconds=10))
    assert len(publisher) == 2
    url = sa.make_url(database_url)
    admin = sa.create_engine(
        POSTGRES_URL if url.get_backend_name() == "postgresql" else MYSQL_URL,
        isolation_level="AUTOCOMMIT",
    )
    try:
        with admin.connect() as conn:
            force = " WITH (FORCE)" if url.get_backend_name() == "postgresql" else ""
            conn.execute(sa.text(f"DROP DATABASE {url.database}{force}"))

        sleeps = [ticker.tick() for _ in range(3)]
        assert all(0 < s <= 5 for s in sleeps), sleeps

        with admin.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {url.database}"))
    finally:
        admin.dispose()
    clock.advance(30)
    migrate(store.engine)
    tables.sync([definition], clock.now())
    publisher.clear()
    run(ticker, clock, clock.now() + timedelta(seconds=130), step=timedelta(seconds=10))
    assert len(publisher) == 2


# Time zones and sleeping -------------------------------------------------------------------------


def Z(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


DST = [
    pytest.param("America/New_York", "30 2 * * *", "2024-03-09T12:00", "2024-03-11T12:00",
                 ["2024-03-10T07:00", "2024-03-11T06:30"], id="new-york-02:30-spring-gap"),
    pytest.param("America/New_York", "30 2 * * *", "2024-11-02T12:00", "2024-11-03T12:00",
                 ["2024-11-03T07:30"], id="new-york-02:30-fall-back"),
    pytest.param("America/New_York", "30 1 * * *", "2024-11-02T12:00", "2024-11-03T12:00",
                 ["2024-11-03T05:30"], id="new-york-01:30-fires-first-copy-only"),
    pytest.param("America/New_York", "0 * * * *", "2024-11-03T04:30", "2024-11-03T07:30",
                 ["2024-11-03T05:00", "2024-11-03T06:00", "2024-11-03T07:00"],
                 id="new-york-hourly-fires-both-01:00s"),
    pytest.param("Europe/London", "30 1 * * *", "2024-03-30T12:00", "2024-03-31T12:00",
                 ["2024-03-31T01:00"], id="london-01:30-spring-gap"),
    pytest.param("Europe/London", "30 1 * * *", "2024-10-26T12:00", "2024-10-27T12:00",
                 ["2024-10-27T00:30"], id="london-01:30-fall-back"),
]  # fmt: skip


@pytest.mark.parametrize(("zone", "expr", "since", "until", "expected"), DST)
def test_cron_slots_across_dst_are_published_at_the_utc_instants_semantics_lists(
    store: Store,
    tables: Tables,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    zone: str,
    expr: str,
    since: str,
    until: str,
    expected: list[str],
) -> None:
    clock = FixedClock(Z(since))
    tables.sync([cron("dst", expr, zone)], clock.now())
    ticker = make_ticker(clock=clock, max_interval="1d", lock_ttl="2d")

    run(ticker, clock, Z(until))

    assert published(publisher) == fires("dst", [Z(t) for t in expected])


RRULE_DST = [
    pytest.param("America/New_York", "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "2024-03-09T12:00",
                 "2024-03-11T12:00", ["2024-03-10T07:00", "2024-03-11T06:30"], id="spring-gap"),
    pytest.param("America/New_York", "FREQ=DAILY;BYHOUR=1;BYMINUTE=30", "2024-11-02T12:00",
                 "2024-11-03T12:00", ["2024-11-03T05:30"], id="fall-back-first-copy-only"),
    # Unlike `0 * * * *`: a rule's wall times follow the fixed-time rules whatever its FREQ.
    pytest.param("America/New_York", "FREQ=HOURLY", "2024-11-03T04:30", "2024-11-03T07:30",
                 ["2024-11-03T05:00", "2024-11-03T07:00"], id="hourly-fires-the-first-01:00"),
    pytest.param("Europe/London", "FREQ=DAILY;BYHOUR=1;BYMINUTE=30", "2024-03-30T12:00",
                 "2024-03-31T12:00", ["2024-03-31T01:00"], id="london-spring-gap"),
]  # fmt: skip


@pytest.mark.parametrize(("zone", "rule", "since", "until", "expected"), RRULE_DST)
def test_rrule_slots_across_dst_are_published_by_the_fixed_time_rules(
    store: Store,
    tables: Tables,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
    zone: str,
    rule: str,
    since: str,
    until: str,
    expected: list[str],
) -> None:
    clock = FixedClock(Z(since))
    dst = Definition.create(name="dst", task="tasks.dst", schedule=Rrule(rule, zone))
    tables.sync([dst], clock.now())
    ticker = make_ticker(clock=clock, max_interval="1d", lock_ttl="2d")

    run(ticker, clock, Z(until))

    assert published(publisher) == fires("dst", [Z(t) for t in expected])


def test_tick_sleeps_until_the_earliest_next_run_at_at_most_max_interval(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    ticker = make_ticker(max_interval="5s", lock_ttl="60s")
    assert ticker.tick() == 5.0  # nothing scheduled
    tables.sync([every("soon", 600)], START)

    assert ticker.tick() == 5.0
    clock.set(at("09:09:58"))
    assert ticker.tick() == 2.0
    clock.set(at("09:10") + timedelta(milliseconds=250))
    assert ticker.tick() == 5.0
    assert published(publisher) == fires("soon", [at("09:10")])
