"""Run tracking and overlap policies against real databases, with the worker simulated.

The overlap cases are Temporal's: an hourly job whose runs take 90 minutes. ``allow`` has two
runs going at 11:00; ``skip`` never runs 11:00; ``buffer_one`` starts 11:00 when 10:00 finishes,
at 11:30, keeping its slot and task id. The "worker" here reports starts and finishes through
:func:`record_runs`, exactly what the worker hook writes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.beat.worker import RunRecorder
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import RunStatus, ScheduleRow
from celery_dbeat.core.overlap import RunState
from celery_dbeat.core.specs import Cron
from celery_dbeat.store import Store, runs
from celery_dbeat.store.reading import PLAN_COLUMNS, read_rows
from celery_dbeat.store.runs import RunEvent, prune_history, prune_history_limits, record_runs
from tests.integration.conftest import (
    F,
    MakeTicker,
    RecordingPublisher,
    S,
    Tables,
    at,
    statements_sent,
    task_id_of,
)

RUN = timedelta(minutes=90)


def hourly(**fields: Any) -> Definition:
    return Definition.create(
        name="hourly", task="tasks.report", schedule=Cron("0 * * * *"), **fields
    )


@dataclass
class Run:
    slot: datetime
    task_id: str
    started: datetime
    finished: datetime | None = None


class Worker:
    """Starts every published task at once and finishes it ``duration`` later (or never)."""

    def __init__(self, store: Store, publisher: RecordingPublisher, duration: timedelta | None):
        self.store = store
        self.publisher = publisher
        self.duration = duration
        self.runs: list[Run] = []

    def step(self, now: datetime) -> None:
        events = []
        for request, *_ in self.publisher[len(self.runs) :]:
            self.runs.append(Run(request.slot, request.task_id, now))
            events.append(RunEvent(request.task_id, RunStatus.STARTED, now, worker="w1"))
        for run in self.runs:
            if (
                self.duration is not None
                and run.finished is None
                and now >= run.started + self.duration
            ):
                run.finished = run.started + self.duration
                events.append(
                    RunEvent(
                        run.task_id,
                        RunStatus.SUCCEEDED,
                        run.finished,
                        runtime=self.duration.total_seconds(),
                    )
                )
        record_runs(self.store.engine, events)

    def running_at(self, instant: datetime) -> list[datetime]:
        return [
            r.slot
            for r in self.runs
            if r.started <= instant and (r.finished is None or instant < r.finished)
        ]

    def started(self) -> dict[datetime, datetime]:
        return {r.slot: r.started for r in self.runs}


def simulate(ticker: Ticker, clock: FixedClock, worker: Worker, until: datetime) -> None:
    """Every five minutes: the worker reports, then beat ticks."""
    while clock.now() <= until:
        worker.step(clock.now())
        ticker.tick()
        worker.step(clock.now())
        clock.advance(timedelta(minutes=5))


@pytest.fixture
def run_hourly(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> Callable[..., Worker]:
    def go(duration: timedelta | None = RUN, until: str = "12:45", **fields: Any) -> Worker:
        fields.setdefault("max_run_time", "3h")  # the default (1 h) is shorter than a run
        tables.sync([hourly(**fields)], at("09:30"))
        clock.set(at("09:30"))
        worker = Worker(store, publisher, duration)
        simulate(make_ticker(max_interval=5, lock_ttl=10), clock, worker, at(until))
        return worker

    return go


def status_of(tables: Tables, slot: datetime) -> str:
    (fire,) = [f for f in tables.fires("hourly") if f.slot == slot]
    return str(fire.status)


def test_allow_runs_10_and_11_at_the_same_time(
    run_hourly: Callable[..., Worker], tables: Tables
) -> None:
    worker = run_hourly(overlap_policy="allow")

    assert worker.running_at(at("11:00")) == [at("10:00"), at("11:00")]
    assert worker.started() == {at(t): at(t) for t in ("10:00", "11:00", "12:00")}


def test_skip_never_runs_11_and_records_it_as_overlap(
    run_hourly: Callable[..., Worker], tables: Tables
) -> None:
    worker = run_hourly(overlap_policy="skip")

    assert worker.started() == {at("10:00"): at("10:00"), at("12:00"): at("12:00")}
    assert status_of(tables, at("11:00")) == "overlap"
    assert max(len(worker.running_at(at("10:00") + timedelta(minutes=m))) for m in range(180)) == 1


def test_buffer_one_starts_11_when_10_finishes_with_its_own_slot_and_task_id(
    run_hourly: Callable[..., Worker], tables: Tables
) -> None:
    worker = run_hourly(overlap_policy="buffer_one", until="13:10")

    started = worker.started()
    assert started[at("10:00")] == at("10:00")
    assert started[at("11:00")] == at("11:30")  # when 10:00 finished
    assert started[at("12:00")] == at("13:00")  # when 11:00 finished
    (run_11,) = [r for r in worker.runs if r.slot == at("11:00")]
    assert run_11.task_id == task_id_of("hourly", at("11:00"))
    assert max(len(worker.running_at(at("10:00") + timedelta(minutes=m))) for m in range(190)) == 1


def test_a_buffered_fire_passes_its_own_slot_arguments_when_it_goes_out_later(
    run_hourly: Callable[..., Worker], publisher: RecordingPublisher
) -> None:
    run_hourly(
        overlap_policy="buffer_one",
        until="13:10",
        slot_kwarg="slot",
        previous_slot_kwarg="previous",
    )

    sent = {request.slot: kwargs for request, _, kwargs, _ in publisher}
    # 11:00 went out at 11:30 (buffered), 12:00 at 13:00: each with its own slot.
    assert sent[at("11:00")] == {"slot": "2024-05-06T11:00:00Z", "previous": "2024-05-06T10:00:00Z"}
    assert sent[at("12:00")] == {"slot": "2024-05-06T12:00:00Z", "previous": "2024-05-06T11:00:00Z"}


def test_buffer_one_keeps_one_buffered_fire_and_skips_the_slots_behind_it(
    run_hourly: Callable[..., Worker], tables: Tables
) -> None:
    # A run of 2h30: 11:00 is buffered behind 10:00, 12:00 finds one buffered and is skipped.
    worker = run_hourly(duration=timedelta(minutes=150), overlap_policy="buffer_one")

    assert worker.started() == {at("10:00"): at("10:00"), at("11:00"): at("12:30")}
    assert status_of(tables, at("12:00")) == "overlap"


def test_a_run_that_never_finishes_counts_as_lost_after_max_run_time(
    run_hourly: Callable[..., Worker], tables: Tables
) -> None:
    # The worker died mid-task: no finish is ever reported. After 90 minutes the run is lost,
    # so 11:00 is skipped but 12:00 runs.
    worker = run_hourly(duration=None, overlap_policy="skip", max_run_time="90m")

    assert sorted(worker.started()) == [at("10:00"), at("12:00")]
    assert status_of(tables, at("11:00")) == "overlap"


def test_the_fire_history_shows_each_run_with_its_outcome(
    run_hourly: Callable[..., Worker], tables: Tables
) -> None:
    run_hourly(duration=timedelta(minutes=20), until="11:10")

    rows = {f.slot: f for f in tables.fires("hourly")}
    ten = rows[at("10:00")]
    assert (ten.status, ten.run_status) == ("sent", "succeeded")
    assert (ten.started_at, ten.finished_at, ten.runtime) == (at("10:00"), at("10:20"), 1200.0)
    assert ten.worker == "w1"
    eleven = rows[at("11:00")]
    assert (eleven.run_status, eleven.finished_at) == ("started", None)


# record_runs -------------------------------------------------------------------------------------


def _fire(store: Store, tables: Tables, task_id: str, slot: datetime, **values: Any) -> None:
    schedule_id = tables.row("hourly").id
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(F).values(
                schedule_id=schedule_id,
                slot=slot,
                manual=False,
                status=values.pop("status", "sent"),
                slot_count=1,
                task_id=task_id,
                recorded_at=slot,
                attempts=0,
                **values,
            )
        )


def _run(tables: Tables, task_id: str) -> tuple[Any, ...]:
    (fire,) = [f for f in tables.fires("hourly") if f.task_id == task_id]
    return (fire.run_status, fire.started_at, fire.finished_at, fire.runtime, fire.run_error)


def test_record_runs_folds_a_retry_into_one_run_and_never_reopens_a_finished_run(
    store: Store, tables: Tables
) -> None:
    tables.sync([hourly()], at("09:30"))
    _fire(store, tables, "a", at("10:00"))
    _fire(store, tables, "b", at("11:00"))
    engine = store.engine

    record_runs(
        engine,
        [
            RunEvent("a", RunStatus.STARTED, at("10:00:01"), worker="w1"),
            RunEvent("a", RunStatus.RETRIED, at("10:00:05"), error="Retry in 10s"),
            RunEvent("a", RunStatus.STARTED, at("10:00:15"), worker="w2"),
            RunEvent("b", RunStatus.STARTED, at("11:00:01")),
            RunEvent("not-a-beat-task", RunStatus.STARTED, at("11:00:01")),
        ],
    )
    assert _run(tables, "a")[:3] == ("started", at("10:00:01"), None)
    record_runs(
        engine,
        [
            RunEvent("a", RunStatus.SUCCEEDED, at("10:00:20"), runtime=5.0),
            RunEvent("b", RunStatus.FAILED, at("11:00:03"), runtime=2.0, error="KeyError: 'x'"),
        ],
    )
    # A redelivered message starting again after the end does not reopen the run.
    record_runs(engine, [RunEvent("a", RunStatus.STARTED, at("10:05"))])

    assert _run(tables, "a") == (
        "succeeded",
        at("10:00:01"),
        at("10:00:20"),
        5.0,
        "Retry in 10s",
    )
    assert _run(tables, "b") == ("failed", at("11:00:01"), at("11:00:03"), 2.0, "KeyError: 'x'")


STORED_TEXTS = [
    pytest.param("ValueError: a\x00b", "w\x00", "ValueError: ab", "w", id="nul"),
    pytest.param(
        "FileNotFoundError: '/tmp/\udcff'",
        "w\udcff",
        "FileNotFoundError: '/tmp/\\udcff'",
        "w\\udcff",
        id="lone-surrogate-from-an-undecodable-file-name",
    ),
    pytest.param("KeyError: 'été ☃ 😀'", "wörker", "KeyError: 'été ☃ 😀'", "wörker", id="unicode"),
]


@pytest.mark.parametrize(("error", "worker", "stored_error", "stored_worker"), STORED_TEXTS)
def test_a_run_error_no_driver_can_store_is_stored_alike_on_every_backend(
    store: Store,
    tables: Tables,
    error: str,
    worker: str,
    stored_error: str,
    stored_worker: str,
) -> None:
    tables.sync([hourly()], at("09:30"))
    _fire(store, tables, "a", at("10:00"))

    record_runs(store.engine, [RunEvent("a", RunStatus.FAILED, at("10:01"), worker, 1.0, error)])

    (fire,) = tables.fires("hourly")
    assert (fire.run_status, fire.run_error, fire.worker) == ("failed", stored_error, stored_worker)


NAIVE = at("10:01").replace(tzinfo=None)
REFUSED_EVENTS = [
    pytest.param(
        kind,
        RunEvent("b", RunStatus.SUCCEEDED, NAIVE),
        "naive datetime",
        id=f"{kind}-naive-instant",
    )
    for kind in ("sqlite", "postgresql", "mysql")
] + [
    pytest.param(
        "postgresql",
        RunEvent("b\x00", RunStatus.SUCCEEDED, at("10:01")),
        "cannot contain NUL",
        id="postgresql-nul-in-task-id",
    ),
]


@pytest.mark.parametrize(
    ("database_url", "refused", "reason"), REFUSED_EVENTS, indirect=["database_url"]
)
def test_a_run_the_database_refuses_is_logged_and_dropped_and_the_others_are_written(
    store: Store,
    tables: Tables,
    database_url: str,
    caplog: pytest.LogCaptureFixture,
    refused: RunEvent,
    reason: str,
) -> None:
    tables.sync([hourly()], at("09:30"))
    for task_id, hour in (("a", "10:00"), ("b", "11:00"), ("c", "12:00")):
        _fire(store, tables, task_id, at(hour))
    caplog.set_level(logging.INFO, logger="celery_dbeat")
    recorder = RunRecorder(database_url, flush_interval=60)  # the test flushes by hand
    try:
        recorder.add(RunEvent("a", RunStatus.SUCCEEDED, at("10:01"), runtime=1.0))
        recorder.add(refused)
        recorder.add(RunEvent("c", RunStatus.FAILED, at("12:01"), error="KeyError: 'x'"))

        assert recorder.flush() is True
        assert recorder.flush() is True  # the refused event is not retried
    finally:
        recorder.close()

    assert {f.task_id: f.run_status for f in tables.fires("hourly")} == {
        "a": "succeeded",
        "b": None,
        "c": "failed",
    }
    assert tables.row("hourly").consecutive_failures == 1  # the written runs are counted
    assert recorder.rejected == 1
    (line,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert f"the run of task {refused.task_id!r} cannot be recorded" in line
    assert reason in line


# History retention --------------------------------------------------------------------------------


def test_prune_deletes_old_history_in_batches_but_never_an_unpublished_fire(
    store: Store, tables: Tables, clock: FixedClock
) -> None:
    tables.sync([hourly()], at("09:30"))
    day = timedelta(days=1)
    for n in range(7):
        _fire(store, tables, f"old-{n}", at("09:00") - 40 * day + n * timedelta(hours=1))
    _fire(store, tables, "old-pending", at("09:00") - 50 * day, status="pending")
    _fire(store, tables, "old-buffered", at("10:00") - 50 * day, status="buffered")
    _fire(store, tables, "recent", at("09:00") - 2 * day)

    # Timed on the test's clock, which does not move: all three batches, on any host.
    deleted = prune_history(
        store.engine, at("09:00") - 30 * day, batch=3, monotonic=clock.monotonic
    )

    assert deleted == 7
    left = sorted(f.task_id for f in tables.fires("hourly"))
    assert left == ["old-buffered", "old-pending", "recent"]


class Ticking:
    """A monotonic clock that moves ``step`` seconds at each reading: a host on which every
    batch of a prune takes that long."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.reading = 0.0

    def __call__(self) -> float:
        self.reading += self.step
        return self.reading


