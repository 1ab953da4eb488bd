"""``manage.py migrate`` creates celery-dbeat's tables: on the alias that holds them, through
celery-dbeat's own Alembic migrations, and under a test runner only in the test database.

Each test migrates the ``spare`` SQLite file (absent when it starts), or a test database made
from ``spare`` or ``postgres`` the way Django's test runner makes one.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat import Every
from tests.integration.django.conftest import TABLES


def dbeat_tables(url: str) -> tuple[set[str], str | None]:
    """The celery-dbeat tables in the database at ``url``, and its Alembic revision."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            present = set(sa.inspect(conn).get_table_names())
            revision = None
            if "dbeat_alembic_version" in present:
                revision = conn.execute(
                    sa.text("SELECT version_num FROM dbeat_alembic_version")
                ).scalar_one()
    finally:
        engine.dispose()
    return present & {*TABLES, "dbeat_alembic_version"}, revision


def recorded(alias: str) -> set[str]:
    """The celery_dbeat migrations Django has recorded as applied on ``alias``."""
    from django.db import connections
    from django.db.migrations.recorder import MigrationRecorder

    applied = MigrationRecorder(connections[alias]).applied_migrations()
    return {name for app, name in applied if app == "celery_dbeat"}


def migrate(*args: Any, **options: Any) -> str:
    """``manage.py migrate`` with its system checks on, as a person runs it; its output."""
    from django.core.management import call_command

    out = io.StringIO()
    options.setdefault("verbosity", 1)
    call_command("migrate", *args, stdout=out, stderr=out, skip_checks=False, **options)
    return out.getvalue()


@pytest.fixture
def head() -> str:
    from celery_dbeat.contrib.django.tables import alembic_head

    return alembic_head()


ALL = {*TABLES, "dbeat_alembic_version"}
#: celery-dbeat's Django migrations, every one of which ``migrate`` applies.
MIGRATIONS = {
    path.stem
    for path in (Path(__file__).parents[3] / "celery_dbeat/contrib/django/migrations").glob("0*.py")
}


def test_migrate_creates_celery_dbeats_tables_at_the_newest_revision(
    on_spare: str, head: str, client: Any
) -> None:
    assert dbeat_tables(on_spare) == (set(), None)
    migrate(database="spare")
    assert dbeat_tables(on_spare) == (ALL, head)
    assert recorded("spare") == MIGRATIONS
    assert client.get("/admin/celery_dbeat/schedule/").status_code == 200


def test_migrate_where_the_tables_exist_already_keeps_them_and_their_rows(
    on_spare: str, head: str
) -> None:
    from celery_dbeat.api import Schedules
    from celery_dbeat.store import migrate as alembic_upgrade

    with Schedules(on_spare) as api:  # as beat or dbeat_migrate leave them
        alembic_upgrade(api.store.engine)
        api.add("poll", "proj.tasks.poll", Every(30))
    migrate(database="spare")
    assert dbeat_tables(on_spare) == (ALL, head)
    assert recorded("spare") == MIGRATIONS
    with Schedules(on_spare) as api:
        assert [s.name for s in api.list()] == ["poll"]


def test_migrating_an_alias_that_does_not_hold_the_tables_creates_none(
    spare: Path, site: Any
) -> None:
    # DBEAT_DATABASE_ALIAS is "default": Django's own tables go to spare, celery-dbeat's do not.
    migrate(database="spare")
    url = f"sqlite:///{spare}"
    assert dbeat_tables(url) == (set(), None)
    assert "django_migrations" in sa.inspect(sa.create_engine(url)).get_table_names()
    assert recorded("spare") == MIGRATIONS


