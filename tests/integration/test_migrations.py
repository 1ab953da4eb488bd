"""Migrations build exactly the tables the models describe, and step down and up again without
losing rows, on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from celery_dbeat.core.fires import fire_task_id
from celery_dbeat.store import Base, create_engine, migrate
from celery_dbeat.store.database import VERSION_TABLE, _config

#: The newest revision (each test of one steps down from it and back).
HEAD = "0017"


def _differences(engine: sa.Engine) -> list[object]:
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "version_table": VERSION_TABLE}
        )
        diff = compare_metadata(context, Base.metadata)
    # The version table is alembic's own, not a model.
    return [d for d in diff if VERSION_TABLE not in repr(d)]


def _add_hourly(conn: sa.Connection, name: str) -> None:
    """An hourly schedule ``name`` as the first revisions' columns hold it."""
    conn.execute(
        sa.text(
            "INSERT INTO dbeat_schedules (name, task, args, kwargs, options, enabled, origin,"
            " kind, cron, timezone, run_count, version, created_at, updated_at) VALUES (:name,"
            " 't', '[]', '{}', '{}', true, 'api', 'cron', '0 * * * *', 'UTC', 0, 1,"
            " '2024-01-01 00:00:00', '2024-01-01 00:00:00')"
        ),
        {"name": name},
    )


def test_the_migrated_schema_is_the_models_schema(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        migrate(engine)
        assert _differences(engine) == []
    finally:
        engine.dispose()


def test_0003_steps_down_and_up_again_keeping_schedules_and_history(database_url: str) -> None:
    engine = create_engine(database_url)
    run_columns = {"run_status", "started_at", "finished_at", "runtime", "worker", "run_error"}

    def columns(table: str) -> set[str]:
        return {c["name"] for c in sa.inspect(engine).get_columns(table)}

    try:
        migrate(engine, "0002")
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO dbeat_schedules (name, task, args, kwargs, options, enabled,"
                    " origin, kind, cron, timezone, run_count, version, created_at, updated_at)"
                    " VALUES ('r', 't', '[]', '{}', '{}', true, 'api', 'cron', '0 * * * *', 'UTC',"
                    " 0, 1, '2024-01-01 00:00:00', '2024-01-01 00:00:00')"
                )
            )
            conn.execute(
                sa.text(
                    "INSERT INTO dbeat_fires (schedule_id, slot, manual, status, slot_count,"
                    " recorded_at, attempts) SELECT id, '2024-01-01 01:00:00', false, 'sent', 1,"
                    " '2024-01-01 01:00:00', 0 FROM dbeat_schedules"
                )
            )
        assert migrate(engine, "0003") == "0003"
        assert run_columns <= columns("dbeat_fires")
        assert {"overlap_policy", "max_run_time"} <= columns("dbeat_schedules")
        with engine.begin() as conn:
            command.downgrade(_config(conn), "0002")
        assert not run_columns & columns("dbeat_fires")
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM dbeat_schedules")).scalar() == 1
            assert conn.execute(sa.text("SELECT count(*) FROM dbeat_fires")).scalar() == 1
        assert migrate(engine, "0003") == "0003"
    finally:
        engine.dispose()


