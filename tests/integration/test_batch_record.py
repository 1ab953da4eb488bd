"""``DueBatch.record`` of many transitions at once keeps each row's compare-and-set.

Each backend records a batch in one statement (PostgreSQL: an ``UPDATE ... FROM unnest(...)``;
MySQL/MariaDB: an ``UPDATE ... JOIN JSON_TABLE(...)``; SQLite: one ``executemany``), and row by
row when one of its rows changed since it was read. Either way a row changed since it was read
(an edit, another beat) is left alone, and every other row of the batch is recorded as if it
were alone.
"""

from __future__ import annotations

from datetime import timedelta

from celery_dbeat import Cron
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.misfire import MisfireRules
from celery_dbeat.core.planning import plan
from celery_dbeat.store import Store
from tests.integration.conftest import Tables, at

LEASE = timedelta(seconds=60)
RULES = MisfireRules()


def _hourly(name: str, **fields: object) -> Definition:
    return Definition.create(name=name, task="tasks.hourly", schedule=Cron("0 * * * *"), **fields)  # type: ignore[arg-type]


def test_a_batch_records_each_unchanged_row_and_leaves_each_changed_one(
    store: Store, tables: Tables
) -> None:
    tables.sync(
        [_hourly("plain"), _hourly("edited"), _hourly("moved"), _hourly("last", max_runs=1)],
        at("08:30"),
    )
    tables.insert("to-compute", next_run_at=None)
    tables.insert("broken", next_run_at=at("08:00"), cron="not a cron")
    now = at("09:00:02")
    with store.claim_due(now, 10, "beat-1") as batch:
        stale = {row.name: row for row in batch.schedules}  # read; nothing recorded yet
    assert sorted(stale) == ["broken", "edited", "last", "moved", "plain", "to-compute"]

    # Meanwhile an edit bumps one row's version and another beat moves another's next_run_at.
    assert tables.sync(
        [
            _hourly("plain"),
            _hourly("edited", args=[1]),
            _hourly("moved"),
            _hourly("last", max_runs=1),
        ],
        at("09:00:01"),
    ).updated == ["edited"]
    tables.update("moved", next_run_at=at("10:00"))

    with store.claim_due(now, 10, "beat-1") as batch:
        requests = batch.record([plan(row, now, RULES) for row in stale.values()], now + LEASE)
        applied = sorted(t.schedule.name for t in batch.applied)

    assert applied == ["broken", "last", "plain", "to-compute"]
    assert sorted((r.schedule_name, r.slot) for r in requests) == [
        ("last", at("09:00")),
        ("plain", at("09:00")),
    ]
    plain, last = tables.row("plain"), tables.row("last")
    assert (plain.next_run_at, plain.last_slot, plain.run_count) == (at("10:00"), at("09:00"), 1)
    assert (plain.enabled, plain.finished_at, plain.last_error) == (True, None, None)
    assert (last.next_run_at, last.run_count, last.enabled, last.finished_at) == (
        None,
        1,
        False,
        now,
    )
    assert tables.row("to-compute").next_run_at == at("10:00")
    assert tables.row("to-compute").run_count == 0
    broken = tables.row("broken")
    assert broken.next_run_at is None
    assert broken.last_error is not None
    assert broken.enabled
    assert tables.row("edited").next_run_at == at("09:00")
    assert tables.row("moved").next_run_at == at("10:00")
    assert sorted((f.name, f.status) for f in tables.fires()) == [
        ("last", "pending"),
        ("plain", "pending"),
    ]


def test_a_batch_recorded_as_claimed_stores_each_rows_own_values(
    store: Store, tables: Tables
) -> None:
    """The common case, one statement for the batch: every value lands on its own row."""
    tables.sync([_hourly("plain"), _hourly("last", max_runs=1)], at("08:30"))
    tables.insert("to-compute", next_run_at=None)
    tables.insert("broken", next_run_at=at("08:00"), cron="not a cron \U0001f389 \u00e9")
    now = at("09:00:02") + timedelta(microseconds=123456)
    with store.claim_due(now, 10, "beat-1") as batch:
        transitions = [plan(row, now, RULES) for row in batch.schedules]
        requests = batch.record(transitions, now + LEASE)
        assert sorted(t.schedule.name for t in batch.applied) == sorted(
            t.schedule.name for t in transitions
        )

    assert sorted((r.schedule_name, r.slot) for r in requests) == [
        ("last", at("09:00")),
        ("plain", at("09:00")),
    ]
    plain, last, broken = tables.row("plain"), tables.row("last"), tables.row("broken")
    assert (plain.next_run_at, plain.last_slot, plain.run_count) == (at("10:00"), at("09:00"), 1)
    assert (plain.enabled, plain.finished_at, plain.last_error) == (True, None, None)
    assert (last.next_run_at, last.last_slot, last.run_count) == (None, at("09:00"), 1)
    assert (last.enabled, last.finished_at) == (False, now)
    assert tables.row("to-compute").next_run_at == at("10:00")
    assert tables.row("to-compute").run_count == 0
    error = next(t.error for t in transitions if t.schedule.name == "broken")
    assert error is not None
    assert "\U0001f389 \u00e9" in error
    assert (broken.next_run_at, broken.last_error, broken.enabled) == (None, error, True)
