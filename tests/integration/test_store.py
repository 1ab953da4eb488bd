"""The store contract on SQLite, PostgreSQL and MariaDB: schema versions, UTC instants, claiming.

``SEMANTICS.md``: next_run_at is "stored in UTC in an indexed column"; each fire "is recorded in
SQL with a unique constraint on (schedule, slot), in the same transaction that advances
next_run_at with a compare-and-set on its old value".
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from celery_dbeat import Cron
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.errors import DBeatError, SchemaVersionError
from celery_dbeat.core.fires import FireStatus
from celery_dbeat.core.misfire import MisfireRules
from celery_dbeat.core.planning import plan
from celery_dbeat.store import Store, check_schema, create_engine, database, migrate
from celery_dbeat.store.database import VERSION_TABLE
from tests.integration.conftest import (
    F,
    Tables,
    at,
    on_each_statement,
    statements_sent,
    task_id_of,
)
from tests.services import private_database

UTC = timezone.utc
LEASE = timedelta(seconds=60)
RULES = MisfireRules()


def hourly(name: str) -> Definition:
    return Definition.create(name=name, task="tasks.hourly", schedule=Cron("0 * * * *"))


# Schema ------------------------------------------------------------------------------------------


def test_migrate_is_idempotent_and_check_schema_passes(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        with pytest.raises(SchemaVersionError, match="not installed"):
            check_schema(engine)
        head = migrate(engine)
        assert migrate(engine) == head
        assert check_schema(engine) == head
        tables = set(sa.inspect(engine).get_table_names())
        assert {"dbeat_schedules", "dbeat_fires", VERSION_TABLE} <= tables
    finally:
        engine.dispose()


def test_beats_migrating_at_once_all_end_at_head(database_url: str) -> None:
    engine = create_engine(database_url)
    barrier = threading.Barrier(4, timeout=30)
    results: list[str] = []
    errors: list[BaseException] = []
    # What each connection did, in order: its statements and its commits.
    events: dict[int, list[str]] = {}

    @sa.event.listens_for(engine, "before_cursor_execute")
    def _statement(conn, cursor, statement, params, context, executemany):  # type: ignore[no-untyped-def]
        events.setdefault(id(conn.connection), []).append(statement)

    @sa.event.listens_for(engine, "commit")
    def _commit(conn):  # type: ignore[no-untyped-def]
        events.setdefault(id(conn.connection), []).append("COMMIT")

    def start_beat() -> None:
        try:
            barrier.wait()
            results.append(migrate(engine))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start_beat) for _ in range(4)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert errors == []
        assert len(results) == 4
        assert len(set(results)) == 1
        assert check_schema(engine) == results[0]
        # MySQL/MariaDB: a session lock released before the migration commits lets the next beat
        # read the old version and run the last migration again ("Duplicate column name").
        for statements in events.values():
            for index, statement in enumerate(statements):
                if "RELEASE_LOCK" in statement:
                    assert statements[index - 1] == "COMMIT", statements
    finally:
        engine.dispose()


def test_a_migration_waits_only_for_its_own_database(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MySQL/MariaDB lock names are server-wide: a migration of one database must not wait for
    (and, once the wait runs out, fail beside) a migration of another on the same server."""
    monkeypatch.setattr(database, "_MIGRATION_WAIT_S", 1)
    with (
        private_database("mysql", tmp_path_factory) as other_url,
        private_database("mysql", tmp_path_factory) as url,
    ):
        other, engine, second = (create_engine(u) for u in (other_url, url, url))
        try:
            with database._migration(other):  # another database's migration, still running
                assert migrate(engine) == check_schema(engine)
                with database._migration(engine), pytest.raises(DBeatError) as waited:
                    migrate(second)  # this database's own migration still running: refused
            assert str(waited.value).startswith("another process held this database's migration")
        finally:
            for each in (engine, other, second):
                each.dispose()