def test_a_prune_stops_once_its_budget_on_the_clock_it_is_given_is_spent(
    store: Store, tables: Tables
) -> None:
    tables.sync([hourly()], at("09:30"))
    for n in range(7):
        _fire(store, tables, f"old-{n}", at("09:00") - timedelta(days=40, hours=-n))

    # 0.15 s a batch against 0.2 s: the second batch ends past the budget, and the prune stops.
    deleted = prune_history(
        store.engine, at("09:00") - timedelta(days=30), batch=3, monotonic=Ticking(0.15)
    )

    assert deleted == 6
    assert [f.task_id for f in tables.fires("hourly")] == ["old-6"]


def _history(store: Store, tables: Tables, name: str, slots: list[datetime], **values: Any) -> None:
    schedule_id = tables.row(name).id
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(F),
            [
                {"schedule_id": schedule_id, "slot": slot, "manual": False, "slot_count": 1,
                 "task_id": f"{name}-{slot:%d%H%M}", "recorded_at": slot, "attempts": 0,
                 "status": "sent", **values}
                for slot in slots
            ],
        )  # fmt: skip


def test_the_history_limit_prune_keeps_each_schedules_newest_fires_and_marks_its_own_slot(
    store: Store, tables: Tables, clock: FixedClock
) -> None:
    """Schedules a little over their limits are pruned together (one batch spans them: each
    schedule's ``pruned_until`` is still its own newest deleted slot, not another's), one more
    than a batch over alone; fires still to be published are neither deleted nor counted."""
    limits = {"daily": 2, "hourly": 3, "minutely": 1, "long": 2, "within": 5, "unlimited": None}
    steps = {"daily": 24 * 60, "hourly": 60, "minutely": 1, "long": 60, "within": 60}
    counts = {"daily": 4, "hourly": 5, "minutely": 2, "long": 12, "within": 5, "unlimited": 9}
    tables.sync(
        [
            Definition.create(name=name, task="t", schedule=Cron("0 * * * *"), history_limit=n)
            for name, n in limits.items()
        ],
        at("09:30"),
    )
    slots = {
        name: [at("09:00") - timedelta(minutes=k * steps.get(name, 60)) for k in range(count)]
        for name, count in counts.items()
    }
    for name in limits:
        _history(store, tables, name, slots[name])
    _history(store, tables, "daily", [at("09:00") - timedelta(days=9)], status="pending")
    _history(store, tables, "daily", [at("10:00")], status="buffered")
    _history(store, tables, "long", [at("09:00") - timedelta(minutes=150)], status="queued")

    # Over by 2, 2 and 1 (a group, one batch of 6 at most); "long" by 10: alone, 6 then 4.
    deleted, after = prune_history_limits(store.engine, batch=6, monotonic=clock.monotonic)

    assert (deleted, after) == (15, 0)
    for name, limit in limits.items():
        kept = [f.slot for f in tables.fires(name) if f.status == "sent"]
        assert kept == sorted(slots[name][:limit] if limit else slots[name]), name
        deleted_slots = slots[name][limit:] if limit else []
        assert tables.row(name).pruned_until == max(deleted_slots, default=None), name
    assert {f.status for f in tables.fires()} == {"sent", "pending", "buffered", "queued"}
    assert prune_history_limits(store.engine, batch=6, monotonic=clock.monotonic) == (0, 0)


