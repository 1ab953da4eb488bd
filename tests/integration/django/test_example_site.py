"""The example Django site: one command sets it up on the example Celery app's database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

SITE = Path(__file__).resolve().parents[3] / "example_project" / "django_site"


def run(*args: str, var: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EXAMPLE_VAR": str(var)}
    env.pop("DBEAT_DATABASE_URL", None)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        [sys.executable, *args], cwd=SITE, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_example_site_sets_up_both_schemas_and_the_admin_user_in_one_command(
    tmp_path: Path,
) -> None:
    first = run("run.py", "--setup-only", var=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "created the superuser admin" in first.stdout
    again = run("run.py", "--setup-only", var=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "created the superuser" not in again.stdout
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'schedules.sqlite3'}")
    with engine.connect() as conn:
        tables = set(sa.inspect(conn).get_table_names())
        users = conn.execute(sa.text("SELECT username FROM auth_user")).scalars().all()
        revision = conn.execute(sa.text("SELECT version_num FROM dbeat_alembic_version")).scalar()
    engine.dispose()
    assert {"dbeat_schedules", "dbeat_fires", "django_session", "auth_user"} <= tables
    assert revision is not None
    assert users == ["admin"]


CHECK = (
    "import django, dbeat_site; django.setup();"
    "from django.core.management import call_command; call_command('check');"
    "from celery_dbeat.config import Settings;"
    "print(Settings.from_app(dbeat_site.celery_app).database_url)"
)


def test_the_example_sites_celery_app_uses_the_example_apps_database(tmp_path: Path) -> None:
    database = tmp_path / "schedules.sqlite3"
    before = run("-c", CHECK, var=tmp_path)
    assert before.returncode == 0, before.stderr
    assert (
        f"(celery_dbeat.W003) celery-dbeat's tables are missing in sqlite:///{database}: run "
        "`python manage.py migrate`"
    ) in before.stderr
    assert before.stdout.strip().splitlines()[-1] == f"sqlite:///{database}"
    migrated = run("manage.py", "migrate", var=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    assert "Applying celery_dbeat.0001_initial... OK" in migrated.stdout
    after = run("-c", CHECK, var=tmp_path)
    assert after.returncode == 0, after.stderr
    assert "System check identified no issues" in after.stdout


def test_the_example_sites_test_runner_keeps_the_real_database_out_of_its_tests(
    tmp_path: Path,
) -> None:
    """Django's test runner on the example site (SQLite: an in-memory test database): the
    checks it runs only warn, and nothing is created in the real database."""
    probe = (
        "import django, dbeat_site; django.setup();"
        "from django.test.runner import DiscoverRunner;"
        "runner = DiscoverRunner(verbosity=0);"
        "old = runner.setup_databases(aliases={'default'});"
        "runner.run_checks(databases=['default']);"
        "runner.teardown_databases(old)"
    )
    result = run("-c", probe, var=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "celery_dbeat.W005" in result.stderr
    assert "celery_dbeat.E" not in result.stderr
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'schedules.sqlite3'}")
    with engine.connect() as conn:
        assert not [t for t in sa.inspect(conn).get_table_names() if t.startswith("dbeat_")]
    engine.dispose()