@pytest.mark.parametrize(
    "check",
    [
        pytest.param(check_schema, id="check_schema"),
        pytest.param(migrate, id="migrate"),
    ],
)
def test_a_schema_at_an_unknown_revision_is_refused(store: Store, check: object) -> None:
    with store.engine.begin() as conn:
        conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = 'f00dfeed'"))

    with pytest.raises(SchemaVersionError, match=r"'f00dfeed'.*upgrade celery-dbeat"):
        check(store.engine)  # type: ignore[operator]

    with store.engine.connect() as conn:
        version = conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
    assert version == "f00dfeed"


# UTC instants ------------------------------------------------------------------------------------

INSTANTS = [
    pytest.param(datetime(2024, 3, 10, 7, 0, 0, 123456, tzinfo=UTC), id="utc-with-microseconds"),
    pytest.param(
        datetime(2024, 11, 3, 1, 30, 0, 999999, tzinfo=ZoneInfo("America/New_York"), fold=1),
        id="new-york-second-01:30",
    ),
    pytest.param(
        datetime(1999, 12, 31, 23, 59, 59, 1, tzinfo=timezone(timedelta(hours=5, minutes=45))),
        id="plus-05:45-across-midnight",
    ),
]


def stored_utc_text(engine: Engine, name: str) -> str:
    """next_run_at of ``name`` as the database itself prints it in UTC (no Python conversion)."""
    dialect = engine.dialect.name
    if dialect == "postgresql":
        column = "to_char(next_run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')"
    elif dialect in ("mysql", "mariadb"):
        column = "DATE_FORMAT(next_run_at, '%Y-%m-%d %H:%i:%s.%f')"
    else:
        column = "next_run_at"
    with engine.connect() as conn:
        text = conn.execute(
            sa.text(f"SELECT {column} FROM dbeat_schedules WHERE name = :n"), {"n": name}
        ).scalar()
    return str(text)


def assert_aware_utc(value: datetime | None, expected: datetime) -> None:
    # Compared in UTC: PEP 495 makes a fold=1 instant unequal to every other zone's datetime.
    assert value == expected.astimezone(UTC)
    assert value is not None
    assert value.tzinfo is not None
    assert value.utcoffset() == timedelta(0)
    assert value.microsecond == expected.astimezone(UTC).microsecond


@pytest.mark.parametrize("instant", INSTANTS)
def test_timestamps_round_trip_as_aware_utc_with_microseconds(
    store: Store, tables: Tables, instant: datetime
) -> None:
    tables.insert("t", next_run_at=instant, last_slot=instant)

    row = tables.row("t")
    assert_aware_utc(row.next_run_at, instant)
    assert_aware_utc(row.last_slot, instant)
    assert stored_utc_text(store.engine, "t") == instant.astimezone(UTC).strftime(
        "%Y-%m-%d %H:%M:%S.%f"
    )
    earliest = store.peek().earliest
    assert_aware_utc(earliest, instant)
    with store.claim_due(instant, 10, "beat-1") as batch:
        assert [r.name for r in batch.schedules] == ["t"]
        assert_aware_utc(batch.schedules[0].next_run_at, instant)
    with store.claim_due(instant - timedelta(microseconds=1), 10, "beat-1") as batch:
        assert batch.schedules == []


def _session_zone_engine(url: str, zone: str) -> Engine:
    """An engine whose every connection runs in a non-UTC session time zone."""
    engine = create_engine(url)

    @sa.event.listens_for(engine, "connect")
    def _set_zone(dbapi_connection: object, _record: object) -> None:
        cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
        if engine.dialect.name == "postgresql":
            cursor.execute(f"SET TIME ZONE '{zone}'")
        else:
            cursor.execute(f"SET time_zone = '{zone}'")
        cursor.close()
        if engine.dialect.name == "postgresql":
            dbapi_connection.commit()  # type: ignore[attr-defined]

    return engine


SESSION_ZONES = [
    pytest.param("postgresql", "America/New_York", id="postgresql-new-york"),
    pytest.param("postgresql", "Asia/Kathmandu", id="postgresql-kathmandu"),
    pytest.param("mysql", "+05:00", id="mysql-plus-05:00"),
    pytest.param("mysql", "-09:30", id="mysql-minus-09:30"),
]


