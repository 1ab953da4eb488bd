"""Real services for tests: URLs from the environment, one private database or key prefix each.

A service that cannot be reached skips the test on a laptop and fails it when ``CI`` is set, so
CI can never pass by skipping.
"""

from __future__ import annotations

import atexit
import functools
import os
import random
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
import sqlalchemy as sa

from celery_dbeat.store import Store, migrate

POSTGRES_URL = os.environ.get(
    "DBEAT_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
MYSQL_URL = os.environ.get("DBEAT_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
REDIS_URL = os.environ.get("DBEAT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
AMQP_URL = os.environ.get("DBEAT_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672//")

DATABASES = ("sqlite", "postgresql", "mysql")


def unavailable(what: str, url: str, reason: object) -> None:
    message = f"{what} unavailable at {url}: {reason}"
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI is set, so service-backed tests must not skip)")
    pytest.skip(message)


def reachable(url: str, default_port: int) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection(
            (parts.hostname or "127.0.0.1", parts.port or default_port), 2
        ):
            return True
    except OSError:
        return False


def redis_url_or_skip() -> str:
    if not reachable(REDIS_URL, 6379):
        unavailable("Redis", REDIS_URL, "connection refused")
    return REDIS_URL


def amqp_url_or_skip() -> str:
    """``AMQP_URL`` if an AMQP broker (RabbitMQ) accepts a login there."""
    from kombu import Connection
    from kombu.utils.url import sanitize_url

    shown = sanitize_url(AMQP_URL)
    if not reachable(AMQP_URL, 5672):
        unavailable("RabbitMQ", shown, "connection refused")
    try:
        with Connection(AMQP_URL, connect_timeout=3) as connection:
            connection.ensure_connection(max_retries=1, interval_start=0)
    except Exception as exc:
        unavailable("RabbitMQ", shown, exc)
    return AMQP_URL


#: Below Linux's ephemeral range (32768+), so that no outgoing connection takes a port between
#: choosing it and the server binding it; a cluster node's bus port (+10000) stays below it too.
_PORTS = range(12000, 22000)


def free_port(*, with_bus: bool = False) -> int:
    """A free loopback port for a server a test starts (a proxy, Redis, PostgreSQL, beat's
    metrics); ``with_bus``: port + 10000 (a Redis cluster node's bus) is free too."""
    for _ in range(200):
        port = random.choice(_PORTS)
        try:
            for candidate in (port, port + 10000) if with_bus else (port,):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port
    raise RuntimeError("no free loopback port")


def unique_name(prefix: str = "dbeat_t") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@contextmanager
def private_database(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh, empty database of ``kind``; dropped afterwards. Yields its URL."""
    if kind == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "schedules.sqlite3"
        yield f"sqlite:///{path}"
        return
    admin_url = _admin_url(kind)
    try:
        admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        admin.dispose()
    except Exception as exc:
        unavailable(kind, admin_url, exc)
    name = unique_name()
    _admin(admin_url, f"CREATE DATABASE {name}")
    try:
        yield sa.make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        force = " WITH (FORCE)" if kind == "postgresql" else ""
        _admin(admin_url, f"DROP DATABASE IF EXISTS {name}{force}")


def _admin_url(kind: str) -> str:
    """Where private databases of ``kind`` are created and dropped (MariaDB for any but
    PostgreSQL and SQLite)."""
    return POSTGRES_URL if kind == "postgresql" else MYSQL_URL


def _admin(admin_url: str, *statements: str) -> None:
    """Run ``statements`` on the server of ``admin_url``, outside any transaction."""
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement)
    finally:
        admin.dispose()


def install_schema(url: str) -> None:
    """Bring the empty private database at ``url`` to the schema's head, as ``migrate`` would,
    in a fraction of its time: a copy of one database this process migrated once per backend
    (PostgreSQL: recreated ``TEMPLATE`` it; MariaDB: its tables' own ``SHOW CREATE TABLE``
    and rows; SQLite: its file). Alembic runs each migration for real in the template, and on
    empty databases in test_migrations.py."""
    target = sa.make_url(url)
    backend = target.get_backend_name()
    template = _template(backend)
    if backend == "sqlite":
        shutil.copyfile(str(template.url.database), str(target.database))
    elif backend == "postgresql":
        _admin(
            _admin_url(backend),
            f"DROP DATABASE {target.database}",
            f"CREATE DATABASE {target.database} TEMPLATE {template.url.database}",
        )
    else:
        source = template.url.database
        _admin(
            _admin_url(backend),
            f"USE `{target.database}`",
            "SET foreign_key_checks = 0",
            *template.ddl,
            *(f"INSERT INTO `{t}` SELECT * FROM `{source}`.`{t}`" for t in template.filled),
        )


@dataclass(frozen=True)
class _Template:
    """A database migrated to the head (see :func:`install_schema`); on MariaDB, each table's
    ``CREATE TABLE`` and the tables with rows (the version's)."""

    url: sa.URL
    ddl: list[str]
    filled: list[str]


@functools.cache
def _template(backend: str) -> _Template:
    """This process's template of ``backend``, migrated on first use, removed at exit."""
    if backend == "sqlite":
        folder = tempfile.mkdtemp(prefix="dbeat-template-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        url = sa.make_url(f"sqlite:///{folder}/t.db")
    else:
        admin_url = _admin_url(backend)
        name = unique_name("dbeat_template")
        _admin(admin_url, f"CREATE DATABASE {name}")
        force = " WITH (FORCE)" if backend == "postgresql" else ""
        atexit.register(_admin, admin_url, f"DROP DATABASE IF EXISTS {name}{force}")
        url = sa.make_url(admin_url).set(database=name)
    store = Store(url.render_as_string(hide_password=False), server_clock=False)
    ddl: list[str] = []
    filled: list[str] = []
    try:
        migrate(store.engine)
        if backend not in ("sqlite", "postgresql"):
            with store.engine.connect() as conn:
                tables = list(conn.execute(sa.text("SHOW TABLES")).scalars())
                # Foreign keys name tables only, never the database: the DDL runs anywhere.
                ddl = [conn.execute(sa.text(f"SHOW CREATE TABLE `{t}`")).one()[1] for t in tables]
                filled = [t for t in tables if conn.exec_driver_sql(f"SELECT 1 FROM `{t}`").first()]
    finally:
        store.close()
    return _Template(url, ddl, filled)


LIBFAKETIME = os.environ.get(
    "DBEAT_TEST_LIBFAKETIME", "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
)


class FakeTime:
    """A wall clock ``offset`` off (libfaketime's syntax, e.g. ``+90s``) for the processes
    started with :attr:`env`; :meth:`set` changes it while they run (read within a second).

    Under Debian's libfaketime only the wall clock moves; the monotonic clock runs true, as on a
    host whose clock is wrong or is stepped by NTP. Skips (fails under ``CI``) without it.
    """

    def __init__(self, spec: Path, offset: str = "+0") -> None:
        if not os.path.exists(LIBFAKETIME):
            unavailable("libfaketime", LIBFAKETIME, "not installed (apt-get install libfaketime)")
        self.spec = spec
        self.set(offset)
        self.env = {
            "LD_PRELOAD": LIBFAKETIME,
            "FAKETIME_TIMESTAMP_FILE": str(spec),
            "FAKETIME_CACHE_DURATION": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        }

    def set(self, offset: str) -> None:
        staged = self.spec.with_suffix(".new")
        staged.write_text(f"{offset}\n")
        staged.chmod(0o644)  # a server may run as another user (PostgreSQL as postgres)
        staged.replace(self.spec)  # atomic: a process never reads a half-written file


# Throwaway accounts on the shared servers, for tests of refused credentials --------------------


@contextmanager
def pg_role(*rules: str) -> Iterator[str]:
    """A role of the shared server (``CREATE ROLE name <rules>``), dropped afterwards."""
    name = unique_name()
    admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f"CREATE ROLE {name} {' '.join(rules)}"))
    except sa.exc.OperationalError as exc:
        unavailable("postgresql", POSTGRES_URL, exc)
    try:
        yield name
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP OWNED BY {name}"))
            conn.execute(sa.text(f"DROP ROLE {name}"))
        admin.dispose()


@contextmanager
def mysql_user(password: str, *grants: str) -> Iterator[str]:
    """A user of the shared server with ``password`` and ``grants``, dropped afterwards."""
    name = unique_name()[:32]
    admin = sa.create_engine(MYSQL_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f"CREATE USER '{name}'@'%' IDENTIFIED BY '{password}'"))
            for grant in grants:
                conn.execute(sa.text(f"GRANT {grant} TO '{name}'@'%'"))
    except sa.exc.OperationalError as exc:
        unavailable("mysql", MYSQL_URL, exc)
    try:
        yield name
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP USER '{name}'@'%'"))
        admin.dispose()


@contextmanager
def redis_acl_user(redis_url: str, prefix: str) -> Iterator[str]:
    """An ACL user of the shared Redis (password ``right``) limited to ``prefix``'s keys and
    channels; deleted afterwards. Yields its name."""
    name = unique_name()
    admin = redis.Redis.from_url(redis_url)
    admin.acl_setuser(
        name,
        enabled=True,
        passwords=["+right"],
        keys=[f"{prefix}*"],
        channels=[f"{prefix}*"],
        commands=["+@all"],
    )
    try:
        yield name
    finally:
        admin.acl_deluser(name)
        admin.close()
