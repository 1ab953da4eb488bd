"""Backfill (SEMANTICS: "Backfill of [a, b] publishes the slots of F(S) in [a, b] that have no
fire record yet, each with its usual task id, so backfilling a range twice sends nothing the
second time"), drained like a catch-up: behind on-time fires, oldest first."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat import Cron, Every, ValidationError, fire_task_id
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.backfill import backfill_slots
from celery_dbeat.store import Store, backfill
from celery_dbeat.store.runs import prune_history, prune_history_limits
from tests.integration.conftest import (
    START,
    F,
    MakeTicker,
    RecordingPublisher,
    Tables,
    at,
    run,
)

SECOND = timedelta(seconds=1)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def test_a_backfill_sends_the_slots_of_the_range_with_their_task_ids_behind_on_time_fires(
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    tables: Tables,
) -> None:
    api.add("hourly", "t.hourly", Cron("0 * * * *"), start_at=START - DAY)
    api.add("minutely", "t.m", Every(60))
    uid = api.get("hourly").uid
    assert uid is not None
    clock.advance(timedelta(minutes=1))

    report = api.backfill("hourly", START - 6 * HOUR, START - HOUR)
    run(make_ticker(), clock, clock.now())

    backfilled = [START - n * HOUR for n in range(6, 0, -1)]
    assert report.slots == 6
    assert report.queued == backfilled
    assert report.already == 0
    assert publisher.fires[0] == ("minutely", START + timedelta(minutes=1))  # on time first
    assert [(r.slot, r.task_id) for r, *_ in publisher if r.schedule_name == "hourly"] == [
        (slot, fire_task_id(uid, slot)) for slot in backfilled
    ]
    history = api.history("hourly")
    assert {f.origin for f in history} == {"backfill"}
    assert {f.status for f in history} == {"sent"}


def test_backfilling_a_range_twice_sends_nothing_the_second_time_and_says_so(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, publisher: RecordingPublisher
) -> None:
    api.add("hourly", "t.hourly", Cron("0 * * * *"), start_at=START - DAY)
    first = api.backfill("hourly", START - 3 * HOUR, START)
    run(make_ticker(), clock, clock.now())
    second = api.backfill("hourly", START - 5 * HOUR, START)
    run(make_ticker(), clock, clock.now())

    assert (first.slots, len(first.queued), first.already) == (4, 4, 0)
    assert (second.slots, len(second.queued), second.already) == (6, 2, 4)
    sent = [r.slot for r, *_ in publisher]
    assert sorted(sent) == [START - n * HOUR for n in range(5, -1, -1)]
    assert len(sent) == len(set(sent))


def test_a_dry_run_counts_and_records_nothing(api: Schedules, tables: Tables) -> None:
    api.add("hourly", "t.hourly", Cron("0 * * * *"), start_at=START - DAY)
    report = api.backfill("hourly", START - 10 * HOUR, START, dry_run=True)
    assert (report.slots, len(report.queued), report.dry_run) == (11, 11, True)
    assert tables.fires("hourly") == []


@pytest.mark.parametrize(
    ("start", "end", "limit", "field", "problem"),
    [
        pytest.param(START, START - HOUR, 100, "end", "is before start", id="backwards"),
        pytest.param(START - HOUR, START + HOUR, 100, "end", "is after now", id="future"),
        pytest.param(START - DAY, START, 10, "end", "holds more than 10 slots (the limit)",
                     id="over-the-limit"),
        pytest.param(START - HOUR, START, 0, "limit", "whole number from 1", id="bad-limit"),
    ],
)  # fmt: skip
def test_a_backfill_that_asks_too_much_or_for_the_future_is_refused_and_records_nothing(
    api: Schedules,
    tables: Tables,
    start: datetime,
    end: datetime,
    limit: int,
    field: str,
    problem: str,
) -> None:
    api.add("hourly", "t.hourly", Cron("0 * * * *"), start_at=START - 2 * DAY)
    with pytest.raises(ValidationError) as refused:
        api.backfill("hourly", start, end, limit=limit)
    assert refused.value.field == field
    assert problem in str(refused.value)
    assert tables.fires("hourly") == []


def test_slots_the_misfire_policy_skipped_are_backfilled_and_counted_once(
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    tables: Tables,
) -> None:
    # Beats down from 09:00 to 15:00: policy skip records one row for the five missed slots.
    api.add("hourly", "t.hourly", Cron("0 * * * *"), misfire_policy="skip")
    clock.set(at("15:00:03"))
    run(make_ticker(), clock, clock.now())
    (skipped,) = [f for f in tables.fires("hourly") if f.status == "skipped"]
    assert (skipped.first_slot, skipped.slot, skipped.slot_count) == (at("10:00"), at("14:00"), 5)

    report = api.backfill("hourly", at("11:00"), at("12:00"))
    run(make_ticker(), clock, clock.now())

    assert report.queued == [at("11:00"), at("12:00")]
    runs = sorted(
        (f.status, f.first_slot, f.slot, f.slot_count)
        for f in tables.fires("hourly")
        if f.status == "skipped"
    )
    assert runs == [
        ("skipped", at("10:00"), at("10:00"), 1),  # what the backfill left of the run
        ("skipped", at("13:00"), at("14:00"), 2),
    ]
    assert [r.slot for r, *_ in publisher] == [at("15:00"), at("11:00"), at("12:00")]


def test_a_fire_that_failed_for_good_is_queued_again_under_its_task_id(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, tables: Tables
) -> None:
    api.add("hourly", "t.hourly", Cron("0 * * * *"))
    task_id = fire_task_id(api.get("hourly").uid or "", START - HOUR)
    schedule_id = tables.row("hourly").id
    with tables.store.engine.begin() as conn:  # published for an hour, then given up
        conn.execute(
            sa.insert(F).values(
                schedule_id=schedule_id, slot=START - HOUR, manual=False, status="failed",
                slot_count=1, task_id=task_id, recorded_at=START - HOUR, attempts=9,
            )
        )  # fmt: skip
    report = api.backfill("hourly", START - HOUR, START - HOUR)
    (fire,) = tables.fires("hourly")
    assert report.queued == [START - HOUR]
    assert (fire.status, fire.origin, fire.attempts) == ("queued", "backfill", 0)
    assert fire.task_id == task_id


# Pruned history ---------------------------------------------------------------------------------


def _backfilled_and_sent(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, **fields: Any
) -> list[datetime]:
    """An hourly schedule whose last six hours a backfill sent; those six slots."""
    api.add("hourly", "t.hourly", Cron("0 * * * *"), start_at=START - DAY, **fields)
    api.backfill("hourly", START - 6 * HOUR, START - HOUR)
    run(make_ticker(), clock, clock.now())
    return [START - n * HOUR for n in range(6, 0, -1)]


def test_a_backfill_of_slots_whose_history_the_age_prune_deleted_sends_nothing_and_says_why(
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    store: Store,
) -> None:
    sent = _backfilled_and_sent(api, make_ticker, clock)
    # the oldest three, in two batches (the test's clock, which does not move, times the prune)
    assert prune_history(store.engine, START - 3 * HOUR, batch=2, monotonic=clock.monotonic) == 3
    assert api.get("hourly").pruned_until == START - 4 * HOUR

    again = api.backfill("hourly", START - 6 * HOUR, START - HOUR)
    run(make_ticker(), clock, clock.now())

    assert (again.slots, again.queued, again.already, again.pruned) == (6, [], 3, 3)
    assert again.summary() == (
        "nothing to backfill: 6 slot(s) of 'hourly' in the range, 3 already sent or on their"
        " way, 3 at or before 2024-05-06T05:00:00Z, whose history was pruned (they may have"
        " been sent: backfill with resend to send them anyway)"
    )
    assert sorted(r.slot for r, *_ in publisher) == sent  # each sent once


def test_a_backfill_of_slots_a_history_limit_pruned_sends_nothing_again(
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    store: Store,
) -> None:
    sent = _backfilled_and_sent(api, make_ticker, clock, history_limit=2)
    deleted, _ = prune_history_limits(store.engine, batch=3, monotonic=clock.monotonic)
    assert deleted == 4

    again = api.backfill("hourly", START - 6 * HOUR, START - HOUR)
    wider = api.backfill("hourly", START - 8 * HOUR, START - HOUR, dry_run=True)
    run(make_ticker(), clock, clock.now())

    assert (again.queued, again.already, again.pruned) == ([], 2, 4)
    assert (wider.queued, wider.already, wider.pruned) == ([], 2, 6)  # older ones: unknown too
    assert sorted(r.slot for r, *_ in publisher) == sent


def test_a_resend_sends_the_pruned_slots_again_under_their_task_ids(
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    store: Store,
) -> None:
    sent = _backfilled_and_sent(api, make_ticker, clock)
    prune_history(store.engine, START - 3 * HOUR)
    uid = api.get("hourly").uid or ""
    publisher.clear()

    report = api.backfill("hourly", START - 6 * HOUR, START - HOUR, resend=True)
    run(make_ticker(), clock, clock.now())

    assert (report.queued, report.already, report.pruned) == (sent[:3], 3, 3)
    assert "3 of them at or before 2024-05-06T05:00:00Z, whose history was pruned" in (
        report.summary()
    )
    assert [(r.slot, r.task_id) for r, *_ in publisher] == [
        (slot, fire_task_id(uid, slot)) for slot in sent[:3]
    ]


@pytest.mark.parametrize("database_url", ["postgresql", "mariadb"], indirect=True)
def test_a_backfill_draws_its_slots_without_holding_the_schedule_row(
    api: Schedules, open_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten years of seconds take long to walk even to the limit: beats and workers must not
    wait for that. While the slots are drawn, another connection locks the row at once."""
    api.add("secondly", "t.s", Cron("* * * * * *"), start_at=START - DAY)
    other = open_store()
    locked: list[int] = []

    def drawing(*args: Any) -> list[datetime]:
        with other.engine.begin() as conn:
            query = "SELECT id FROM dbeat_schedules WHERE name = 'secondly' FOR UPDATE NOWAIT"
            locked.append(conn.execute(sa.text(query)).scalar_one())
        return backfill_slots(*args)

    monkeypatch.setattr("celery_dbeat.store.backfill.backfill_slots", drawing)
    report = api.backfill("secondly", START - HOUR, START - HOUR + timedelta(seconds=9))
    assert (report.slots, len(report.queued), len(locked)) == (10, 10, 1)