@pytest.mark.parametrize(("database_url", "zone"), SESSION_ZONES, indirect=["database_url"])
@pytest.mark.parametrize("instant", INSTANTS)
def test_timestamps_are_utc_whatever_the_database_session_time_zone(
    database_url: str, zone: str, instant: datetime
) -> None:
    plain = Store(database_url)
    zoned = Store(_session_zone_engine(database_url, zone))
    try:
        migrate(plain.engine)
        with zoned.engine.connect() as conn:
            if zoned.engine.dialect.name == "postgresql":
                assert conn.execute(sa.text("SHOW TIME ZONE")).scalar() == zone
            else:
                assert conn.execute(sa.text("SELECT @@session.time_zone")).scalar() == zone
        Tables(zoned).insert("written-zoned", next_run_at=instant)
        Tables(plain).insert("written-plain", next_run_at=instant)

        expected_text = instant.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        for store in (plain, zoned):
            for name in ("written-zoned", "written-plain"):
                assert stored_utc_text(store.engine, name) == expected_text
                assert_aware_utc(Tables(store).row(name).next_run_at, instant)
            with store.claim_due(instant, 10, "beat") as batch:
                assert sorted(r.name for r in batch.schedules) == ["written-plain", "written-zoned"]
            with store.claim_due(instant - timedelta(microseconds=1), 10, "beat") as batch:
                assert batch.schedules == []
    finally:
        zoned.engine.dispose()
        plain.close()


