"""Django for these tests only: configured lazily, once per session, by the ``django_site`` fixture.

Django's settings are process-global, so nothing here runs at import or collection time, and
nothing is configured unless a test asks for it; other test packages in the same pytest process
never see Django. The site:

* ``default``: a private SQLite file holding Django's own tables (auth, sessions, admin log) and
  celery-dbeat's, both made by Django's ``migrate``, so the admin runs on "the project's own
  database" without any dbeat setting;
* ``shifted``: the same file, read with ``DATABASES[...]['TIME_ZONE'] = 'Asia/Tokyo'``;
* ``postgres``: a private PostgreSQL database with celery-dbeat's tables (when reachable);
* ``spare``: a SQLite file that each test using the ``spare`` fixture starts without.

``TIME_ZONE`` is America/New_York so that a value read in the wrong zone is off by hours.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat.clock import FixedClock
from tests.services import private_database, unavailable

ADMIN_USER, ADMIN_PASSWORD = "admin", "admin"
TABLES = ("dbeat_fires", "dbeat_schedules", "dbeat_beats", "dbeat_calendars", "dbeat_audit")


@dataclass
class DjangoSite:
    sqlite_url: str
    postgres_url: str | None
    postgres_problem: str | None
    spare_path: Path

    def require_postgres(self) -> str:
        if self.postgres_url is None:
            unavailable("PostgreSQL", "DBEAT_TEST_POSTGRES_URL", self.postgres_problem)
        assert self.postgres_url is not None
        return self.postgres_url


def _django_entry(url: str) -> dict[str, Any]:
    parts = sa.make_url(url)
    if parts.get_backend_name() == "sqlite":
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": parts.database}
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parts.database,
        "USER": parts.username or "",
        "PASSWORD": parts.password or "",
        "HOST": parts.host or "",
        "PORT": str(parts.port or ""),
    }


def _migrate_dbeat(url: str) -> None:
    from celery_dbeat.store import create_engine, migrate

    engine = create_engine(url)
    try:
        migrate(engine)
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def django_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DjangoSite]:
    from django.conf import settings

    if settings.configured:
        pytest.fail("Django was configured before tests/integration/django could configure it")
    with ExitStack() as stack:
        sqlite_url = stack.enter_context(private_database("sqlite", tmp_path_factory))
        spare_path = tmp_path_factory.mktemp("spare") / "spare.sqlite3"
        postgres_url: str | None = None
        problem: str | None = None
        try:
            postgres_url = stack.enter_context(private_database("postgresql", tmp_path_factory))
        except (pytest.skip.Exception, pytest.fail.Exception) as exc:
            problem = str(exc)
        databases = {
            "default": _django_entry(sqlite_url),
            "shifted": {**_django_entry(sqlite_url), "TIME_ZONE": "Asia/Tokyo"},
            "spare": _django_entry(f"sqlite:///{spare_path}"),
        }
        if postgres_url is not None:
            _migrate_dbeat(postgres_url)
            databases["postgres"] = _django_entry(postgres_url)
        settings.configure(
            DEBUG=False,
            SECRET_KEY="celery-dbeat tests",
            ALLOWED_HOSTS=["testserver", "127.0.0.1", "localhost"],
            USE_TZ=True,
            TIME_ZONE="America/New_York",
            LOGGING_CONFIG=None,
            DATABASES=databases,
            INSTALLED_APPS=[
                "django.contrib.admin",
                "django.contrib.auth",
                "django.contrib.contenttypes",
                "django.contrib.sessions",
                "django.contrib.messages",
                "django.contrib.staticfiles",
                "celery_dbeat.contrib.django",
            ],
            MIDDLEWARE=[
                "django.contrib.sessions.middleware.SessionMiddleware",
                "django.middleware.common.CommonMiddleware",
                "django.middleware.csrf.CsrfViewMiddleware",
                "django.contrib.auth.middleware.AuthenticationMiddleware",
                "django.contrib.messages.middleware.MessageMiddleware",
            ],
            ROOT_URLCONF="tests.integration.django.urls",
            TEMPLATES=[
                {
                    "BACKEND": "django.template.backends.django.DjangoTemplates",
                    "APP_DIRS": True,
                    "OPTIONS": {
                        "context_processors": [
                            "django.template.context_processors.request",
                            "django.contrib.auth.context_processors.auth",
                            "django.contrib.messages.context_processors.messages",
                        ]
                    },
                }
            ],
            STATIC_URL="/static/",
            PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
            DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        )
        import django
        from celery import _state
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.db import connections
        from django.test.utils import setup_test_environment, teardown_test_environment

        celery_state: Any = _state  # private: the current-app switch Celery keeps per thread

        previous_app = getattr(celery_state._tls, "current_app", None)
        celery_state._set_current_app(None)  # not another test's Celery app: see ``site``
        django.setup()
        celery_state._set_current_app(previous_app)
        setup_test_environment()
        # Creates celery-dbeat's tables too (celery_dbeat.0001_initial), on the default alias.
        call_command("migrate", run_syncdb=True, verbosity=0, interactive=False)
        get_user_model().objects.create_superuser(ADMIN_USER, "admin@example.com", ADMIN_PASSWORD)
        try:
            yield DjangoSite(sqlite_url, postgres_url, problem, spare_path)
        finally:
            from celery_dbeat.contrib.django.conf import reset

            reset()
            connections.close_all()
            teardown_test_environment()


@pytest.fixture
def site(django_site: DjangoSite) -> Iterator[DjangoSite]:
    """The Django site with empty schedule tables and admin log (schedule ids are reused), and
    no Celery app of another test current."""
    from celery import _state
    from django.contrib.admin.models import LogEntry

    from celery_dbeat.contrib.django.conf import remember_celery_app, reset

    celery_state: Any = _state  # private: the current-app switch Celery keeps per thread

    # A Celery app another test created would otherwise count as "the project's app".
    previous = getattr(celery_state._tls, "current_app", None)
    celery_state._set_current_app(None)
    remember_celery_app()
    reset()
    for url in filter(None, (django_site.sqlite_url, django_site.postgres_url)):
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            for table in TABLES:
                conn.execute(sa.text(f"DELETE FROM {table}"))
        engine.dispose()
    LogEntry.objects.all().delete()
    yield django_site
    reset()
    celery_state._set_current_app(previous)


@pytest.fixture
def client(site: DjangoSite) -> Any:
    """A test client logged in as the superuser."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=ADMIN_USER))
    return client