def test_0004_gives_every_schedule_its_own_identity_and_keeps_recorded_task_ids(
    database_url: str,
) -> None:
    engine = create_engine(database_url)
    try:
        migrate(engine, "0003")
        with engine.begin() as conn:
            for name in ("a", "b", "c"):
                _add_hourly(conn, name)
            conn.execute(
                sa.text(
                    "INSERT INTO dbeat_fires (schedule_id, slot, manual, status, slot_count,"
                    " task_id, recorded_at, attempts) SELECT id, '2024-01-01 01:00:00', false,"
                    " 'pending', 1, 'recorded-before-0004', '2024-01-01 01:00:00', 0"
                    " FROM dbeat_schedules WHERE name = 'a'"
                )
            )
        assert migrate(engine, "0004") == "0004"
        with engine.connect() as conn:
            uids = conn.execute(sa.text("SELECT uid FROM dbeat_schedules")).scalars().all()
            task_ids = conn.execute(sa.text("SELECT task_id FROM dbeat_fires")).scalars().all()
        assert len(set(uids)) == 3
        assert all(len(uid) == 32 and int(uid, 16) >= 0 for uid in uids)
        assert task_ids == ["recorded-before-0004"]
        with engine.begin() as conn:
            command.downgrade(_config(conn), "0003")
        assert "uid" not in {c["name"] for c in sa.inspect(engine).get_columns("dbeat_schedules")}
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM dbeat_fires")).scalar() == 1
        assert migrate(engine, "0004") == "0004"
    finally:
        engine.dispose()


def test_the_revisions_after_0003_step_down_and_up_again_keeping_schedules_and_history(
    database_url: str,
) -> None:
    engine = create_engine(database_url)
    try:
        head = migrate(engine)
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO dbeat_schedules (name, task, args, kwargs, options, enabled,"
                    " origin, kind, cron, timezone, run_count, version, created_at, updated_at)"
                    " VALUES ('r', 't', '[]', '{}', '{}', true, 'api', 'cron', '0 * * * *', 'UTC',"
                    " 0, 1, '2024-01-01 00:00:00', '2024-01-01 00:00:00')"
                )
            )
            conn.execute(
                sa.text(
                    "INSERT INTO dbeat_fires (schedule_id, slot, manual, status, slot_count,"
                    " recorded_at, attempts) SELECT id, '2024-01-01 01:00:00', false, 'sent', 1,"
                    " '2024-01-01 01:00:00', 0 FROM dbeat_schedules"
                )
            )
        with engine.begin() as conn:
            command.downgrade(_config(conn), "0003")
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM dbeat_schedules")).scalar() == 1
            assert conn.execute(sa.text("SELECT count(*) FROM dbeat_fires")).scalar() == 1
        assert migrate(engine) == head
        assert _differences(engine) == []
    finally:
        engine.dispose()


def test_0011_adds_the_audit_table_and_steps_down_without_touching_schedules(
    database_url: str,
) -> None:
    engine = create_engine(database_url)
    try:
        head = migrate(engine)
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO dbeat_audit (at, actor, surface, action, changes)"
                    " VALUES ('2024-01-01 00:00:00', 'alice', 'cli', 'create', '{}')"
                )
            )
        with engine.begin() as conn:
            command.downgrade(_config(conn), "0008")
        assert "dbeat_audit" not in sa.inspect(engine).get_table_names()
        assert migrate(engine) == head
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM dbeat_audit")).scalar() == 0
        assert _differences(engine) == []
    finally:
        engine.dispose()


def test_0009_adds_the_calendars_and_steps_down_keeping_schedules_and_history(
    database_url: str,
) -> None:
    engine = create_engine(database_url)

    def columns(table: str) -> set[str]:
        return {c["name"] for c in sa.inspect(engine).get_columns(table)}

    try:
        assert migrate(engine, "0009") == "0009"
        assert "calendar" in columns("dbeat_schedules")
        assert "calendar" in columns("dbeat_fires")
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO dbeat_calendars (name, timezone, dates, version, created_at,"
                    " updated_at) VALUES ('h', 'UTC', '[\"2024-01-02\"]', 1,"
                    " '2024-01-01 00:00:00', '2024-01-01 00:00:00')"
                )
            )
            conn.execute(
                sa.text(
                    "INSERT INTO dbeat_schedules (name, task, args, kwargs, options, enabled,"
                    " origin, kind, cron, timezone, run_count, version, created_at, updated_at,"
                    " calendar) VALUES ('r', 't', '[]', '{}', '{}', true, 'api', 'cron',"
                    " '0 * * * *', 'UTC', 0, 1, '2024-01-01 00:00:00', '2024-01-01 00:00:00', 'h')"
                )
            )
            conn.execute(
                sa.text(
                    "INSERT INTO dbeat_fires (schedule_id, slot, manual, status, slot_count,"
                    " recorded_at, attempts, calendar) SELECT id, '2024-01-02 01:00:00', false,"
                    " 'skipped', 1, '2024-01-02 01:00:00', 0, 'h' FROM dbeat_schedules"
                )
            )
        with engine.begin() as conn:
            command.downgrade(_config(conn), "0008")
        assert "dbeat_calendars" not in sa.inspect(engine).get_table_names()
        assert "calendar" not in columns("dbeat_schedules")
        assert "calendar" not in columns("dbeat_fires")
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM dbeat_schedules")).scalar() == 1
            assert conn.execute(sa.text("SELECT count(*) FROM dbeat_fires")).scalar() == 1
        assert migrate(engine, "0009") == "0009"
    finally:
        engine.dispose()