@pytest.fixture(params=["Australia/Lord_Howe", "America/St_Johns"])
def process_tz(request: pytest.FixtureRequest) -> Iterator[str]:
    """The process's local time zone (``TZ``) set to something far from UTC, restored after."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = request.param
    time.tzset()
    try:
        yield request.param
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()


@pytest.mark.parametrize("instant", INSTANTS)
def test_timestamps_and_slots_are_utc_whatever_the_process_time_zone(
    process_tz: str, store: Store, tables: Tables, instant: datetime
) -> None:
    assert time.localtime(0).tm_gmtoff != 0
    tables.insert("t", next_run_at=instant)
    assert_aware_utc(tables.row("t").next_run_at, instant)
    assert stored_utc_text(store.engine, "t") == instant.astimezone(UTC).strftime(
        "%Y-%m-%d %H:%M:%S.%f"
    )

    # SEMANTICS example: America/New_York `30 2 * * *` -> 2024-03-10T07:00Z, then 2024-03-11T06:30Z.
    definition = Definition.create(
        name="ny", task="tasks.ny", schedule=Cron("30 2 * * *", timezone="America/New_York")
    )
    tables.sync([definition], datetime(2024, 3, 9, 12, tzinfo=UTC))
    assert tables.row("ny").next_run_at == datetime(2024, 3, 10, 7, 0, tzinfo=UTC)
    now = datetime(2024, 3, 10, 7, 0, 30, tzinfo=UTC)
    with store.claim_due(now, 10, "beat") as batch:
        rows = [r for r in batch.schedules if r.name == "ny"]
        requests = batch.record([plan(r, now, RULES) for r in rows], now + LEASE)
    assert [(r.slot, r.task_id) for r in requests] == [
        (datetime(2024, 3, 10, 7, 0, tzinfo=UTC), task_id_of("ny", at("07:00", now)))
    ]
    assert tables.row("ny").next_run_at == datetime(2024, 3, 11, 6, 30, tzinfo=UTC)


NAIVE = datetime(2024, 5, 6, 9, 0)


def _insert_naive(store: Store) -> None:
    Tables(store).insert("naive", next_run_at=NAIVE)


def _claim_due_naive(store: Store) -> None:
    with store.claim_due(NAIVE, 10, "beat"):
        pass


def _claim_stale_naive(store: Store) -> None:
    store.claim_stale_pending(NAIVE, NAIVE, 10)


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(_insert_naive, id="insert"),
        pytest.param(_claim_due_naive, id="claim_due"),
        pytest.param(_claim_stale_naive, id="claim_stale_pending"),
    ],
)
def test_naive_datetimes_are_refused(store: Store, write: object) -> None:
    with pytest.raises(sa.exc.StatementError, match="naive datetime"):
        write(store)  # type: ignore[operator]


# Claiming due schedules --------------------------------------------------------------------------


def test_claim_due_returns_due_enabled_rows_by_next_run_at_then_rows_to_compute(
    store: Store, tables: Tables
) -> None:
    now = at("10:00")
    tables.insert("due-late", next_run_at=at("09:30"))
    tables.insert("future", next_run_at=at("10:00:01"))
    tables.insert("due-now", next_run_at=now)
    tables.insert("due-early", next_run_at=at("08:00"))
    tables.insert("disabled-due", next_run_at=at("07:00"), enabled=False)
    tables.insert("to-compute", next_run_at=None)
    tables.insert("broken", next_run_at=None, last_error="cron='x': bad")
    tables.insert("disabled-to-compute", next_run_at=None, enabled=False)

    with store.claim_due(now, 10, "beat-1") as batch:
        assert [r.name for r in batch.schedules] == [
            "due-early",
            "due-late",
            "due-now",
            "to-compute",
        ]
    with store.claim_due(now, 2, "beat-1") as batch:
        assert [r.name for r in batch.schedules] == ["due-early", "due-late"]
    assert store.peek()[:2] == (at("08:00"), True)


def _claim(store: Store, now: datetime) -> list[str]:
    with store.claim_due(now, 10, "beat") as batch:
        return [r.name for r in batch.schedules]


def test_record_advances_next_run_at_and_inserts_pending_fires(
    store: Store, tables: Tables
) -> None:
    tables.sync([hourly("h")], at("08:30"))
    now = at("09:00:05")

    with store.claim_due(now, 10, "beat-1") as batch:
        (row,) = batch.schedules
        requests = batch.record([plan(row, now, RULES)], now + LEASE)

    assert [(r.schedule_name, r.slot, r.task_id) for r in requests] == [
        ("h", at("09:00"), task_id_of("h", at("09:00")))
    ]
    after = tables.row("h")
    assert (after.next_run_at, after.last_slot, after.run_count) == (at("10:00"), at("09:00"), 1)
    (fire,) = tables.fires("h")
    assert (fire.status, fire.beat, fire.lease_until) == ("pending", "beat-1", now + LEASE)
    assert _claim(store, now) == []


def test_a_second_record_of_the_same_stale_row_changes_nothing(
    store: Store, tables: Tables
) -> None:
    tables.sync([hourly("h")], at("08:30"))
    now = at("09:00")
    with store.claim_due(now, 10, "beat-1") as batch:
        (stale,) = batch.schedules
        first = batch.record([plan(stale, now, RULES)], now + LEASE)

    # Another beat that read the row before the first committed now tries to record it too.
    with store.claim_due(now, 10, "beat-2") as batch:
        assert batch.schedules == []
        second = batch.record([plan(stale, now, RULES)], now + LEASE)

    assert len(first) == 1
    assert second == []
    assert [(f.slot, f.beat) for f in tables.fires("h")] == [(at("09:00"), "beat-1")]
    assert tables.row("h").next_run_at == at("10:00")


def test_a_record_made_from_an_outdated_definition_version_changes_nothing(
    store: Store, tables: Tables
) -> None:
    tables.sync([hourly("h")], at("08:30"))
    now = at("09:00")
    with store.claim_due(now, 10, "beat-1") as batch:
        (stale,) = batch.schedules  # read, then the transaction ends without recording

    edited = Definition.create(name="h", task="tasks.hourly", schedule=Cron("0 * * * *"), args=[1])
    assert tables.sync([edited], at("09:00")).updated == ["h"]
    with store.claim_due(now, 10, "beat-1") as batch:
        assert len(batch.schedules) == 1
        assert batch.record([plan(stale, now, RULES)], now + LEASE) == []

    assert tables.fires("h") == []
    assert tables.row("h").next_run_at == at("09:00")


def test_record_does_not_publish_a_slot_already_recorded(store: Store, tables: Tables) -> None:
    tables.sync([hourly("h")], at("08:30"))
    schedule_id = tables.row("h").id
    task_id = task_id_of("h", at("09:00"))
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(F).values(
                schedule_id=schedule_id, slot=at("09:00"), manual=False, status="sent",
                slot_count=1, task_id=task_id, beat="other",
                recorded_at=at("09:00"), attempts=0,
            )
        )  # fmt: skip
    now = at("09:00")

    with store.claim_due(now, 10, "beat-1") as batch:
        (row,) = batch.schedules
        requests = batch.record([plan(row, now, RULES)], now + LEASE)

    assert requests == []
    assert [(f.slot, f.beat, f.status) for f in tables.fires("h")] == [
        (at("09:00"), "other", "sent")
    ]
    assert tables.row("h").next_run_at == at("10:00")


def _fire(
    schedule_id: int, slot: datetime, task_id: str | None, **values: object
) -> dict[str, object]:
    row: dict[str, object] = {
        "schedule_id": schedule_id, "slot": slot, "manual": False, "status": "sent",
        "slot_count": 1, "task_id": task_id, "recorded_at": slot, "attempts": 0,
    }  # fmt: skip
    row.update(values)
    return row


def test_the_unique_fire_key_rejects_a_second_fire_of_the_same_slot(
    store: Store, tables: Tables
) -> None:
    schedule_id = tables.insert("h", next_run_at=at("10:00"))
    with store.engine.begin() as conn:
        conn.execute(sa.insert(F).values(_fire(schedule_id, at("09:00"), "a")))

    with pytest.raises(sa.exc.IntegrityError), store.engine.begin() as conn:
        conn.execute(sa.insert(F).values(_fire(schedule_id, at("09:00"), "b")))

    # A manual fire ("run now") of the same instant has its own key; another slot is free.
    with store.engine.begin() as conn:
        conn.execute(sa.insert(F).values(_fire(schedule_id, at("09:00"), "c", manual=True)))
        conn.execute(
            sa.insert(F).values(_fire(schedule_id, at("09:00") + timedelta(microseconds=1), "d"))
        )
    assert sorted(f.task_id for f in tables.fires("h")) == ["a", "c", "d"]


# Taking over stale pending fires -----------------------------------------------------------------


def _pending_fires(store: Store, tables: Tables) -> None:
    schedule_id = tables.insert("h", next_run_at=at("12:00"))
    fires = [
        _fire(schedule_id, at("09:00"), "expired", status="pending", lease_until=at("09:59")),
        _fire(schedule_id, at("10:00"), "expires-now", status="pending", lease_until=at("10:00")),
        _fire(schedule_id, at("11:00"), "held", status="pending", lease_until=at("10:01")),
        _fire(schedule_id, at("08:00"), "sent", status="sent", lease_until=at("08:01")),
        _fire(schedule_id, at("07:00"), "failed", status="failed", lease_until=at("07:01")),
        _fire(schedule_id, at("06:00"), None, status="skipped", slot_count=3, lease_until=None),
    ]
    with store.engine.begin() as conn:
        conn.execute(sa.insert(F), fires)


def test_claim_stale_pending_takes_only_expired_leases_and_only_once(
    store: Store, tables: Tables
) -> None:
    _pending_fires(store, tables)
    now = at("10:00")

    first = store.claim_stale_pending(now, now + LEASE, 10)
    again = store.claim_stale_pending(now, now + LEASE, 10)
    after_the_new_lease = store.claim_stale_pending(now + LEASE, now + 2 * LEASE, 10)

    assert [(r.task_id, r.slot, r.schedule_name) for r in first] == [
        ("expired", at("09:00"), "h"),
        ("expires-now", at("10:00"), "h"),
    ]
    assert again == []
    assert sorted(r.task_id for r in after_the_new_lease) == ["expired", "expires-now", "held"]
    leases = {f.task_id: f.lease_until for f in tables.fires("h")}
    assert leases["expired"] == now + 2 * LEASE
    assert leases["sent"] == at("08:01")


def _expired_fires(store: Store, tables: Tables, name: str, count: int) -> list[str]:
    """``count`` fires of a new schedule ``name``, pending under a lease over at 09:30."""
    schedule_id = tables.insert(name, next_run_at=at("12:00"))
    task_ids = [f"{name}-{n:02}" for n in range(count)]
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(F),
            [
                _fire(schedule_id, at("09:00") + timedelta(minutes=n), task_id,
                      status=FireStatus.PENDING.value, lease_until=at("09:30"))
                for n, task_id in enumerate(task_ids)
            ],
        )  # fmt: skip
    return task_ids


def test_taking_over_50_expired_fires_takes_as_many_statements_as_5(
    store: Store, tables: Tables
) -> None:
    """A beat taking over a dead beat's fires once leased each with its own UPDATE (500 fires:
    215-260 ms of which 120 ms of the beat's CPU on PostgreSQL)."""
    now = at("10:00")
    counts = []
    for name, count in (("five", 5), ("fifty", 50)):
        task_ids = _expired_fires(store, tables, name, count)
        with statements_sent(store) as statements:
            taken = store.claim_stale_pending(now, now + LEASE, 100)
        assert sorted(r.task_id for r in taken) == task_ids
        counts.append(len(statements))
    assert counts[0] == counts[1]
    assert {f.lease_until for f in tables.fires()} == {now + LEASE}


