"""Beat at ``-l info`` does not carry Alembic's routine lines ("Context impl SQLiteImpl.",
"Will assume ... DDL."): celery-dbeat filters them from its own migrations and schema checks,
without a handler, and leaves the user's own Alembic runs and real migration steps alone."""

from __future__ import annotations

import logging
from pathlib import Path

import celery
import pytest
from alembic.runtime.migration import MigrationContext

from celery_dbeat.beat.scheduler import Scheduler
from celery_dbeat.store import Store, migrate

CHATTER = ("Context impl ", "Will assume ", "setup plugin ")


def alembic_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("alembic")]


def test_a_beat_starting_on_a_current_schema_logs_nothing_from_alembic(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = f"sqlite:///{tmp_path / 'schedules.sqlite3'}"
    app = celery.Celery("quietproj", set_as_current=False)
    app.conf.update(broker_url="memory://", dbeat_database_url=database)
    Scheduler(app).close()  # creates the tables

    with caplog.at_level(logging.DEBUG):
        Scheduler(app).close()  # migrates (nothing to do), checks the schema, syncs

    assert alembic_lines(caplog) == []
    assert logging.getLogger("alembic.runtime.migration").handlers == []  # a filter, no handler


def test_a_real_migration_step_is_still_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store(f"sqlite:///{tmp_path / 'schedules.sqlite3'}")

    with caplog.at_level(logging.INFO):
        migrate(store.engine)
    store.close()

    lines = alembic_lines(caplog)
    assert lines
    assert all(line.startswith("Running upgrade ") for line in lines), lines


def test_the_user_s_own_alembic_keeps_its_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store(f"sqlite:///{tmp_path / 'schedules.sqlite3'}")

    with caplog.at_level(logging.INFO), store.engine.connect() as conn:
        MigrationContext.configure(conn)
    store.close()

    assert [line for line in alembic_lines(caplog) if line.startswith(CHATTER)] == [
        "Context impl SQLiteImpl.",
        "Will assume non-transactional DDL.",
    ]
