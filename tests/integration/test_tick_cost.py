"""A beat's upkeep asks the database as much for 50 schedules as for 5 (README: "cost per tick
does not grow with the number of schedules"), whatever features the schedules use: the
heartbeat, buffered runs, pruning and the missed deadlines go for every schedule at once.
Looking for missed deadlines once ran two queries per schedule with a deadline, in every beat's
tick."""

from __future__ import annotations

from datetime import datetime

from celery_dbeat import Cron
from celery_dbeat.api import Schedules
from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.fires import RunStatus
from celery_dbeat.store import Store
from celery_dbeat.store.runs import RunEvent, record_runs
from tests.integration.conftest import MakeTicker, RecordingPublisher, at, statements_sent


def test_the_upkeep_takes_as_many_statements_for_50_schedules_as_for_5(
    store: Store,
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
) -> None:
    api.calendars.add("holidays", dates=["2024-12-25"])

    def add(first: int, last: int) -> None:
        for n in range(first, last):
            api.add(
                f"s{n:02}",
                "t",
                Cron("0 * * * *"),
                overlap_policy=("skip", "buffer_one", "allow")[n % 3],
                calendar="holidays",
                history_limit=5,
                pause_after_failures=3,
                alert_after_failures=2,
                alert_deadline="15m",
                slot_kwarg="slot",
                previous_slot_kwarg="previous",
            )

    def upkeep(ticker: Ticker, fired: datetime, counted: datetime) -> int:
        """Fire every schedule at ``fired``, let their runs succeed, and count the statements of
        the tick at ``counted`` (nothing due; the upkeep's interval is over)."""
        clock.set(fired)
        ticker.tick()
        record_runs(
            store.engine,
            [RunEvent(r.task_id, RunStatus.SUCCEEDED, fired, worker="w1") for r, *_ in publisher],
        )
        clock.set(counted)
        with statements_sent(store) as statements:
            ticker.tick()
        return len(statements)

    clock.set(at("09:30"))
    add(0, 5)
    ticker = make_ticker()
    five = upkeep(ticker, at("10:00"), at("10:20"))
    add(5, 50)
    fifty = upkeep(ticker, at("11:00"), at("11:20"))

    assert len(publisher) == 5 + 50
    assert fifty == five


def test_a_due_tick_takes_as_many_statements_for_50_schedules_as_for_5(
    store: Store,
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
) -> None:
    """Recording a batch's fires once took one UPDATE per schedule on MySQL/MariaDB and SQLite
    (the compare-and-set of each row: a third of a beat's CPU in a herd), and reading the run
    states of those with an overlap policy one query per schedule."""

    def add(first: int, last: int) -> None:
        for n in range(first, last):
            api.add(
                f"s{n:02}",
                "t",
                Cron("0 * * * *"),
                # Half of them finish with this fire: a transition that disables the row.
                max_runs=1 if n % 2 else None,
                overlap_policy=("skip", "buffer_one", "allow")[n % 3],
            )

    clock.set(at("09:30"))
    add(0, 5)
    ticker = make_ticker()
    ticker.tick()
    clock.set(at("10:00"))
    with statements_sent(store) as five:
        ticker.tick()
    clock.set(at("10:30"))
    add(5, 50)
    ticker.tick()
    clock.set(at("11:00"))
    with statements_sent(store) as fifty:
        ticker.tick()

    assert len(publisher) == 5 + 48  # s01 and s03 ran their one run at 10:00
    assert len(fifty) == len(five)