def test_a_fire_changed_while_the_others_are_taken_over_is_taken_alone_like_them(
    store: Store, tables: Tables
) -> None:
    """The batch UPDATE of a takeover does not say which fires it leased: when it leases fewer
    than it read, it is undone and each fire is taken over alone."""
    task_ids = _expired_fires(store, tables, "h", 6)
    now = at("10:00")
    changed: list[str] = []

    def change_one_first(cursor: Any, statement: str) -> None:
        # Meanwhile, in the same transaction: one fire no longer holds its expired lease.
        if not changed and statement.startswith("UPDATE dbeat_fires SET lease_until"):
            changed.append(statement)
            cursor.execute("UPDATE dbeat_fires SET status = 'sent' WHERE task_id = 'h-03'")

    with on_each_statement(store, change_one_first):
        taken = store.claim_stale_pending(now, now + LEASE, 100)

    # The change was undone with the batch; each fire, taken alone, was taken once.
    assert changed
    assert sorted(r.task_id for r in taken) == task_ids
    assert {(f.status, f.lease_until) for f in tables.fires("h")} == {("pending", now + LEASE)}


CONCURRENT = [pytest.param("postgresql", id="postgresql"), pytest.param("mysql", id="mysql")]


def _together(count: int, work: object) -> list[object]:
    """Run ``work(i, barrier)`` in ``count`` threads at once; return results, raise errors."""
    barrier = threading.Barrier(count, timeout=30)
    results: list[object] = [None] * count
    errors: list[BaseException] = []

    def target(i: int) -> None:
        try:
            results[i] = work(i, barrier)  # type: ignore[operator]
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    if errors:
        raise errors[0]
    return results