def test_a_history_limit_pass_costs_a_few_statements_whatever_the_schedules_within_limits(
    store: Store, tables: Tables, clock: FixedClock
) -> None:
    """The pass finds the schedules over their limit in one grouped statement: 300 schedules
    within their limits and 3 over it cost a handful of statements (before, one transaction per
    schedule: a pass over 100,000 took hours of 0.2 s prunes)."""
    names = [f"s{i:03}" for i in range(300)]
    tables.sync(
        [
            Definition.create(name=n, task="t", schedule=Cron("0 * * * *"), history_limit=2)
            for n in names
        ],
        at("09:30"),
    )
    for name in names:
        extra = 1 if name in ("s000", "s150", "s299") else 0
        _history(
            store, tables, name, [at("09:00") - k * timedelta(hours=1) for k in range(2 + extra)]
        )
    with statements_sent(store) as statements:
        deleted, after = prune_history_limits(store.engine, monotonic=clock.monotonic)

    assert (deleted, after) == (3, 0)
    assert len(statements) <= 10, statements
    assert {len(tables.fires(name)) for name in names} == {2}


def test_beat_prunes_history_older_than_the_retention(
    store: Store, tables: Tables, clock: FixedClock, make_ticker: MakeTicker
) -> None:
    tables.sync([hourly()], at("09:30"))
    _fire(store, tables, "ancient", at("09:00") - timedelta(days=8))
    _fire(store, tables, "kept", at("09:00") - timedelta(days=6))

    make_ticker(history_retention="7d").tick()

    assert [f.task_id for f in tables.fires("hourly")] == ["kept"]