def test_a_backfill_whose_schedule_changed_after_its_slots_were_drawn_draws_them_again(
    api: Schedules, store: Store, tables: Tables
) -> None:
    api.add("hourly", "t.hourly", Cron("0 * * * *"), start_at=START - DAY)
    stale = backfill.plan(tables.row("hourly"), START - 2 * HOUR, START - HOUR, START, 100)
    api.update("hourly", schedule=Cron("30 * * * *"))

    with store.engine.begin() as conn:
        report = backfill.backfill(
            conn, "hourly", START - 2 * HOUR, START - HOUR, START, limit=100, planned=stale
        )
    assert stale.slots == [START - 2 * HOUR, START - HOUR]
    assert report.queued == [START - 2 * HOUR + HOUR / 2]


def test_a_backfill_is_recorded_as_queued_runs_and_a_second_one_finds_them_on_their_way(
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    tables: Tables,
) -> None:
    """A backfill of 1,200 slots is three rows (queued runs of at most 500 slots), not 1,200
    inserts under the schedule's lock; a backfill of part of it before the beats sent it finds
    every slot on its way, inside the runs too."""
    api.add("minutely", "t.m", Every(60), start_at=START - DAY)
    first = api.backfill("minutely", START - 1200 * 60 * SECOND, START - 60 * SECOND)

    queued = [r for r in tables.fires("minutely") if r.status == "queued"]
    assert sorted(r.slot_count for r in queued) == [200, 500, 500]
    again = api.backfill("minutely", START - 700 * 60 * SECOND, START - 100 * 60 * SECOND)
    run(make_ticker(), clock, clock.now())

    assert len(first.queued) == 1200
    assert (again.slots, len(again.queued), again.already) == (601, 0, 601)
    uid = api.get("minutely").uid
    assert uid is not None
    assert sorted((r.slot, r.task_id) for r, *_ in publisher) == [
        (slot, fire_task_id(uid, slot)) for slot in first.queued
    ]
