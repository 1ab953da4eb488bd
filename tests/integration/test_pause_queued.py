"""Pausing stops queued fires too (SEMANTICS, "Pause, resume, edits": pausing stops fires). The
slots a catch-up or a backfill queued before or during a pause wait while the schedule is paused,
whatever paused it (a person, ``pause_after_failures``), and go out once it is resumed, each once
with its usual task id; a backfill of a paused schedule says so."""

from __future__ import annotations

from datetime import timedelta

from celery_dbeat import Cron, Every, fire_task_id
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.fires import FireStatus, RunStatus
from celery_dbeat.store import Store
from celery_dbeat.store.runs import RunEvent, record_runs
from tests.integration.conftest import START, MakeTicker, RecordingPublisher, Tables, run
from tests.integration.test_backlog import ANCHOR, SlowBroker

MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def _sent(publisher: RecordingPublisher, name: str) -> list[str]:
    return [request.task_id for request, *_ in publisher if request.schedule_name == name]


def test_a_paused_schedules_backfill_waits_and_goes_out_once_after_the_resume(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, publisher: RecordingPublisher
) -> None:
    api.add("hourly", "t.hourly", Cron("0 * * * *"), start_at=START - DAY)
    api.add("minutely", "t.m", Every(60))
    uid = api.get("hourly").uid
    assert uid is not None
    api.pause("hourly", note="nightly maintenance")

    report = api.backfill("hourly", START - 6 * HOUR, START - HOUR)
    ticker = make_ticker()
    run(ticker, clock, START + 2 * HOUR, step=5 * MINUTE)

    assert report.paused
    assert "'hourly' is paused: they wait, and once it is resumed beats send" in report.summary()
    assert _sent(publisher, "hourly") == []
    assert _sent(publisher, "minutely")  # the beat kept firing the others meanwhile
    assert {f.status for f in api.history("hourly")} == {FireStatus.QUEUED.value}

    api.resume("hourly")
    run(ticker, clock, START + 3 * HOUR, step=5 * MINUTE)
    backfilled = [fire_task_id(uid, START - n * HOUR) for n in range(6, 0, -1)]
    sent = _sent(publisher, "hourly")
    assert sent[:6] == backfilled
    assert len(sent) == len(set(sent))


def test_pausing_in_the_middle_of_a_catch_up_stops_it_until_the_resume(
    api: Schedules, tables: Tables, make_ticker: MakeTicker, clock: FixedClock
) -> None:
    api.add("backlog", "t.b", Every(60), misfire_policy="all", catchup_limit=90, start_at=ANCHOR)
    clock.advance(MINUTE)
    tables.update("backlog", next_run_at=tables.row("backlog").next_run_at - 90 * MINUTE)
    broker = SlowBroker(clock, 0.001)
    paused_after: list[int] = []

    def pause_at_the_tenth(request: object) -> None:
        if len(broker.sent) == 10 and not paused_after:
            api.pause("backlog")
            paused_after.append(len(broker.sent))

    broker.before = pause_at_the_tenth
    ticker = make_ticker(publish=broker)
    ticker.tick()
    in_flight = len(broker.sent)  # the chunk claimed before the pause committed goes out
    run(ticker, clock, clock.now() + HOUR, step=MINUTE)

    assert paused_after == [10]
    assert in_flight < 91
    assert len(broker.sent) == in_flight  # nothing more while paused
    assert ticker.store.peek().queued_at is None  # nothing a beat would wake up for

    api.resume("backlog")
    run(ticker, clock, clock.now() + MINUTE, step=MINUTE)
    slots = [request.slot for request, _ in broker.sent if request.manual is False]
    caught_up = [slot for slot in slots if slot <= START + MINUTE]
    assert len(caught_up) == 91  # the 90 missed slots and the one due, each once
    assert len(set(caught_up)) == 91


def test_a_schedule_paused_after_failures_sends_no_more_of_its_catch_up(
    api: Schedules,
    store: Store,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
) -> None:
    api.add(
        "backlog",
        "t.b",
        Every(60),
        misfire_policy="all",
        catchup_limit=200,
        start_at=ANCHOR,
        pause_after_failures=1,
    )
    api.add("other", "t.o", Every(60), misfire_policy="all", catchup_limit=200, start_at=ANCHOR)
    clock.advance(MINUTE)
    for name in ("backlog", "other"):
        tables.update(name, next_run_at=tables.row(name).next_run_at - 150 * MINUTE)
    ticker = make_ticker()
    ticker.fire_due()  # records both catch-ups as queued, publishes the slots due now
    on_time = next(r for r, *_ in publisher if r.schedule_name == "backlog")
    record_runs(store.engine, [RunEvent(on_time.task_id, RunStatus.FAILED, clock.now())])
    assert api.get("backlog").state == "paused"

    run(ticker, clock, clock.now() + HOUR, step=MINUTE)

    assert len(_sent(publisher, "backlog")) == 1  # its on-time slot, before the failure
    assert len(_sent(publisher, "other")) > 150  # the other schedule's catch-up drained