def test_0012_steps_down_turning_each_queued_run_into_a_queued_fire_per_slot(
    database_url: str,
) -> None:
    engine = create_engine(database_url)
    try:
        head = migrate(engine)
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO dbeat_schedules (name, task, args, kwargs, options, enabled,"
                    " origin, kind, every, run_count, version, created_at, updated_at, uid)"
                    " VALUES ('r', 't', '[]', '{}', '{}', true, 'api', 'interval', 60, 0, 1,"
                    " '2024-01-01 00:00:00', '2024-01-01 00:00:00', :uid)"
                ),
                {"uid": "0" * 32},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO dbeat_fires (schedule_id, slot, manual, status, slot_count,"
                    " first_slot, recorded_at, lease_until, attempts, slots, origin)"
                    " SELECT id, '2024-01-01 01:02:00', false, 'queued', 3,"
                    " '2024-01-01 01:00:00', '2024-01-01 02:00:00', '2024-01-01 01:00:00', 0,"
                    " :slots, 'backfill' FROM dbeat_schedules"
                ),
                {
                    "slots": '["2024-01-01T01:00:00+00:00", "2024-01-01T01:01:00+00:00",'
                    ' "2024-01-01T01:02:00+00:00"]'
                },
            )
        with engine.begin() as conn:
            command.downgrade(_config(conn), "0011")
        assert "slots" not in {c["name"] for c in sa.inspect(engine).get_columns("dbeat_fires")}
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT slot, status, slot_count, task_id, origin FROM dbeat_fires"
                    " ORDER BY slot"
                )
            ).all()
        slots = [datetime(2024, 1, 1, 1, minute, tzinfo=timezone.utc) for minute in range(3)]
        assert [(r.status, r.slot_count, r.origin) for r in rows] == [("queued", 1, "backfill")] * 3
        assert [r.task_id for r in rows] == [fire_task_id("0" * 32, slot) for slot in slots]
        assert migrate(engine) == head
        assert _differences(engine) == []
    finally:
        engine.dispose()