@pytest.mark.parametrize("database_url", CONCURRENT, indirect=True)
def test_concurrent_claims_never_get_the_same_row(store: Store, tables: Tables) -> None:
    for n in range(12):
        tables.insert(f"s{n:02}", next_run_at=at("09:00") + timedelta(seconds=n))
    now = at("10:00")

    def claim(i: int, barrier: threading.Barrier) -> list[str]:
        barrier.wait()
        with store.claim_due(now, 4, f"beat-{i}") as batch:
            names = [r.name for r in batch.schedules]
            barrier.wait()  # every transaction is open, holding its rows, at the same time
        return names

    claimed: list[list[str]] = _together(3, claim)  # type: ignore[assignment]

    everything = [name for names in claimed for name in names]
    assert len(everything) == len(set(everything)), claimed
    assert set(everything) <= {f"s{n:02}" for n in range(12)}


@pytest.mark.parametrize(
    "database_url",
    [
        pytest.param("postgresql", id="postgresql"),
        pytest.param("mysql", id="mysql"),
    ],
    indirect=True,
)
def test_a_beat_claiming_a_batch_leaves_the_other_due_rows_to_other_beats(
    store: Store, tables: Tables
) -> None:
    for n in range(12):
        tables.insert(f"s{n:02}", next_run_at=at("09:00") + timedelta(seconds=n))
    now = at("10:00")

    with store.claim_due(now, 4, "beat-1") as first, store.claim_due(now, 4, "beat-2") as second:
        names = [r.name for r in first.schedules], [r.name for r in second.schedules]

    assert names == (["s00", "s01", "s02", "s03"], ["s04", "s05", "s06", "s07"])


