"""Where a Django project keeps its schedules, and the management API over them.

By default the tables live in Django's own database (``DBEAT_DATABASE_ALIAS``, default
``"default"``) and the SQLAlchemy URL is built from its ``DATABASES`` entry. A project that keeps
them elsewhere sets ``CELERY_DBEAT_DATABASE_URL`` (the key its Celery app reads with
``namespace="CELERY"``), or sets ``dbeat_database_url`` on its Celery app, and points
``DBEAT_DATABASE_ALIAS`` at a ``DATABASES`` entry for the same database so the admin can read it.

Under Django's test runner, which switches each alias to a test database, a URL naming the
alias's database follows it to the test database: a test run never touches the real schedules.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any

import sqlalchemy as sa

from celery_dbeat.api import Schedules
from celery_dbeat.config import SETTING_KEYS, Settings, SettingsErrors
from celery_dbeat.core.errors import ConfigurationError
from celery_dbeat.store import Store

__all__ = [
    "database_alias",
    "database_url",
    "dbeat_settings",
    "in_memory_test_database",
    "is_test_database",
    "on_reset",
    "project_celery_app",
    "remember_celery_app",
    "remember_databases",
    "reset",
    "same_database",
    "schedules",
]

#: Django database engines and the SQLAlchemy driver celery-dbeat uses for each.
DRIVERS = {
    "django.db.backends.postgresql": "postgresql+psycopg",
    "django.contrib.gis.db.backends.postgis": "postgresql+psycopg",
    "django.db.backends.mysql": "mysql+pymysql",
    "django.contrib.gis.db.backends.mysql": "mysql+pymysql",
    "django.db.backends.sqlite3": "sqlite",
    "django.contrib.gis.db.backends.spatialite": "sqlite",
}
#: ``OPTIONS`` keys carried into the URL's query (the driver accepts them under the same name).
#: Others (``pool``, ``isolation_level``, ``init_command``, ``ssl`` dicts...) are not: set
#: ``CELERY_DBEAT_DATABASE_URL`` and ``CELERY_DBEAT_ENGINE_OPTIONS`` yourself for those.
QUERY_OPTIONS = {
    "postgresql": (
        "sslmode",
        "sslrootcert",
        "sslcert",
        "sslkey",
        "connect_timeout",
        "application_name",
        "target_session_attrs",
        "options",
        "service",
        "passfile",
    ),
    "mysql": ("charset", "connect_timeout", "read_default_file", "read_default_group"),
    "sqlite": (),
}


def database_alias() -> str:
    """The Django database alias holding celery-dbeat's tables (``DBEAT_DATABASE_ALIAS``)."""
    from django.conf import settings

    alias = getattr(settings, "DBEAT_DATABASE_ALIAS", "default")
    if alias not in settings.DATABASES:
        raise ConfigurationError(
            "DBEAT_DATABASE_ALIAS", alias, f"is not in DATABASES ({', '.join(settings.DATABASES)})"
        )
    return str(alias)


def database_url(database: str | Mapping[str, Any] | None = None) -> str:
    """The SQLAlchemy URL of a Django database: an entry of ``DATABASES`` (usable in
    ``settings.py`` itself) or an alias (default: :func:`database_alias`).

    ``postgresql`` becomes ``postgresql+psycopg``, ``mysql`` ``mysql+pymysql`` and ``sqlite3``
    ``sqlite:///NAME``. Given an alias, the live connection settings are used, so a test runner's
    ``test_`` database is followed.
    """
    in_test = False
    if database is None or isinstance(database, str):
        from django.db import connections

        alias = database_alias() if database is None else database
        where = f"DATABASES[{alias!r}]"
        entry: Mapping[str, Any] = connections[alias].settings_dict
        in_test = is_test_database(alias)
    else:
        where, entry = "DATABASES[...]", database
    engine = entry.get("ENGINE", "")
    driver = DRIVERS.get(engine)
    if driver is None:
        raise ConfigurationError(
            f"{where}['ENGINE']",
            engine,
            "celery-dbeat supports postgresql, mysql and sqlite3 databases; "
            "set CELERY_DBEAT_DATABASE_URL to another SQLAlchemy URL",
        )
    name = entry.get("NAME")
    if driver == "sqlite":
        path = os.fspath(name) if name else ""
        if _in_memory(path):
            if in_test:
                raise ConfigurationError(
                    f"{where}['TEST']['NAME']",
                    name,
                    "the test database is in-memory SQLite, which celery-dbeat's own "
                    "connections cannot share: set it to a file name to test with its tables",
                )
            raise ConfigurationError(
                f"{where}['NAME']",
                name,
                "an in-memory SQLite database cannot be shared with beat; use a file",
            )
        return f"sqlite:///{path}"
    backend = driver.split("+")[0]
    options = entry.get("OPTIONS") or {}
    query = {
        key: str(options[key]) for key in QUERY_OPTIONS[backend] if options.get(key) is not None
    }
    host = entry.get("HOST") or None
    if host and host.startswith("/"):  # a Unix socket directory (PostgreSQL) or file (MySQL)
        query["host" if backend == "postgresql" else "unix_socket"] = host
        host = None
    port = entry.get("PORT")
    url = sa.URL.create(
        driver,
        username=entry.get("USER") or None,
        password=entry.get("PASSWORD") or None,
        host=host,
        port=int(port) if port not in (None, "") else None,
        database=os.fspath(name) if name else None,
        query=query,
    )
    return url.render_as_string(hide_password=False)


