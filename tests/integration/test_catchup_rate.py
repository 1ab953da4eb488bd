"""``dbeat_catchup_rate`` (docs/explanation/load-and-backlog.md): a beat publishes at most that
many queued slots (catch-up of policy ``all``, backfill) a second, a token bucket of one
second's worth (:class:`celery_dbeat.beat.pacing.Allowance`), while every on-time slot still
goes out on time; without it the same backlog drains with all the capacity on-time fires leave.

Time is the test's :class:`FixedClock`, which the broker moves forward per message, so rates are
measured on that clock, never on the host's.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.fires import FireStatus
from tests.integration.conftest import MakeTicker, Tables, run
from tests.integration.test_backlog import SlowBroker, add_catch_up

SECOND = timedelta(seconds=1)
MINUTE = timedelta(minutes=1)
#: The catch-up: this many schedules, each this many minutes behind (one queued slot a minute).
SCHEDULES, BEHIND = 20, 50
#: The broker takes a millisecond a message: about 1,000 a second, far above the rate below.
PER_MESSAGE = 0.001
RATE = 20


def _queue_catch_up(api: Schedules, tables: Tables, clock: FixedClock) -> datetime:
    """Every-minute schedules of policy ``all``, each :data:`BEHIND` slots behind, and one
    every-second schedule whose slots must stay on time. Returns now (when the beat starts)."""
    add_catch_up(api, tables, clock, [f"backlog-{i:02}" for i in range(SCHEDULES)], BEHIND * MINUTE)
    return clock.now()


def _queued(broker: SlowBroker, now: datetime) -> list[datetime]:
    """When each queued slot (a backlog slot before ``now``) was published, in order."""
    return [at for r, at in broker.sent if r.schedule_name.startswith("backlog") and r.slot < now]


def _assert_on_time(broker: SlowBroker) -> None:
    """Every slot of ``every-second`` went out once, none skipped, each within a second."""
    on_time = [(r.slot, at) for r, at in broker.sent if r.schedule_name == "every-second"]
    slots = [slot for slot, _ in on_time]
    assert slots == sorted(set(slots))
    assert slots[-1] - slots[0] == timedelta(seconds=len(slots) - 1)
    assert max(at - slot for slot, at in on_time) < SECOND


def test_a_beat_publishes_at_most_catchup_rate_queued_slots_a_second_and_on_time_fires_on_time(
    api: Schedules, tables: Tables, make_ticker: MakeTicker, clock: FixedClock
) -> None:
    began = _queue_catch_up(api, tables, clock)
    broker = SlowBroker(clock, PER_MESSAGE)
    ticker = make_ticker(publish=broker, catchup_rate=RATE)  # its allowance starts full now

    run(ticker, clock, began + 10 * SECOND)

    queued = _queued(broker, began)
    # A bucket of one second's worth, refilled at RATE a second: by any instant t, at most
    # RATE + RATE * (t - began) queued slots were published. Without the cap the beat drains
    # about 1,000 a second (the next test), which breaks this at the first drain.
    for published, at in enumerate(queued, start=1):
        assert published <= RATE * (1 + (at - began) / SECOND), (published, at - began)
    # ... and the allowance is used, not starved by the on-time slots.
    assert len(queued) >= RATE * 9
    assert len(queued) < SCHEDULES * BEHIND  # the catch-up is still draining
    _assert_on_time(broker)
    assert len({r.task_id for r, _ in broker.sent}) == len(broker.sent)


def test_without_catchup_rate_the_same_catch_up_drains_with_all_the_capacity_left(
    api: Schedules, tables: Tables, make_ticker: MakeTicker, clock: FixedClock
) -> None:
    began = _queue_catch_up(api, tables, clock)
    broker = SlowBroker(clock, PER_MESSAGE)

    run(make_ticker(publish=broker), clock, began + 10 * SECOND)

    queued = _queued(broker, began)
    assert len(queued) == SCHEDULES * BEHIND
    # About a thousand a second, far more than RATE's 20: done within a few seconds.
    assert max(queued) - began < 3 * SECOND
    _assert_on_time(broker)
    assert len({r.task_id for r, _ in broker.sent}) == len(broker.sent)
    assert FireStatus.QUEUED.value not in {r.status for r in tables.fires()}
