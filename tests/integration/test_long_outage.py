"""Beat recovers from a long outage in one tick, whatever the policy, and accounts for every slot.

Before missed slots were counted instead of walked, planning a per-second schedule 30 days
behind stepped through 2.6 million slots inside the batch's transaction, so the batch outlived
its lease (and PostgreSQL's idle-in-transaction limit), rolled back and was tried again, forever.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from typing import Any

import pytest

from celery_dbeat import Cron, Every
from celery_dbeat.beat import batch as batch_module
from celery_dbeat.beat.pacing import next_batch_size
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.planning import plan
from celery_dbeat.store import due as due_module
from celery_dbeat.store.due import DueBatch
from tests.integration.conftest import START, RecordingPublisher, Tables

BEHIND = timedelta(days=30)
COUNT = 1000
SECOND, MINUTE = timedelta(seconds=1), timedelta(minutes=1)


def _thousand(policy: str) -> list[Definition]:
    """Half per-second crons, half per-minute intervals (anchored at creation)."""
    return [
        Definition.create(
            name=f"s{i:04d}",
            task="t.caught_up",
            schedule=Cron("* * * * * *") if i % 2 else Every(60),
            misfire_policy=policy,
            catchup_limit=2,
        )
        for i in range(COUNT)
    ]


def _expected(policy: str, period: timedelta, created: datetime) -> list[datetime]:
    """Published slots with tolerance 0: the slot at ``now`` is on time, the rest missed."""
    now = START
    chosen = {
        "skip": [],
        "latest": [now - period],
        "earliest": [created + period],
        "all": [now - 2 * period, now - period],
    }[policy]
    return [*chosen, now]


@pytest.mark.parametrize(
    ("database_url", "policy"),
    [
        *(pytest.param("postgresql", p, id=f"postgresql-{p}") for p in ("skip", "latest")),
        *(pytest.param("postgresql", p, id=f"postgresql-{p}") for p in ("earliest", "all")),
        pytest.param("mysql", "all", id="mysql-all"),
        pytest.param("sqlite", "latest", id="sqlite-latest"),
    ],
    indirect=["database_url"],
)
def test_a_thousand_schedules_thirty_days_behind_recover_in_one_tick(
    tables: Tables,
    make_ticker: Any,
    clock: FixedClock,
    publisher: RecordingPublisher,
    policy: str,
) -> None:
    created = START - BEHIND
    tables.sync(_thousand(policy), created)
    ticker = make_ticker(misfire_tolerance=0, lock_ttl=10)

    ticker.tick()

    rows = tables.rows()
    assert len(rows) == COUNT
    assert all(row.next_run_at is not None and row.next_run_at > START for row in rows)
    published: defaultdict[str, list[datetime]] = defaultdict(list)
    for name, slot in publisher.fires:
        published[name].append(slot)
    accounted: Counter[str] = Counter()
    for fire in tables.fires():
        accounted[fire.name] += fire.slot_count
    for row in rows:
        period = SECOND if row.kind == "cron" else MINUTE
        assert sorted(published[row.name]) == _expected(policy, period, created), row.name
        # Every slot of the 30 days is either published or recorded with why it was not.
        assert accounted[row.name] == BEHIND // period, row.name


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_batch_plans_for_at_most_a_tenth_of_the_lease_and_leaves_the_rest_due(
    tables: Tables,
    make_ticker: Any,
    clock: FixedClock,
    publisher: RecordingPublisher,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    definitions = [Definition.create(name=f"s{i}", task="t", schedule=Every(1)) for i in range(40)]
    tables.sync(definitions, START)
    planned: list[int] = []

    def slow_plan(*args: Any) -> Any:
        clock._mono += 0.5  # of planning one schedule, on the ticker's monotonic clock
        return plan(*args)

    original = DueBatch.record

    def counting(batch: DueBatch, transitions: Any, lease_until: datetime) -> Any:
        planned.append(len(transitions))
        return original(batch, transitions, lease_until)

    monkeypatch.setattr(batch_module, "plan", slow_plan)
    monkeypatch.setattr(due_module.DueBatch, "record", counting)
    ticker = make_ticker(batch_size=16, lock_ttl=30, max_interval=25)
    clock.advance(1)
    ticker.tick()

    assert max(planned) == 6  # 3 s of planning, a tenth of the lease: the seventh waits
    assert ticker.batch_size == 16  # and the batch stayed well inside the lease
    assert len(publisher) == 40, "every due schedule still fires, in smaller batches"


def test_batches_whose_recording_takes_long_are_halved_and_grow_back_when_quick(
    tables: Tables,
    make_ticker: Any,
    clock: FixedClock,
    publisher: RecordingPublisher,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    definitions = [Definition.create(name=f"s{i}", task="t", schedule=Every(1)) for i in range(40)]
    tables.sync(definitions, START)
    cost = {"seconds": 8.0}  # of recording one batch, on the ticker's monotonic clock
    original = DueBatch.record

    def slow_record(batch: DueBatch, transitions: Any, lease_until: datetime) -> Any:
        clock._mono += cost["seconds"]
        return original(batch, transitions, lease_until)

    monkeypatch.setattr(due_module.DueBatch, "record", slow_record)
    ticker = make_ticker(batch_size=16, lock_ttl=30, max_interval=25)
    caplog.set_level(logging.WARNING, logger="celery_dbeat")
    clock.advance(1)
    ticker.tick()  # the first batch of 16 takes 8 s, over a fifth of the 30 s lease
    assert ticker.batch_size < 16
    assert caplog.records[0].getMessage() == (
        "dbeat: a batch of 16 due schedules took 8.0 s (lease 30 s); claiming 8 at a time"
    )

    cost["seconds"] = 0.0
    while ticker.batch_size < 16:
        ticker.tick()
    first = Counter(name for name, slot in publisher.fires if slot == START + timedelta(seconds=1))
    assert first == dict.fromkeys((d.name for d in definitions), 1), "every schedule fires once"


@pytest.mark.parametrize(
    ("size", "took", "after"),
    [
        pytest.param(500, 0.1, 500, id="quick-at-full-size"),
        pytest.param(500, 2.5, 250, id="over-a-fifth-of-the-lease-halves"),
        pytest.param(1, 9.0, 1, id="never-below-one"),
        pytest.param(100, 0.4, 200, id="under-a-twentieth-doubles"),
        pytest.param(400, 0.4, 500, id="doubling-stops-at-the-setting"),
        pytest.param(100, 1.0, 100, id="in-between-stays"),
    ],
)
def test_next_batch_size(size: int, took: float, after: int) -> None:
    assert next_batch_size(size, took, lease=10.0, configured=500) == after
