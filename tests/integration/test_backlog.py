"""Load and backlog (SEMANTICS "Load and backlog"): on-time fires come first and a catch-up
drains with the capacity left over; no unit of work outlives its lease; when more is due than a
beat publishes, it publishes at capacity, says it is behind, and holds no more than one batch
recorded and not yet sent.

Time here is a :class:`FixedClock` that publishing moves forward (a broker that takes a few
milliseconds per message), so "how late" is measured on the test's own clock, never on the
host's.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import FireStatus, PublishRequest
from celery_dbeat.store import due as due_module
from celery_dbeat.store.due import DueBatch
from tests.integration.conftest import START, F, MakeTicker, Tables, run

SECOND = timedelta(seconds=1)
MINUTE = timedelta(minutes=1)


class SlowBroker:
    """A broker that takes ``seconds`` of the test's clock per message; keeps what it got, with
    the clock's time of each publish."""

    def __init__(self, clock: FixedClock, seconds: float) -> None:
        self.clock = clock
        self.step = timedelta(seconds=seconds)
        self.sent: list[tuple[PublishRequest, datetime]] = []
        #: Called before each publish (a test's way to act in the middle of a batch).
        self.before: Callable[[PublishRequest], None] = lambda request: None

    def __call__(self, request: PublishRequest, *payload: Any) -> None:
        self.before(request)
        self.clock.advance(self.step)
        self.sent.append((request, self.clock.now()))

    @property
    def names(self) -> list[str]:
        return [request.schedule_name for request, _ in self.sent]


#: Intervals anchored this long before :data:`START`, so that their grid reaches back.
ANCHOR = START - timedelta(hours=3)


def _backdate(tables: Tables, names: list[str], behind: timedelta) -> None:
    """Move these schedules' next slot back as if every beat had been down for ``behind``."""
    for name in names:
        row = tables.row(name)
        tables.update(name, next_run_at=row.next_run_at - behind)


def add_catch_up(
    api: Schedules, tables: Tables, clock: FixedClock, names: list[str], behind: timedelta
) -> None:
    """Every-minute schedules ``names`` of policy ``all``, each ``behind`` behind (as if every
    beat had been down), and one every-second schedule whose slots must stay on time; the
    clock a minute on."""
    api.add_many(
        [
            Definition.create(
                name=n, task="t", schedule=Every(60), misfire_policy="all", start_at=ANCHOR
            )
            for n in names
        ]
    )
    clock.advance(MINUTE)
    api.add("every-second", "t.s", Every(1))
    _backdate(tables, names, behind)


def test_a_catch_up_is_queued_and_drains_after_the_on_time_fires_oldest_first(
    api: Schedules, tables: Tables, make_ticker: MakeTicker, clock: FixedClock
) -> None:
    api.add("backlog", "t.b", Every(60), misfire_policy="all", catchup_limit=50, start_at=ANCHOR)
    api.add("on-time", "t.o", Every(60))
    clock.advance(MINUTE)  # both due now; the backlog also 50 minutes behind
    _backdate(tables, ["backlog"], 50 * MINUTE)
    broker = SlowBroker(clock, 0.001)

    make_ticker(publish=broker).tick()

    sent = [(request.schedule_name, request.slot) for request, _ in broker.sent]
    now = START + MINUTE
    assert set(sent[:2]) == {("backlog", now), ("on-time", now)}  # on time first
    assert sent[2:] == [("backlog", now - n * MINUTE) for n in range(50, 0, -1)]  # oldest first
    assert {r.status for r in tables.fires("backlog")} == {FireStatus.SENT.value}


def test_while_a_large_catch_up_drains_every_on_time_slot_goes_out_within_a_chunk(
    api: Schedules, tables: Tables, make_ticker: MakeTicker, clock: FixedClock
) -> None:
    catch_up = [f"backlog-{i}" for i in range(20)]
    add_catch_up(api, tables, clock, catch_up, 100 * MINUTE)  # 20 x 100 = 2,000 queued fires
    broker = SlowBroker(clock, 0.005)  # 200 a second: the backlog takes 10 s of the clock
    ticker = make_ticker(publish=broker)

    run(ticker, clock, START + MINUTE + 20 * SECOND)

    on_time = [(r.slot, at) for r, at in broker.sent if r.schedule_name == "every-second"]
    queued = [at for r, at in broker.sent if r.schedule_name.startswith("backlog")]
    assert len(queued) == 20 * 101
    assert max(queued) > START + MINUTE + 9 * SECOND  # the drain took the time it takes
    slots = [slot for slot, _ in on_time]
    assert slots == sorted(set(slots))  # each slot once, in order
    assert slots[-1] - slots[0] == timedelta(seconds=len(slots) - 1)  # none skipped
    # Lag measured on the test's clock: never the whole backlog's, at most one drain chunk's
    # (a quarter of a second of publishing) and the slot's own publish.
    assert max(at - slot for slot, at in on_time) < SECOND