@pytest.mark.parametrize("database_url", CONCURRENT, indirect=True)
def test_concurrent_claims_of_stale_pending_fires_never_get_the_same_fire(
    store: Store, tables: Tables
) -> None:
    schedule_id = tables.insert("h", next_run_at=at("12:00"))
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(F),
            [
                _fire(schedule_id, at("09:00") + timedelta(minutes=n), f"t{n:02}",
                      status=FireStatus.PENDING.value, lease_until=at("09:30"))
                for n in range(12)
            ],
        )  # fmt: skip
    now = at("10:00")

    def claim(i: int, barrier: threading.Barrier) -> list[str]:
        barrier.wait()
        return [r.task_id for r in store.claim_stale_pending(now, now + LEASE, 5)]

    claimed: list[list[str]] = _together(4, claim)  # type: ignore[assignment]

    everything = [task_id for ids in claimed for task_id in ids]
    assert len(everything) == len(set(everything)), claimed
    # MariaDB may keep rows locked that a claimer read but did not return (a sorted read locks
    # before the LIMIT applies), so others skip them this round; the next round takes the rest.
    rest = [r.task_id for r in store.claim_stale_pending(now, now + LEASE, 12)]
    assert not set(rest) & set(everything), (claimed, rest)
    assert sorted(everything + rest) == [f"t{n:02}" for n in range(12)], claimed


def test_among_matches_exactly_the_values_given_however_many(store: Store, tables: Tables) -> None:
    # An IN list on most backends, one array on PostgreSQL (mark_sent, recorded_slots).
    from celery_dbeat.store.reading import among

    schedule_id = tables.insert("s")
    task_ids = [f"{i:036d}" for i in range(1500)]  # as long as the column holds
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(F),
            [
                {
                    "schedule_id": schedule_id,
                    "slot": at("09:00") + timedelta(minutes=i),
                    "manual": False,
                    "status": "pending",
                    "slot_count": 1,
                    "task_id": task_id,
                    "recorded_at": at("09:00"),
                    "attempts": 0,
                }
                for i, task_id in enumerate(task_ids)
            ],
        )
    wanted = [*task_ids[::3], f"{task_ids[1]}0"]  # longer: matches nothing, not task_ids[1]
    slots = [at("09:00"), at("09:02"), at("09:00") + timedelta(days=2)]
    with store.engine.connect() as conn:
        found = conn.execute(sa.select(F.c.task_id).where(among(conn, F.c.task_id, wanted)))
        assert sorted(found.scalars()) == task_ids[::3]
        at_slots = conn.execute(sa.select(F.c.task_id).where(among(conn, F.c.slot, slots)))
        assert sorted(at_slots.scalars()) == [task_ids[0], task_ids[2]]
        none = conn.execute(sa.select(F.c.task_id).where(among(conn, F.c.task_id, [])))
        assert list(none) == []
