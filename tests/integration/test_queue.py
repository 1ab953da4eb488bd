"""Queued runs (``celery_dbeat.store.queue``): a catch-up is recorded as one row per schedule,
and beats turn it into fires as they publish them, oldest slot first, each slot once with its
usual task id, on every backend."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta

import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.fires import FireStatus, PublishRequest
from celery_dbeat.store import Store
from celery_dbeat.store.queue import queued_backlog, queued_slots
from tests.integration.conftest import (
    START,
    F,
    MakeTicker,
    RecordingPublisher,
    Tables,
    slots,
    task_id_of,
)

MINUTE = timedelta(minutes=1)
LEASE = timedelta(seconds=30)
#: Intervals anchored this long before :data:`START`, so that their grid reaches back.
ANCHOR = START - timedelta(hours=3)


def _queue(api: Schedules, tables: Tables, make_ticker: MakeTicker, **behind: int) -> datetime:
    """Schedules every minute, each ``behind[name]`` slots behind with policy ``all``: their
    on-time slot (now) published, their catch-up recorded, not yet published. Returns now."""
    for name, minutes in behind.items():
        api.add(name, "t", Every(60), misfire_policy="all", catchup_limit=minutes, start_at=ANCHOR)
        tables.update(name, next_run_at=START - minutes * MINUTE)
    make_ticker().fire_due()
    return START


def _claim_all(
    store: Store, now: datetime, limit: int, beat: str = "beat-1"
) -> list[list[PublishRequest]]:
    chunks = []
    while requests := store.claim_queued(now, now + LEASE, limit, beat):
        chunks.append(requests)
        store.mark_sent([r.task_id for r in requests], now, beat)
    return chunks


def test_a_catch_up_is_one_queued_row_per_schedule_counted_by_its_slots(
    api: Schedules, tables: Tables, make_ticker: MakeTicker, store: Store
) -> None:
    now = _queue(api, tables, make_ticker, a=30, b=20)

    queued = [r for r in tables.fires() if r.status == FireStatus.QUEUED.value]
    assert sorted(r.slot_count for r in queued) == [20, 30]
    a = tables.row("a").id
    with store.engine.connect() as conn:
        assert queued_backlog(conn) == (50, now - 30 * MINUTE)
        assert queued_slots(conn, a, now - 10 * MINUTE, now) == set(
            slots(now - 10 * MINUTE, MINUTE, now - MINUTE)
        )


def test_queued_runs_go_out_in_chunks_each_schedules_slots_oldest_first_each_once(
    api: Schedules, tables: Tables, make_ticker: MakeTicker, store: Store
) -> None:
    now = _queue(api, tables, make_ticker, a=30, b=20)

    chunks = _claim_all(store, now, limit=7)

    assert [len(c) for c in chunks] == [7] * 7 + [1]
    sent = [(r.schedule_name, r.slot) for chunk in chunks for r in chunk]
    # Each schedule's slots oldest first, each once; the run with the oldest slot is taken from
    # first, and gives what it can before the next one is (a chunk spans at most two runs).
    assert [slot for name, slot in sent if name == "a"] == slots(
        now - 30 * MINUTE, MINUTE, now - MINUTE
    )
    assert [slot for name, slot in sent if name == "b"] == slots(
        now - 20 * MINUTE, MINUTE, now - MINUTE
    )
    assert chunks[0][0].schedule_name == "a"
    assert all(len({r.schedule_name for r in chunk}) <= 2 for chunk in chunks)
    assert all(r.task_id == task_id_of(r.schedule_name, r.slot) for c in chunks for r in c)
    rows = tables.fires()
    assert not [r for r in rows if r.status == FireStatus.QUEUED.value]
    catch_up = [(r.slot, r.task_id) for r in rows if r.slot < now]
    assert len(catch_up) == 50 == len(set(catch_up))  # a row per slot now, none twice
    assert {r.status for r in rows} == {FireStatus.SENT.value}


def test_a_claim_takes_from_as_many_queued_rows_as_the_chunk_needs(
    api: Schedules, tables: Tables, make_ticker: MakeTicker, store: Store
) -> None:
    """Twelve schedules with one queued slot each, more rows than a claim locks at first: a
    chunk of 10 takes ten of them, the next chunk the other two."""
    now = _queue(api, tables, make_ticker, **{f"one-{i:02}": 1 for i in range(12)})

    chunks = _claim_all(store, now, limit=10)

    assert [len(c) for c in chunks] == [10, 2]
    assert sorted(r.schedule_name for c in chunks for r in c) == [f"one-{i:02}" for i in range(12)]


def test_a_queued_slot_that_already_has_a_fire_of_its_own_is_left_to_that_fire(
    api: Schedules, tables: Tables, make_ticker: MakeTicker, store: Store
) -> None:
    now = _queue(api, tables, make_ticker, a=10)
    taken = now - 5 * MINUTE
    # As after an edit that moved next_run_at back onto the slot: a beat recorded it on its own.
    a, task_id = tables.row("a").id, task_id_of("a", taken)
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(F).values(
                schedule_id=a,
                slot=taken,
                manual=False,
                status=FireStatus.SENT.value,
                slot_count=1,
                task_id=task_id,
                recorded_at=now,
                attempts=0,
            )
        )

    chunks = _claim_all(store, now, limit=100)

    sent = [r.slot for chunk in chunks for r in chunk]
    assert sorted(sent) == [s for s in slots(now - 10 * MINUTE, MINUTE, now - MINUTE) if s != taken]
    assert len([r for r in tables.fires() if r.slot == taken]) == 1


def test_a_queued_run_is_not_published_before_its_oldest_slot(
    api: Schedules, tables: Tables, make_ticker: MakeTicker, store: Store
) -> None:
    now = _queue(api, tables, make_ticker, a=10)

    assert store.claim_queued(now - 11 * MINUTE, now, 100, "beat-1") == []
    assert len(store.claim_queued(now - 8 * MINUTE, now, 100, "beat-1")) == 3


def test_two_beats_draining_at_once_publish_each_queued_slot_once(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    open_store: Callable[[], Store],
) -> None:
    now = _queue(api, tables, make_ticker, **{f"s{i}": 40 for i in range(10)})
    stores = [open_store() for _ in range(2)]
    claimed: list[list[PublishRequest]] = [[], []]

    def drain(n: int) -> None:
        for chunk in _claim_all(stores[n], now, limit=15, beat=f"beat-{n}"):
            claimed[n] += chunk

    threads = [threading.Thread(target=drain, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    task_ids = [r.task_id for side in claimed for r in side]
    assert len(task_ids) == 400 == len(set(task_ids))
    assert {r.status for r in tables.fires()} == {FireStatus.SENT.value}


def test_a_beat_drains_a_catch_up_after_its_on_time_fires_one_publish_per_slot(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    publisher: RecordingPublisher,
    clock: FixedClock,
) -> None:
    api.add("on-time", "t", Every(60))
    clock.advance(MINUTE)
    api.add("late", "t", Every(60), misfire_policy="all", catchup_limit=600, start_at=ANCHOR)
    tables.update("late", next_run_at=START - 119 * MINUTE)  # 120 slots behind, one on time

    make_ticker().tick()

    names = [name for name, _ in publisher.fires]
    assert set(names[:2]) == {"on-time", "late"}  # on time first
    late = [slot for name, slot in publisher.fires[2:] if name == "late"]
    assert late == slots(START - 119 * MINUTE, MINUTE, START)
    assert len(publisher.task_ids) == len(set(publisher.task_ids))


def test_a_queued_run_the_database_refuses_to_lease_costs_its_schedule_and_the_others_drain(
    api: Schedules, tables: Tables, make_ticker: MakeTicker, store: Store
) -> None:
    """Before, the refusal failed every claim of queued fires: no catch-up drained at all."""
    now = _queue(api, tables, make_ticker, a=30, victim=20, c=10)
    victim = tables.row("victim").id
    when = f"OLD.status = 'queued' AND NEW.status <> 'failed' AND OLD.schedule_id = {victim}"
    tables.refuse("UPDATE", "dbeat_fires", "leases refused here", when=when)

    # A claim that met only the refused run leases nothing; the next one goes on.
    chunks = _claim_all(store, now, limit=7) + _claim_all(store, now, limit=7)

    sent = [(r.schedule_name, r.slot) for chunk in chunks for r in chunk]
    assert sorted(sent) == sorted(
        [("a", s) for s in slots(now - 30 * MINUTE, MINUTE, now - MINUTE)]
        + [("c", s) for s in slots(now - 10 * MINUTE, MINUTE, now - MINUTE)]
    )
    (run,) = [r for r in tables.fires("victim") if r.slot_count == 20]
    assert run.status == FireStatus.FAILED.value
    assert run.error.startswith("not sent: the database refused to lease its queued slots")
    assert api.get("victim").state == "error"


def test_a_queued_run_whose_slots_cannot_be_read_is_set_aside_and_the_others_drain(
    api: Schedules, tables: Tables, make_ticker: MakeTicker, store: Store
) -> None:
    """Before, the bad JSON failed every claim of queued fires: no catch-up drained at all."""
    now = _queue(api, tables, make_ticker, a=30, victim=20)
    (run,) = [r for r in tables.fires("victim") if r.slot_count == 20]
    tables.execute("UPDATE dbeat_fires SET slots = 'not json' WHERE id = :id", id=run.id)

    chunks = _claim_all(store, now, limit=7)

    sent = [(r.schedule_name, r.slot) for chunk in chunks for r in chunk]
    assert sorted(sent) == [("a", s) for s in slots(now - 30 * MINUTE, MINUTE, now - MINUTE)]
    (failed,) = [r for r in tables.fires("victim") if r.id == run.id]
    assert failed.status == FireStatus.FAILED.value
    assert failed.error.startswith("stored value of slots cannot be read")
