"""A fire's identity belongs to its schedule, not its name (SEMANTICS: "A schedule's identity is
its row, not its name: a rename keeps it, and a new schedule that takes an old name is a new
identity whose fires never collide with the old one's").

Before each row had a ``uid``, task ids were ``uuid5(name, slot)``: a schedule that took a name
another schedule had fired under planned task ids already recorded, the unique task id refused
the write, and every tick failed (reported as "database unreachable"), so nothing fired at all.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from celery_dbeat import Every, fire_task_id
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from tests.integration.conftest import (
    START,
    MakeTicker,
    RecordingPublisher,
    Tables,
    run,
)

MINUTE = timedelta(minutes=1)


def test_a_schedule_that_takes_a_renamed_schedules_name_fires_beside_it_and_the_rest(
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    tables: Tables,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The scenario: A and C fire; B (policy all) is paused on the same grid as A.
    api.add("A", "t.a", Every(60))
    api.add("B", "t.b", Every(60), misfire_policy="all")
    api.add("C", "t.c", Every(60))
    api.pause("B")
    ticker = make_ticker()
    run(ticker, clock, START + 3 * MINUTE)
    fired_as_a = {r.task_id for r in tables.fires("A")}

    api.update("A", name="A-old")
    api.update("B", name="A")
    api.resume("A", catch_up=True)  # B's missed slots, A's old slots, go through policy all
    caplog.set_level(logging.INFO, logger="celery_dbeat")
    publisher.clear()
    run(ticker, clock, START + 5 * MINUTE)

    sent = {(name, slot) for name, slot in publisher.fires}
    assert {("A-old", START + 4 * MINUTE), ("C", START + 4 * MINUTE)} <= sent
    assert {("A", START + n * MINUTE) for n in (1, 2, 3, 4, 5)} <= sent  # catch-up + on time
    new_a = tables.fires("A")
    assert not fired_as_a & {r.task_id for r in new_a}
    assert len(publisher.task_ids) == len(set(publisher.task_ids))
    assert api.counts()["error"] == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_rename_keeps_the_schedules_identity_and_its_task_ids(
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    tables: Tables,
) -> None:
    before = api.add("report", "t.report", Every(60), jitter="20s")
    due_before = tables.row("report").due_at
    renamed = api.update("report", name="daily-report")
    due_after = tables.row("daily-report").due_at
    run(make_ticker(), clock, START + 3 * MINUTE + timedelta(seconds=20))

    assert before.uid is not None
    assert renamed.uid == before.uid
    assert due_after == due_before  # the jitter hashes the identity, not the name
    assert publisher.fires == [("daily-report", START + n * MINUTE) for n in (1, 2, 3)]
    assert publisher.task_ids == [fire_task_id(before.uid, START + n * MINUTE) for n in (1, 2, 3)]


def test_a_schedule_added_again_under_a_removed_ones_name_is_a_new_identity(
    api: Schedules,
) -> None:
    old = api.add("nightly", "t.n", Every(60))
    api.remove("nightly")
    new = api.add("nightly", "t.n", Every(60))

    assert old.uid is not None
    assert new.uid is not None
    assert new.uid != old.uid
    assert fire_task_id(new.uid, START + MINUTE) != fire_task_id(old.uid, START + MINUTE)


def test_every_way_in_gives_a_new_schedule_a_new_identity_and_keeps_an_existing_ones(
    api: Schedules, tables: Tables
) -> None:
    definitions = [Definition.create(name=n, task="t", schedule=Every(60)) for n in ("x", "y")]
    tables.sync(definitions, START)
    synced = {n: api.get(n).uid for n in ("x", "y")}
    tables.sync(definitions[:1], START + MINUTE)  # y leaves beat_schedule: disabled, kept
    tables.sync(definitions, START + 2 * MINUTE)  # and comes back: the same row
    api.add_many([Definition.create(name="z", task="t", schedule=Every(60))])

    uids = {info.name: info.uid for info in api.list()}
    assert uids["x"] == synced["x"]
    assert uids["y"] == synced["y"]
    assert len(set(uids.values())) == 3
    assert all(uid is not None and len(uid) == 32 for uid in uids.values())


def test_a_row_inserted_by_hand_without_a_uid_is_given_one_when_beat_first_claims_it(
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
) -> None:
    tables.insert("raw", cron="* * * * *")
    assert tables.row("raw").uid is None
    run(make_ticker(), clock, START + 2 * MINUTE)

    uid = tables.row("raw").uid
    assert uid is not None
    assert publisher.task_ids == [fire_task_id(uid, START + n * MINUTE) for n in (1, 2)]