def _in_memory(path: str) -> bool:
    """Whether a SQLite NAME is an in-memory database (Django's test databases are, by default:
    ``file:memorydb_default?mode=memory&cache=shared``)."""
    return path in ("", ":memory:") or path.startswith("file::memory:") or "mode=memory" in path


def same_database(first: str, second: str) -> bool:
    """Whether two SQLAlchemy URLs name the same database (drivers and passwords aside)."""
    a, b = sa.make_url(first), sa.make_url(second)
    if a.get_backend_name() != b.get_backend_name():
        return False
    if a.get_backend_name() == "sqlite":
        return os.path.abspath(a.database or "") == os.path.abspath(b.database or "")
    return (a.host or "localhost", a.port, a.database, a.query.get("host")) == (
        b.host or "localhost",
        b.port,
        b.database,
        b.query.get("host"),
    )


_project_app: Any = None
#: Each ``DATABASES`` entry as configured, before a test runner switched it (``AppConfig.ready``).
_configured: dict[str, dict[str, Any]] = {}


def remember_databases() -> None:
    """Remember the ``DATABASES`` entries as configured (``AppConfig.ready`` calls this, before
    a test runner switches the aliases to their test databases)."""
    from django.conf import settings

    _configured.clear()
    _configured.update({alias: dict(entry) for alias, entry in settings.DATABASES.items()})


def is_test_database(alias: str) -> bool:
    """Whether ``alias`` now names another database than at start-up: Django's test runner
    switched it to its test database."""
    from django.db import connections

    configured = _configured.get(alias)
    if configured is None:
        return False
    return bool(connections[alias].settings_dict.get("NAME") != configured.get("NAME"))


def in_memory_test_database(alias: str) -> bool:
    """Whether ``alias`` is a test database in SQLite's memory (Django's default for SQLite)."""
    from django.db import connections

    entry = connections[alias].settings_dict
    return (
        is_test_database(alias)
        and DRIVERS.get(entry.get("ENGINE", "")) == "sqlite"
        and _in_memory(os.fspath(entry.get("NAME") or ""))
    )


def _on_test_database(url: str) -> str:
    """``url``, or the test database when it names the one the test runner switched the schedule
    alias away from (the same server and credentials, the test database's name)."""
    try:
        alias = database_alias()
    except ConfigurationError:
        return url  # the system check reports it
    if not is_test_database(alias):
        return url
    try:
        configured = database_url(_configured[alias])
    except ConfigurationError:
        return url
    if not same_database(url, configured):
        return url  # the schedules are not in Django's database
    test_url = sa.make_url(database_url(alias))
    return sa.make_url(url).set(database=test_url.database).render_as_string(hide_password=False)


def remember_celery_app() -> None:
    """Remember the Celery app current in this thread (``AppConfig.ready`` calls this at start-up,
    after the project's ``celery.py`` made its app): Celery's current app is per thread, and
    requests are served in others."""
    global _project_app
    from celery import _state

    _project_app = getattr(getattr(_state, "_tls", None), "current_app", None)


def project_celery_app() -> Any:
    """The project's Celery app remembered at start-up, if it had made one."""
    return _project_app


