"""Which database the Django integration uses: Django's own, unless told otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from celery_dbeat.contrib.django import database_url
from celery_dbeat.core.errors import ConfigurationError

PG = "django.db.backends.postgresql"
MYSQL = "django.db.backends.mysql"
SQLITE = "django.db.backends.sqlite3"


@pytest.mark.parametrize(
    ("entry", "url"),
    [
        pytest.param(
            {
                "ENGINE": PG,
                "NAME": "proj",
                "USER": "u",
                "PASSWORD": "p",
                "HOST": "db",
                "PORT": "5433",
            },
            "postgresql+psycopg://u:p@db:5433/proj",
            id="postgresql",
        ),
        pytest.param(
            {"ENGINE": PG, "NAME": "proj", "USER": "", "PASSWORD": "", "HOST": "", "PORT": ""},
            "postgresql+psycopg:///proj",
            id="postgresql-local-defaults",
        ),
        pytest.param(
            {"ENGINE": PG, "NAME": "proj", "USER": "u", "HOST": "/var/run/postgresql"},
            "postgresql+psycopg://u@/proj?host=%2Fvar%2Frun%2Fpostgresql",
            id="postgresql-unix-socket",
        ),
        pytest.param(
            {
                "ENGINE": PG,
                "NAME": "proj",
                "HOST": "db",
                "OPTIONS": {"sslmode": "require", "pool": True},
            },
            "postgresql+psycopg://db/proj?sslmode=require",
            id="postgresql-driver-options-kept-django-options-not",
        ),
        pytest.param(
            {"ENGINE": "django.contrib.gis.db.backends.postgis", "NAME": "geo", "HOST": "db"},
            "postgresql+psycopg://db/geo",
            id="postgis",
        ),
        pytest.param(
            {"ENGINE": PG, "NAME": "proj", "USER": "u", "PASSWORD": "p@ss:w/rd#1", "HOST": "db"},
            "postgresql+psycopg://u:p%40ss%3Aw%2Frd%231@db/proj",
            id="password-escaped",
        ),
        pytest.param(
            {"ENGINE": MYSQL, "NAME": "proj", "USER": "root", "HOST": "127.0.0.1", "PORT": 3306},
            "mysql+pymysql://root@127.0.0.1:3306/proj",
            id="mysql",
        ),
        pytest.param(
            {
                "ENGINE": MYSQL,
                "NAME": "proj",
                "HOST": "/run/mysqld/mysqld.sock",
                "OPTIONS": {"charset": "utf8mb4"},
            },
            "mysql+pymysql:///proj?charset=utf8mb4&unix_socket=%2Frun%2Fmysqld%2Fmysqld.sock",
            id="mysql-unix-socket-and-charset",
        ),
        pytest.param(
            {"ENGINE": SQLITE, "NAME": Path("/srv/proj/db.sqlite3")},
            "sqlite:////srv/proj/db.sqlite3",
            id="sqlite-absolute-path",
        ),
        pytest.param(
            {"ENGINE": SQLITE, "NAME": "db.sqlite3"},
            "sqlite:///db.sqlite3",
            id="sqlite-relative-path",
        ),
    ],
)
def test_a_django_database_entry_maps_to_its_sqlalchemy_url(
    entry: dict[str, Any], url: str
) -> None:
    assert database_url(entry) == url


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        pytest.param(
            {"ENGINE": SQLITE, "NAME": ":memory:"}, "in-memory SQLite", id="sqlite-in-memory"
        ),
        pytest.param(
            {"ENGINE": "django.db.backends.oracle", "NAME": "x"},
            "supports postgresql, mysql and sqlite3",
            id="unsupported-engine",
        ),
    ],
)
def test_a_database_celery_dbeat_cannot_use_is_refused_naming_the_setting(
    entry: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        database_url(entry)
    assert caught.value.key.startswith("DATABASES[...]")


def test_without_dbeat_settings_the_schedules_live_in_djangos_default_database(site: Any) -> None:
    from celery_dbeat.contrib.django import dbeat_settings, schedules

    assert database_url() == site.sqlite_url
    assert dbeat_settings().database_url == site.sqlite_url
    assert schedules().store.engine.url.database == site.sqlite_url.removeprefix("sqlite:///")


def test_celery_dbeat_database_url_in_django_settings_wins(site: Any) -> None:
    from django.test import override_settings

    from celery_dbeat.contrib.django import dbeat_settings

    with override_settings(
        CELERY_DBEAT_DATABASE_URL="sqlite:////elsewhere.sqlite3", CELERY_DBEAT_CATCHUP_LIMIT=7
    ):
        config = dbeat_settings()
    assert (config.database_url, config.catchup_limit) == ("sqlite:////elsewhere.sqlite3", 7)


def test_the_celery_apps_dbeat_database_url_is_used_when_django_sets_none(site: Any) -> None:
    from celery import Celery

    from celery_dbeat.contrib.django import dbeat_settings
    from celery_dbeat.contrib.django.conf import remember_celery_app

    app = Celery("proj", set_as_current=False)
    app.conf.dbeat_database_url = "sqlite:////from-the-app.sqlite3"
    app.conf.dbeat_lock_ttl = 20
    app.set_current()
    remember_celery_app()  # as the Django app does at start-up, after the project's celery.py
    config = dbeat_settings()
    assert (config.database_url, config.lock_ttl.total_seconds()) == (
        "sqlite:////from-the-app.sqlite3",
        20,
    )


def test_a_bad_dbeat_setting_is_refused_naming_it(site: Any) -> None:
    from django.test import override_settings

    from celery_dbeat.contrib.django import dbeat_settings

    with (
        override_settings(CELERY_DBEAT_CATCHUP_LIMIT=-1),
        pytest.raises(ConfigurationError, match=r"^CELERY_DBEAT_CATCHUP_LIMIT=-1: "),
    ):
        dbeat_settings()


def test_a_bad_setting_is_named_as_it_was_given_a_django_setting_or_a_celery_key(
    site: Any,
) -> None:
    from celery import Celery
    from django.test import override_settings

    from celery_dbeat.contrib.django import dbeat_settings
    from celery_dbeat.contrib.django.conf import remember_celery_app

    with (
        override_settings(CELERY_DBEAT_LOCK_TTL=5, CELERY_DBEAT_MAX_INTERVAL=10),
        pytest.raises(ConfigurationError) as caught,
    ):
        dbeat_settings()
    assert str(caught.value) == (
        "CELERY_DBEAT_LOCK_TTL=5.0: must be longer than CELERY_DBEAT_MAX_INTERVAL (10 s)"
    )

    app = Celery("proj", set_as_current=False)
    app.conf.update(dbeat_database_url="sqlite:////from-the-app.sqlite3", dbeat_batch_size=0)
    app.set_current()
    remember_celery_app()
    with pytest.raises(ConfigurationError) as caught:
        dbeat_settings()
    assert str(caught.value) == "dbeat_batch_size=0: must be a whole number >= 1"


def test_a_system_check_warns_when_the_admin_would_read_another_database(site: Any) -> None:
    from django.core.checks import run_checks
    from django.test import override_settings

    def ours() -> list[Any]:
        return [m for m in run_checks() if m.id.startswith("celery_dbeat.")]

    assert ours() == []
    with override_settings(CELERY_DBEAT_DATABASE_URL="sqlite:////elsewhere.sqlite3"):
        (warning,) = ours()
    assert warning.id == "celery_dbeat.W001"
    assert "DBEAT_DATABASE_ALIAS" in warning.hint
    with override_settings(DBEAT_DATABASE_ALIAS="nope"):
        (error,) = ours()
    assert error.id == "celery_dbeat.E001"


def test_a_system_check_warns_when_the_celery_app_would_fire_from_another_database(
    site: Any,
) -> None:
    from celery import Celery
    from django.core.checks import run_checks

    from celery_dbeat.contrib.django.conf import remember_celery_app

    Celery("proj", set_as_current=False).set_current()
    remember_celery_app()
    (warning,) = [m for m in run_checks() if m.id.startswith("celery_dbeat.")]
    assert warning.id == "celery_dbeat.W002"
    assert "CELERY_DBEAT_DATABASE_URL = database_url(" in warning.hint


def test_the_dbeat_migrate_command_creates_the_tables_with_celery_dbeats_migrations(
    site: Any, tmp_path: Path
) -> None:
    from io import StringIO

    import sqlalchemy as sa
    from django.core.management import call_command

    url = f"sqlite:///{tmp_path / 'fresh.sqlite3'}"
    out = StringIO()
    call_command("dbeat_migrate", database_url=url, stdout=out)
    assert "celery-dbeat tables at revision" in out.getvalue()
    engine = sa.create_engine(url)
    tables = set(sa.inspect(engine).get_table_names())
    engine.dispose()
    assert {"dbeat_schedules", "dbeat_fires", "dbeat_beats", "dbeat_alembic_version"} <= tables


def test_a_system_check_reports_every_misspelt_or_bad_dbeat_setting_at_once(site: Any) -> None:
    from django.core.checks import run_checks
    from django.test import override_settings

    with override_settings(
        CELERY_DBEAT_MAX_INTERVALL=5,  # ignored by the admin, refused by beat
        DBEAT_DATABASE_URL="sqlite:////elsewhere.sqlite3",  # the Celery app never reads it
        DBEAT_DATABASE_ALIASS="default",
        CELERY_DBEAT_CATCHUP_LIMIT=-1,
        CELERY_DBEAT_BATCH_SIZE=0,
    ):
        found = sorted((m.id, m.msg) for m in run_checks() if m.id.startswith("celery_dbeat."))

    assert found == [
        ("celery_dbeat.E001", "CELERY_DBEAT_BATCH_SIZE=0: must be a whole number >= 1"),
        (
            "celery_dbeat.E001",
            "CELERY_DBEAT_CATCHUP_LIMIT=-1: must be a whole number from 0 to 10000",
        ),
        (
            "celery_dbeat.E002",
            "CELERY_DBEAT_MAX_INTERVALL: unknown setting (did you mean CELERY_DBEAT_MAX_INTERVAL?)",
        ),
        (
            "celery_dbeat.E002",
            "DBEAT_DATABASE_ALIASS: unknown setting (did you mean DBEAT_DATABASE_ALIAS?)",
        ),
        (
            "celery_dbeat.E002",
            "DBEAT_DATABASE_URL: unknown setting (did you mean CELERY_DBEAT_DATABASE_URL?)",
        ),
    ]


def test_a_system_check_reports_a_misspelt_key_of_the_projects_celery_app(site: Any) -> None:
    from celery import Celery
    from django.core.checks import run_checks

    from celery_dbeat.contrib.django.conf import remember_celery_app

    app = Celery("proj", set_as_current=False)
    app.conf.update(dbeat_database_url=site.sqlite_url, dbeat_lock_tll=60)
    app.set_current()
    remember_celery_app()

    found = [(m.id, m.msg) for m in run_checks() if m.id.startswith("celery_dbeat.E")]

    assert found == [
        ("celery_dbeat.E002", "dbeat_lock_tll: unknown setting (did you mean dbeat_lock_ttl?)")
    ]