@pytest.fixture
def api(site: DjangoSite) -> Any:
    """Overrides tests/integration/conftest.py's ``api`` on purpose: the admin writes through
    the management API that ``celery_dbeat.contrib.django`` builds from Django's settings (on
    the ``default`` database), not one on the integration ``store``."""
    from celery_dbeat.contrib.django import schedules

    return schedules()


@pytest.fixture
def clock(clock: FixedClock, api: Any, monkeypatch: pytest.MonkeyPatch) -> FixedClock:
    """Overrides tests/integration/conftest.py's ``clock`` on purpose: the same clock at START,
    also made the clock of the API the admin writes through, which Django built itself."""
    monkeypatch.setattr(api, "clock", clock)
    return clock


def _remove_sqlite_file(path: Path) -> None:
    from django.db import connections

    connections["spare"].close()
    for suffix in ("", "-wal", "-shm", "-journal"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


@pytest.fixture
def spare(site: DjangoSite) -> Iterator[Path]:
    """The ``spare`` alias's SQLite file, absent (so empty) when the test starts; removed after."""
    _remove_sqlite_file(site.spare_path)
    yield site.spare_path
    _remove_sqlite_file(site.spare_path)


@pytest.fixture
def on_spare(spare: Path) -> Iterator[str]:
    """``DBEAT_DATABASE_ALIAS = "spare"``: celery-dbeat's tables are looked for in the ``spare``
    file; yields its URL."""
    from django.test import override_settings

    with override_settings(DBEAT_DATABASE_ALIAS="spare"):
        yield f"sqlite:///{spare}"


@pytest.fixture
def celery_app(site: Any) -> Iterator[Any]:
    """The project's Celery app, as ``proj/celery.py`` makes it before Django is ready."""
    from celery import Celery, _state

    from celery_dbeat.contrib.django.conf import remember_celery_app

    celery_state: Any = _state  # private: the current-app switch Celery keeps per thread

    app = Celery("proj", set_as_current=False)

    @app.task(name="proj.tasks.report", shared=False)
    def report() -> None: ...

    @app.task(name="proj.tasks.poll", shared=False)
    def poll() -> None: ...

    app.set_current()
    remember_celery_app()
    yield app
    celery_state._set_current_app(None)
    remember_celery_app()
