"""The example Django site: one command sets it up on the example Celery app's database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

SITE = Path(__file__).resolve().parents[2] / "example_project" / "django_site"


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
    engine.dispose()
    assert {"dbeat_schedules", "dbeat_fires", "django_session", "auth_user"} <= tables
    assert users == ["admin"]


def test_the_example_sites_celery_app_uses_the_example_apps_database(tmp_path: Path) -> None:
    probe = (
        "import django, dbeat_site; django.setup();"
        "from django.core.management import call_command; call_command('check');"
        "from celery_dbeat.config import Settings;"
        "print(Settings.from_app(dbeat_site.celery_app).database_url)"
    )
    result = run("-c", probe, var=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == f"sqlite:///{tmp_path / 'schedules.sqlite3'}"