def test_0013_counts_each_schedules_failures_from_its_history_and_steps_down_keeping_rows(
    database_url: str,
) -> None:
    engine = create_engine(database_url)

    def columns() -> set[str]:
        return {c["name"] for c in sa.inspect(engine).get_columns("dbeat_schedules")}

    try:
        assert migrate(engine, "0012") == "0012"
        with engine.begin() as conn:
            for name in ("failing", "fine"):
                _add_hourly(conn, name)
            # failing: failed, succeeded, then failed twice; fine: never reported.
            for hour, outcome in enumerate(("failed", "succeeded", "failed", "failed"), 1):
                conn.execute(
                    sa.text(
                        "INSERT INTO dbeat_fires (schedule_id, slot, manual, status, slot_count,"
                        " recorded_at, attempts, run_status) SELECT id, :slot, false, 'sent', 1,"
                        " :slot, 0, :outcome FROM dbeat_schedules WHERE name = 'failing'"
                    ),
                    {"slot": f"2024-01-01 0{hour}:00:00", "outcome": outcome},
                )
        assert migrate(engine, "0013") == "0013"
        with engine.connect() as conn:
            counted = conn.execute(
                sa.text(
                    "SELECT name, consecutive_failures, pruned_until FROM dbeat_schedules"
                    " ORDER BY name"
                )
            ).all()
        assert [tuple(r) for r in counted] == [("failing", 2, None), ("fine", 0, None)]
        with engine.begin() as conn:
            command.downgrade(_config(conn), "0012")
        assert not {"consecutive_failures", "pruned_until"} & columns()
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM dbeat_schedules")).scalar() == 2
            assert conn.execute(sa.text("SELECT count(*) FROM dbeat_fires")).scalar() == 4
        assert migrate(engine) == HEAD
        assert _differences(engine) == []
    finally:
        engine.dispose()


def test_0014_gives_every_calendar_its_own_identity_and_steps_down_keeping_calendars(
    database_url: str,
) -> None:
    engine = create_engine(database_url)

    def calendars() -> list[tuple[str, str | None, int]]:
        with engine.connect() as conn:
            found = conn.execute(
                sa.text("SELECT name, dates, version FROM dbeat_calendars ORDER BY name")
            )
            return [tuple(r) for r in found]

    try:
        assert migrate(engine, "0013") == "0013"
        with engine.begin() as conn:
            for name in ("holidays", "closures"):
                conn.execute(
                    sa.text(
                        "INSERT INTO dbeat_calendars (name, timezone, dates, version, created_at,"
                        " updated_at) VALUES (:name, 'UTC', '[\"2024-12-25\"]', 3,"
                        " '2024-01-01 00:00:00', '2024-01-01 00:00:00')"
                    ),
                    {"name": name},
                )
        before = calendars()
        assert migrate(engine) == HEAD
        with engine.connect() as conn:
            uids = [u for (u,) in conn.execute(sa.text("SELECT uid FROM dbeat_calendars"))]
        # Each its own: 32 hex digits, none shared (the index is unique too).
        assert len(set(uids)) == 2
        assert all(re.fullmatch("[0-9a-f]{32}", u) for u in uids), uids
        assert calendars() == before
        assert _differences(engine) == []
        with engine.begin() as conn:
            command.downgrade(_config(conn), "0013")
        assert "uid" not in {c["name"] for c in sa.inspect(engine).get_columns("dbeat_calendars")}
        assert calendars() == before
        assert migrate(engine) == HEAD
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("revision", "added"),
    [("0015", {"rrule"}), ("0016", {"slot_kwarg", "previous_slot_kwarg"})],
    ids=["0015-rrule", "0016-slot-keywords"],
)
def test_a_revision_adds_its_columns_unset_and_steps_down_keeping_schedules(
    database_url: str, revision: str, added: set[str]
) -> None:
    engine = create_engine(database_url)
    before = f"{int(revision) - 1:04d}"

    def columns() -> set[str]:
        return {c["name"] for c in sa.inspect(engine).get_columns("dbeat_schedules")}

    try:
        assert migrate(engine, before) == before
        with engine.begin() as conn:
            _add_hourly(conn, "r")
        assert migrate(engine, revision) == revision
        with engine.connect() as conn:
            row = conn.execute(
                sa.text(f"SELECT name, {', '.join(sorted(added))} FROM dbeat_schedules")
            ).one()
        assert tuple(row) == ("r", *(None for _ in added))
        with engine.begin() as conn:
            command.downgrade(_config(conn), before)
        assert not added & columns()
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM dbeat_schedules")).scalar() == 1
        assert migrate(engine) == HEAD
        assert _differences(engine) == []
    finally:
        engine.dispose()
