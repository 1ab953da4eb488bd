"""Migrations build exactly the tables the models describe, and step down and up again without
losing rows, on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from celery_dbeat.store import Base, create_engine, migrate
from celery_dbeat.store.database import VERSION_TABLE, _config


def _differences(engine: sa.Engine) -> list[object]:
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "version_table": VERSION_TABLE}
        )
        diff = compare_metadata(context, Base.metadata)
    # The version table is alembic's own, not a model.
    return [d for d in diff if VERSION_TABLE not in repr(d)]


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
        assert migrate(engine) == "0003"
        assert run_columns <= columns("dbeat_fires")
        assert {"overlap_policy", "max_run_time"} <= columns("dbeat_schedules")
        with engine.begin() as conn:
            command.downgrade(_config(conn), "0002")
        assert not run_columns & columns("dbeat_fires")
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM dbeat_schedules")).scalar() == 1
            assert conn.execute(sa.text("SELECT count(*) FROM dbeat_fires")).scalar() == 1
        assert migrate(engine) == "0003"
    finally:
        engine.dispose()