def dbeat_settings() -> Settings:
    """celery-dbeat's settings for this Django project.

    ``CELERY_DBEAT_*`` Django settings when ``CELERY_DBEAT_DATABASE_URL`` is among them; else the
    project Celery app's ``dbeat_*`` settings (see :func:`remember_celery_app`) when it sets
    ``dbeat_database_url``; else the
    ``CELERY_DBEAT_*`` settings with the URL of :func:`database_alias`'s database. Under a test
    runner, a URL naming that database names its test database instead.

    A bad value is reported under the name it was given as: ``CELERY_DBEAT_LOCK_TTL`` for a
    Django setting, ``dbeat_lock_ttl`` for a key of the Celery app.
    """
    from django.conf import settings

    names = [f.name for f in fields(Settings)]
    values = {
        name: getattr(settings, f"CELERY_DBEAT_{name.upper()}")
        for name in names
        if getattr(settings, f"CELERY_DBEAT_{name.upper()}", None) is not None
    }
    app = project_celery_app()
    from_app = (
        "database_url" not in values
        and app is not None
        and bool(app.conf.get("dbeat_database_url"))
    )
    if from_app:
        values = {
            name: app.conf.get(f"dbeat_{name}")
            for name in names
            if app.conf.get(f"dbeat_{name}") is not None
        }
    if "database_url" not in values:
        values["database_url"] = database_url()
    else:
        values["database_url"] = _on_test_database(values["database_url"])
    try:
        return Settings.from_mapping(values)
    except ConfigurationError as exc:
        if from_app:
            raise
        raise _as_django_settings(exc) from None


#: A celery-dbeat key in an error's text (``dbeat_lock_ttl``).
_KEY = re.compile(r"\bdbeat_[a-z_]+\b")


def _django_setting(text: str) -> str:
    """``text`` with each celery-dbeat key in it named as a Django setting
    (``dbeat_lock_ttl`` -> ``CELERY_DBEAT_LOCK_TTL``, the setting the project's Celery app reads
    with ``namespace="CELERY"``)."""
    return _KEY.sub(lambda m: f"CELERY_{m[0].upper()}" if m[0] in SETTING_KEYS else m[0], text)


def _as_django_settings(exc: ConfigurationError) -> ConfigurationError:
    """``exc`` (one bad setting, or :class:`SettingsErrors`) naming Django's settings."""
    errors = [
        ConfigurationError(_django_setting(e.key), e.value, _django_setting(e.problem))
        for e in getattr(exc, "errors", [exc])
    ]
    return errors[0] if len(errors) == 1 else SettingsErrors(errors)


_lock = threading.Lock()
#: One engine per process and database: ``(settings key) -> (store, api)``.
_cache: dict[tuple[Any, ...], tuple[Store, Schedules]] = {}


def schedules() -> Schedules:
    """The management API on this project's schedule database (cached, one engine per URL).

    With ``dbeat_redis_url`` set, each write wakes the running beats through Redis."""
    config = dbeat_settings()
    app = project_celery_app()  # its workers' accept_content; without one, Celery's default
    accept = tuple(app.conf.accept_content) if app and app.conf.accept_content else None
    key = (
        accept,
        config.database_url,
        repr(sorted(config.engine_options.items())),
        config.redis_url,
        config.redis_key_prefix,
        repr(sorted(config.redis_options.items())),
        config.max_interval,
    )
    with _lock:
        if key not in _cache:
            store = Store(config.database_url, engine_options=dict(config.engine_options))
            api = Schedules(
                store,
                notify=config.redis_url,
                redis_key_prefix=config.redis_key_prefix,
                redis_options=config.redis_options,
                live_within=3 * config.max_interval,  # as Schedules.from_app
                accept_content=accept,
            )
            _cache[key] = (store, api)
        return _cache[key][1]


#: Called by :func:`reset`: caches kept elsewhere in this app (which tables were found ready).
_reset_hooks: list[Callable[[], None]] = []


def on_reset(hook: Callable[[], None]) -> Callable[[], None]:
    """Have :func:`reset` call ``hook`` too (a decorator)."""
    _reset_hooks.append(hook)
    return hook


def reset() -> None:
    """Close the cached APIs and their engines and forget which databases had the tables
    (settings changed, or at shutdown)."""
    for hook in _reset_hooks:
        hook()
    with _lock:
        cached = list(_cache.values())
        _cache.clear()
    for store, api in cached:
        api.close()
        store.close()