def test_a_batch_records_at_most_batch_size_fires_whatever_the_schedules_claimed(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = [f"s{i:02}" for i in range(30)]
    api.add_many([Definition.create(name=n, task="t", schedule=Every(1)) for n in names])
    clock.advance(4 * SECOND)  # each schedule now has 4 late slots: 120 fires due
    recorded: list[int] = []
    original = DueBatch.record

    def counting(batch: DueBatch, transitions: Any, lease_until: datetime) -> Any:
        recorded.append(sum(len(t.fires) for t in transitions))
        return original(batch, transitions, lease_until)

    monkeypatch.setattr(due_module.DueBatch, "record", counting)
    broker = SlowBroker(clock, 0.0)

    make_ticker(publish=broker, batch_size=10).tick()

    assert max(recorded) <= 10
    assert sum(recorded) == 120
    assert len(broker.sent) == 120 == len({r.task_id for r, _ in broker.sent})


def test_a_catch_up_is_recorded_as_one_queued_run_per_schedule_in_few_batches(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A schedule's catch-up is one row (a queued run), an insert that weighs a tenth of a fire
    published in the batch: a week's catch-up is recorded in few batches and few rows. (One row
    per slot, 20 schedules of 50 queued slots were 1,000 inserts; counted as fires, they took
    20 batches while the on-time slots of the schedules after them waited.)"""
    names = [f"all-{i:02}" for i in range(20)]
    api.add_many(
        [
            Definition.create(
                name=n,
                task="t",
                schedule=Every(1),
                start_at=ANCHOR,
                misfire_policy="all",
                catchup_limit=50,
            )
            for n in names
        ]
    )
    _backdate(tables, names, timedelta(hours=1))
    recorded: list[Counter[str]] = []
    original = DueBatch.record

    def counting(batch: DueBatch, transitions: Any, lease_until: datetime) -> Any:
        recorded.append(Counter(f.status.value for t in transitions for f in t.fires))
        return original(batch, transitions, lease_until)

    monkeypatch.setattr(due_module.DueBatch, "record", counting)

    make_ticker(publish=SlowBroker(clock, 0.0), batch_size=100).fire_due()

    assert sum(c["queued"] for c in recorded) == 20
    queued = [r for r in tables.fires() if r.status == FireStatus.QUEUED.value]
    assert sorted(r.slot_count for r in queued) == [50] * 20
    assert {r.task_id for r in queued} == {None}
    # Each schedule: a queued run and a skipped run (recorded only: 0.1 each), 6 late slots to
    # publish: 6.2 of the budget of 100, 16 schedules a batch.
    assert len(recorded) == 2


def test_a_publish_slower_than_the_lease_extends_it_and_leaves_nothing_to_recovery(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    api.add_many([Definition.create(name=f"s{i}", task="t", schedule=Every(60)) for i in range(8)])
    clock.advance(MINUTE)
    broker = SlowBroker(clock, 3.0)  # 8 x 3 s = 24 s, against a lease of 10 s
    caplog.set_level(logging.INFO, logger="celery_dbeat")

    make_ticker(publish=broker, lock_ttl=10).tick()

    assert len(broker.sent) == 8
    assert {r.status for r in tables.fires()} == {FireStatus.SENT.value}
    assert not [r for r in caplog.records if "ran out" in r.getMessage()]


def test_fires_taken_over_by_another_beat_mid_publish_are_left_to_it(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
) -> None:
    api.add_many([Definition.create(name=f"s{i}", task="t", schedule=Every(60)) for i in range(6)])
    clock.advance(MINUTE)
    broker = SlowBroker(clock, 3.0)

    def another_beat_takes_over(request: PublishRequest) -> None:
        if len(broker.sent) == 1:  # during the second publish, before the lease is extended
            started = [request.task_id, broker.sent[0][0].task_id]
            with tables.store.engine.begin() as conn:  # as a beat that found it over would
                conn.execute(
                    sa.update(F)
                    .where(F.c.task_id.not_in(started))
                    .values(lease_until=START + timedelta(days=1))
                )

    broker.before = another_beat_takes_over
    make_ticker(publish=broker, lock_ttl=10).tick()

    assert len(broker.sent) == 2
    assert {r.status for r in tables.fires()} == {"sent", "pending"}


def test_a_beat_that_cannot_keep_up_says_so_once_and_again_when_it_has_caught_up(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    names = [f"s{i:03}" for i in range(150)]
    api.add_many([Definition.create(name=n, task="t", schedule=Every(1)) for n in names])
    broker = SlowBroker(clock, 0.01)  # 100 a second, 150 due a second
    ticker = make_ticker(publish=broker)
    caplog.set_level(logging.INFO, logger="celery_dbeat")

    run(ticker, clock, START + 30 * SECOND)
    for name in names[50:]:
        api.pause(name)  # 50 a second now: it catches up
    run(ticker, clock, clock.now() + 60 * SECOND)

    warnings = [r.getMessage() for r in caplog.records if "behind by" in r.getMessage()]
    assert len(warnings) == 1
    assert "add beats" in warnings[0]
    assert [r for r in caplog.records if "caught up after" in r.getMessage()]
    task_ids = [r.task_id for r, _ in broker.sent]
    assert len(task_ids) == len(set(task_ids))
    pending = [r for r in tables.fires() if r.status != FireStatus.SENT.value]
    assert not pending


def test_beats_back_from_an_outage_do_not_call_the_slots_they_missed_being_behind(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Behind is lateness while beats were watching: rows due since every beat was down are
    misfires their policy resolves, however long the first pass over them takes. (It said
    'behind by 3600.0 s: ... add beats' after an hour's outage.)"""
    names = [f"s{i:02}" for i in range(50)]
    api.add_many(
        [Definition.create(name=n, task="t", schedule=Every(60), start_at=ANCHOR) for n in names]
    )
    _backdate(tables, names, timedelta(hours=1))
    broker = SlowBroker(clock, 0.05)  # 20 a second: the first pass takes a few ticks
    caplog.set_level(logging.INFO, logger="celery_dbeat")

    run(make_ticker(publish=broker, batch_size=10, max_interval=1), clock, START + 10 * SECOND)

    assert {name for (name,) in [(r.schedule_name,) for r, _ in broker.sent]} == set(names)
    assert not [r for r in caplog.records if "behind by" in r.getMessage()]


def test_on_time_slots_go_before_the_rest_of_the_first_pass_after_an_outage(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
) -> None:
    """After a long outage the first pass over every schedule takes a while; a schedule it has
    planned comes due again meanwhile, and its slot goes out in the next batch, not behind the
    rest of the pass. (Claimed oldest first, the every-second slots waited for the whole pass.)"""
    missed = [f"m{i:03}" for i in range(200)]
    api.add_many(
        [Definition.create(name=n, task="t", schedule=Every(60), start_at=ANCHOR) for n in missed]
    )
    api.add_many([Definition.create(name=f"s{i}", task="t", schedule=Every(1)) for i in range(5)])
    _backdate(tables, missed, timedelta(hours=2))  # missed 2 hours: one `latest` fire each
    broker = SlowBroker(clock, 0.01)  # 100 a second: the first pass takes over 2 s

    run(make_ticker(publish=broker, batch_size=20), clock, START + 5 * SECOND)

    assert set(broker.names) >= set(missed)
    on_time = [(r.slot, at) for r, at in broker.sent if r.schedule_name.startswith("s")]
    assert max(at for r, at in broker.sent if r.schedule_name in missed) > START + 2 * SECOND
    # Each on-time slot waited at most a batch (20 fires, 0.2 s) and the ones before it.
    assert max(at - slot for slot, at in on_time) < 0.5 * SECOND


# SQLite publishes each batch before it claims the next (Store.publishes_ahead): nothing waits.
@pytest.mark.parametrize("database_url", ["postgresql", "mariadb"], indirect=True)
def test_a_beat_that_ran_out_of_time_starts_its_next_call_with_a_small_batch(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Behind, a beat's publisher waits for the first batch of each call: that one is small
    (50 rows) and the batches double up to the batch size; a beat that caught up claims whole
    batches again. Every fire is published once."""
    api.add_many(
        [Definition.create(name=f"s{i}", task="t", schedule=Every(60)) for i in range(450)]
    )
    clock.advance(MINUTE)
    # 0.06 s of the test's clock a message: a batch of 100 takes 6 s, past the 5 s a call has.
    broker = SlowBroker(clock, 0.06)
    ticker = make_ticker(publish=broker, batch_size=100)
    limits: list[int] = []
    claim_due = ticker.store.claim_due

    def counting(now: datetime, limit: int, *rest: Any) -> Any:
        limits.append(limit)
        return claim_due(now, limit, *rest)

    monkeypatch.setattr(ticker.store, "claim_due", counting)

    calls = []
    while len(broker.sent) < 450:
        limits.clear()
        ticker.fire_due()
        calls.append(list(limits))
        assert len(calls) < 20

    assert calls[0][0] == 100
    assert calls[1][:2] == [50, 100], calls
    assert sorted(broker.names) == sorted(f"s{i}" for i in range(450))
    # Caught up: the next minute's herd is claimed a whole batch at a time again.
    clock.advance(MINUTE)
    limits.clear()
    ticker.fire_due()
    assert limits[0] == 100