def test_migrate_creates_the_tables_where_celery_dbeat_keeps_them_even_outside_django(
    spare: Path, head: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``CELERY_DBEAT_DATABASE_URL`` naming a MariaDB database Django does not know: migrating
    the alias that holds the tables upgrades that database (``check`` warns of the split)."""
    from django.test import override_settings

    from tests.services import private_database

    with private_database("mysql", tmp_path_factory) as mariadb:
        with override_settings(DBEAT_DATABASE_ALIAS="spare", CELERY_DBEAT_DATABASE_URL=mariadb):
            migrate(database="spare")
        assert dbeat_tables(mariadb) == (ALL, head)
    assert dbeat_tables(f"sqlite:///{spare}") == (set(), None)


@pytest.mark.parametrize(
    ("url", "marker"),
    [
        pytest.param("sqlite:///x.sqlite3", "DATETIME", id="sqlite"),
        pytest.param("postgresql+psycopg://u:p%40ss@db/proj", "TIMESTAMP WITH TIME ZONE", id="pg"),
        pytest.param("mysql+pymysql://root@db/proj", "DATETIME(6)", id="mysql"),
    ],
)
def test_the_sql_sqlmigrate_prints_is_alembics_for_each_backend(url: str, marker: str) -> None:
    from celery_dbeat.contrib.django.operations import offline_sql

    sql = "\n".join(offline_sql(url))
    for table in (*TABLES, "dbeat_alembic_version"):
        assert f"CREATE TABLE {table} (" in sql
    assert marker in sql


def test_migrate_plan_names_the_upgrade_and_creates_nothing(on_spare: str) -> None:
    out = migrate(database="spare", plan=True)
    assert "celery_dbeat.0001_initial" in out
    assert "Create or upgrade celery-dbeat's tables" in out
    assert dbeat_tables(on_spare) == (set(), None)


@pytest.mark.parametrize("alias", ["spare", "postgres"])
def test_sqlmigrate_prints_alembics_sql_for_the_backend_and_creates_nothing(
    spare: Path, site: Any, alias: str
) -> None:
    from django.core.management import call_command
    from django.test import override_settings

    url = f"sqlite:///{spare}" if alias == "spare" else site.require_postgres()
    before = dbeat_tables(url)
    with override_settings(DBEAT_DATABASE_ALIAS=alias):
        sql = call_command("sqlmigrate", "celery_dbeat", "0001_initial", database=alias)
    assert "CREATE TABLE dbeat_schedules" in sql
    assert "UPDATE dbeat_alembic_version SET version_num='0003'" in sql
    if alias == "postgres":
        assert "TIMESTAMP WITH TIME ZONE" in sql
    assert dbeat_tables(url) == before


def test_sqlmigrate_on_an_alias_that_does_not_hold_the_tables_prints_no_sql(spare: Path) -> None:
    from django.core.management import call_command

    sql = call_command("sqlmigrate", "celery_dbeat", "0001_initial", database="spare")
    assert "nothing here: celery-dbeat's tables are in DATABASES['default']" in sql
    assert "CREATE TABLE" not in sql


def test_reversing_the_migration_keeps_the_tables_and_their_rows(on_spare: str, head: str) -> None:
    from celery_dbeat.api import Schedules

    migrate(database="spare")
    with Schedules(on_spare) as api:
        api.add("poll", "proj.tasks.poll", Every(30))
    migrate("celery_dbeat", "zero", database="spare")
    assert recorded("spare") == set()
    assert dbeat_tables(on_spare) == (ALL, head)
    migrate(database="spare")  # applied again: the upgrade finds them current
    assert recorded("spare") == MIGRATIONS
    with Schedules(on_spare) as api:
        assert [s.name for s in api.list()] == ["poll"]


def test_the_dbeat_migrate_command_still_creates_the_tables(on_spare: str, head: str) -> None:
    from django.core.management import call_command

    out = io.StringIO()
    call_command("dbeat_migrate", stdout=out)
    assert dbeat_tables(on_spare) == (ALL, head)
    assert f"at revision {head} in {on_spare}" in out.getvalue()


def test_the_newest_django_migration_runs_the_newest_alembic_revision(site: Any, head: str) -> None:
    """Fails when an Alembic revision is added without a Django migration to run it: ``migrate``
    would then never upgrade a project's tables."""
    from django.core.management import call_command
    from django.db.migrations.loader import MigrationLoader

    from celery_dbeat.contrib.django.operations import UpgradeTables

    loader = MigrationLoader(None)
    (leaf,) = loader.graph.leaf_nodes("celery_dbeat")
    operations = loader.graph.nodes[leaf].operations
    assert [op.revision for op in operations if isinstance(op, UpgradeTables)] == [head]
    # and the models are all in the migrations' state (exits non-zero when they are not)
    call_command("makemigrations", "celery_dbeat", check=True, dry_run=True, verbosity=0)


# Under a test runner ---------------------------------------------------------------------------


@contextmanager
def switched_to_test_database(alias: str, test_name: str | None) -> Iterator[str]:
    """``alias`` switched to its test database, as Django's test runner does (``migrate``
    included); ``test_name``: its ``TEST['NAME']``. Yields the test database's name."""
    import django
    from django.db import connections

    from celery_dbeat.contrib.django.conf import reset

    # Django < 6 serializes the new database's rows (for serialized_rollback) unless told not
    # to; 6 does not, and deprecates the argument (RemovedInDjango2028Warning).
    no_copy: dict[str, Any] = {"serialize": False} if django.VERSION < (6,) else {}
    connection = connections[alias]
    saved = dict(connection.settings_dict["TEST"])
    connection.settings_dict["TEST"]["NAME"] = test_name
    old_name = connection.settings_dict["NAME"]
    try:
        name = connection.creation.create_test_db(verbosity=0, autoclobber=True, **no_copy)
        try:
            yield name
        finally:
            reset()  # close the API's engine: a database in use cannot be dropped
            try:
                connection.creation.destroy_test_db(old_name, verbosity=0)
            finally:
                _drop_if_left(connection, old_name, name)
    finally:
        connection.settings_dict["TEST"] = saved


def _drop_if_left(connection: Any, old_name: str, test_name: str) -> None:
    """Undo what a failed ``destroy_test_db`` left: the alias's name, a PostgreSQL database."""
    from django.conf import settings

    connection.close()
    settings.DATABASES[connection.alias]["NAME"] = old_name
    connection.settings_dict["NAME"] = old_name
    if connection.vendor == "postgresql":
        from tests.services import POSTGRES_URL

        admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{test_name}" WITH (FORCE)'))
        admin.dispose()


def test_under_a_test_runner_the_test_database_gets_the_tables_and_the_real_one_is_untouched(
    spare: Path, tmp_path: Path, head: str
) -> None:
    from django.test import override_settings

    from celery_dbeat.contrib.django import dbeat_settings, schedules

    real = f"sqlite:///{spare}"
    test_file = tmp_path / "test_spare.sqlite3"
    # The README's recipe: the URL of Django's database, written in settings.py.
    with (
        override_settings(DBEAT_DATABASE_ALIAS="spare", CELERY_DBEAT_DATABASE_URL=real),
        switched_to_test_database("spare", str(test_file)),
    ):
        assert dbeat_settings().database_url == f"sqlite:///{test_file}"
        assert dbeat_tables(f"sqlite:///{test_file}") == (ALL, head)
        schedules().add("poll", "proj.tasks.poll", Every(30))
        assert dbeat_tables(f"sqlite:///{test_file}") == (ALL, head)
    assert dbeat_tables(real) == (set(), None)


def test_under_a_test_runner_on_postgresql_the_schedules_follow_the_test_database(
    site: Any, head: str
) -> None:
    from django.test import override_settings

    from celery_dbeat.api import Schedules
    from celery_dbeat.contrib.django import dbeat_settings, schedules

    real = site.require_postgres()
    with (
        override_settings(DBEAT_DATABASE_ALIAS="postgres", CELERY_DBEAT_DATABASE_URL=real),
        switched_to_test_database("postgres", None) as name,
    ):
        test_url = sa.make_url(real).set(database=name).render_as_string(hide_password=False)
        assert dbeat_settings().database_url == test_url
        assert dbeat_tables(test_url) == (ALL, head)
        schedules().add("poll", "proj.tasks.poll", Every(30))
        with Schedules(test_url) as api:
            assert [s.name for s in api.list()] == ["poll"]
    with Schedules(real) as api:
        assert api.list() == []


def test_an_in_memory_test_database_gets_no_tables_and_only_a_warning(spare: Path) -> None:
    from django.core.checks import ERROR, run_checks
    from django.test import override_settings

    real = f"sqlite:///{spare}"
    with (
        override_settings(DBEAT_DATABASE_ALIAS="spare", CELERY_DBEAT_DATABASE_URL=real),
        switched_to_test_database("spare", None),
    ):
        issues = run_checks(databases=["spare"])
    ours = [i for i in issues if i.id.startswith("celery_dbeat")]
    assert [i.id for i in ours] == ["celery_dbeat.W005"]
    assert "['TEST']['NAME']" in ours[0].msg
    assert not [i for i in issues if i.level >= ERROR]
    assert dbeat_tables(real) == (set(), None)
