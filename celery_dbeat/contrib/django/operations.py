"""The migration operation by which ``manage.py migrate`` creates and upgrades the tables.

The tables are celery-dbeat's, made by its own Alembic migrations (as ``manage.py dbeat_migrate``
and a beat with ``dbeat_auto_migrate`` make them); :class:`UpgradeTables` runs those as a step of
Django's ``migrate``:

* on the alias that holds the tables (``DBEAT_DATABASE_ALIAS``, default ``default``) where the
  project's routers allow celery_dbeat's migrations; on any other alias it does nothing;
* on the database celery-dbeat uses (``CELERY_DBEAT_DATABASE_URL``, the Celery app's
  ``dbeat_database_url``, or that alias's database), with ``CELERY_DBEAT_ENGINE_OPTIONS``,
  through a connection of its own, committed when done;
* up to the newest revision this celery-dbeat knows, so it changes nothing where the tables are
  current already, and refuses a schema a newer celery-dbeat wrote;
* under a test runner, only on the test database: where the schedules are in another database
  than the alias's test database, or that is in SQLite's memory (which another connection cannot
  share), it does nothing rather than touch a real database.

Every celery-dbeat release whose Alembic migrations add a revision ships a Django migration with
another :class:`UpgradeTables`, so that ``migrate`` runs again after an upgrade.

``sqlmigrate`` prints Alembic's SQL from an empty database for the backend; reversing the
migration (``migrate celery_dbeat zero``) keeps the tables and their rows, the schedules and the
fire history that keeps each fire exactly once: only Django's record of the migration goes.
"""

from __future__ import annotations

import io
from typing import Any

from django.db import router
from django.db.migrations.operations.base import Operation

from celery_dbeat.store import create_engine, migrate
from celery_dbeat.store.database import MIGRATIONS

from .conf import (
    database_alias,
    database_url,
    dbeat_settings,
    in_memory_test_database,
    is_test_database,
    same_database,
)

__all__ = ["UpgradeTables", "offline_sql"]


def offline_sql(url: str) -> list[str]:
    """Alembic's SQL creating celery-dbeat's tables in an empty database of ``url``'s backend."""
    from alembic import command
    from alembic.config import Config

    buffer = io.StringIO()
    config = Config(output_buffer=buffer)
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    command.upgrade(config, "head", sql=True)
    return buffer.getvalue().splitlines()


def _target(alias: str) -> tuple[str, dict[str, Any]] | None:
    """The URL and engine options to upgrade when migrating ``alias``, or ``None`` for a test
    database that does not hold the schedules."""
    if in_memory_test_database(alias):
        return None
    config = dbeat_settings()
    if is_test_database(alias) and not same_database(config.database_url, database_url(alias)):
        return None
    return config.database_url, dict(config.engine_options)


class UpgradeTables(Operation):
    """Run celery-dbeat's own migrations; ``revision``: the Alembic revision this Django
    migration was written for (it upgrades to the newest one installed)."""

    reduces_to_sql = True
    reversible = True

    def __init__(self, revision: str) -> None:
        self.revision = revision

    def state_forwards(self, app_label: str, state: Any) -> None:
        """No model state: the models are in the migration's ``CreateModel`` operations."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        alias = schema_editor.connection.alias
        if not router.allow_migrate(alias, app_label):
            return
        collect = schema_editor.collect_sql
        holder = database_alias()
        if alias != holder:
            if collect:
                schema_editor.collected_sql.append(
                    f"-- nothing here: celery-dbeat's tables are in DATABASES[{holder!r}]"
                )
            return
        target = _target(alias)
        if target is None:
            if collect:
                schema_editor.collected_sql.append(
                    "-- nothing: this test database does not hold celery-dbeat's tables"
                )
            return
        url, options = target
        if collect:
            schema_editor.collected_sql.extend(offline_sql(url))
            return
        engine = create_engine(url, options)
        try:
            migrate(engine)
        finally:
            engine.dispose()

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.collect_sql:
            schema_editor.collected_sql.append(
                "-- celery-dbeat's tables and their rows are kept: drop the dbeat_* tables "
                "yourself to remove them"
            )

    def describe(self) -> str:
        return (
            f"Create or upgrade celery-dbeat's tables (its own migrations, revision "
            f"{self.revision} and later; undone, the tables are kept)"
        )

    @property
    def migration_name_fragment(self) -> str:
        return "dbeat_tables"