def test_the_beat_prunes_again_within_seconds_while_a_history_limit_pass_is_not_over(
    clock: FixedClock, make_ticker: MakeTicker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass that did not end in one prune goes on at the next housekeeping (5 s), not a minute
    later; once it is over, the next pass waits the minute."""
    calls: list[int] = []
    passes = iter([(1000, 7), (1000, 9), (10, 0)])

    def prune_history_limits(engine: Any, after: int = 0, **_: Any) -> tuple[int, int]:
        calls.append(after)
        return next(passes, (0, 0))

    monkeypatch.setattr(runs, "prune_history_limits", prune_history_limits)
    ticker = make_ticker(max_interval=5, lock_ttl=10)
    for _ in range(6):
        ticker.tick()
        clock.advance(5)

    assert calls == [0, 7, 9]


def test_the_buffered_fire_of_a_paused_schedule_waits_for_the_resume(
    store: Store,
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    # 11:00 is buffered behind 10:00 (a 90-minute run); the schedule is paused at 11:10, so when
    # 10:00 finishes at 11:30 nothing starts, and 11:00 starts at the resume, with its task id.
    tables.sync([hourly(overlap_policy="buffer_one", max_run_time="3h")], at("09:30"))
    clock.set(at("09:30"))
    worker = Worker(store, publisher, RUN)
    ticker = make_ticker(max_interval=5, lock_ttl=10)
    simulate(ticker, clock, worker, at("11:05"))
    assert status_of(tables, at("11:00")) == "buffered"

    tables.update("hourly", enabled=False)
    simulate(ticker, clock, worker, at("12:40"))
    assert sorted(worker.started()) == [at("10:00")]

    tables.update("hourly", enabled=True)
    simulate(ticker, clock, worker, at("12:45"))
    assert worker.started()[at("11:00")] == at("12:45")
    (run_11,) = [r for r in worker.runs if r.slot == at("11:00")]
    assert run_11.task_id == task_id_of("hourly", at("11:00"))


def test_the_run_states_of_a_batch_are_each_schedules_own(store: Store, tables: Tables) -> None:
    """A batch's run states (one statement on PostgreSQL, one per schedule elsewhere) read each
    schedule's newest three live fires: a run is going until it finishes or its
    ``max_run_time`` is over, and an unfinished run behind three newer fires is not looked at."""

    def schedule(name: str, policy: str, **fields: Any) -> Definition:
        return Definition.create(
            name=name, task="t", schedule=Cron("0 * * * *"), overlap_policy=policy, **fields
        )

    tables.sync(
        [
            schedule("idle", "skip"),
            schedule("running", "skip"),
            schedule("lost", "skip", max_run_time=600),
            schedule("buffered", "buffer_one"),
            schedule("behind-newer", "skip"),
            schedule("allowed", "allow"),
        ],
        at("09:30"),
    )
    ten, done = at("10:00"), {"run_status": "succeeded", "finished_at": at("10:01")}
    _history(store, tables, "idle", [ten], **done)
    for name in ("running", "lost", "buffered", "allowed"):
        _history(store, tables, name, [ten], started_at=ten)
    _history(store, tables, "buffered", [at("11:00")], status="buffered")
    _history(store, tables, "behind-newer", [at("06:00")], started_at=at("06:00"))
    _history(store, tables, "behind-newer", [at("07:00"), at("08:00"), ten], **done)

    with store.engine.connect() as conn:
        read, _ = read_rows(conn, sa.select(*PLAN_COLUMNS).order_by(S.c.id))
        rows = [ScheduleRow.from_row(row) for row in read]
        states = runs.run_states(conn, rows, at("10:30"), timedelta(hours=6))

    by_name = {row.name: states.get(row.id) for row in rows}
    assert by_name == {
        "idle": RunState(running=False, buffered=False),
        "running": RunState(running=True, buffered=False),
        "lost": RunState(running=False, buffered=False),
        "buffered": RunState(running=True, buffered=True),
        "behind-newer": RunState(running=False, buffered=False),
        "allowed": None,
    }
