"""Real services for tests: URLs from the environment, one private database or key prefix each.

A service that cannot be reached skips the test on a laptop and fails it when ``CI`` is set, so
CI can never pass by skipping.
"""

from __future__ import annotations

import atexit
import functools
import os
import random
import re
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
import sqlalchemy as sa

from celery_dbeat.store import Store, migrate

POSTGRES_URL = os.environ.get(
    "DBEAT_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
#: Without TLS unless asked: PyMySQL (1.2 and later) otherwise loads the system's CA certificates
#: for every connection (25 ms of CPU) to offer TLS to a server that, here, has none.
MYSQL_URL = os.environ.get(
    "DBEAT_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test?ssl_disabled=true"
)
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
    """A private, empty database of ``kind``; afterwards emptied for the next test, or dropped.
    Yields its URL.

    A server's database is one this process created, or one an earlier test of this process
    left and :func:`_recycle` emptied: creating and dropping one took a third of a second of
    the server's work per test on PostgreSQL, and most tests use one."""
    if kind == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "schedules.sqlite3"
        yield f"sqlite:///{path}"
        return
    kind = "postgresql" if kind == "postgresql" else "mysql"  # "mariadb" too: one server
    spares = _spares(kind)
    name = spares.empty.pop() if spares.empty else _create(kind)
    try:
        yield _url_of(kind, name).render_as_string(hide_password=False)
    finally:
        _recycle(kind, name)


def _admin_url(kind: str) -> str:
    """Where private databases of ``kind`` are created and dropped (MariaDB for any but
    PostgreSQL and SQLite)."""
    return POSTGRES_URL if kind == "postgresql" else MYSQL_URL


def _url_of(kind: str, database: str) -> sa.URL:
    return sa.make_url(_admin_url(kind)).set(database=database)


def _admin(admin_url: str, *statements: str) -> None:
    """Run ``statements`` on the server of ``admin_url``, outside any transaction."""
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement)
    finally:
        admin.dispose()


def _create(kind: str, prefix: str = "dbeat_t") -> str:
    """A new empty database of ``kind`` named ``prefix_...``, dropped by :func:`drop_databases`
    if no test dropped it; the test is skipped (failed under ``CI``) if its server cannot be
    reached."""
    admin_url = _admin_url(kind)
    try:
        admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        admin.dispose()
    except Exception as exc:
        unavailable(kind, admin_url, exc)
    name = unique_name(prefix)
    _admin(admin_url, f"CREATE DATABASE {name}")
    _made[kind].add(name)
    return name


def _drop(kind: str, *names: str) -> None:
    force = " WITH (FORCE)" if kind == "postgresql" else ""
    _admin(_admin_url(kind), *(f"DROP DATABASE IF EXISTS {name}{force}" for name in names))
    _made[kind].difference_update(names)


#: The server databases this process made and has not dropped, by kind (a test's, a spare, a
#: template): :func:`drop_databases` drops them.
_made: dict[str, set[str]] = {"postgresql": set(), "mysql": set()}


def drop_databases() -> None:
    """Drop every server database this process made and still has, and its SQLite templates:
    at the end of a test session (tests/conftest.py), where a test process still runs for sure
    (pytest-xdist kills a worker that takes long to exit), and at exit for other callers."""
    for kind, names in _made.items():
        if names:
            _drop(kind, *sorted(names))
    _spares.cache_clear()
    _template.cache_clear()
    for folder in _folders:
        shutil.rmtree(folder, ignore_errors=True)
    _folders.clear()


#: This process's SQLite template folders.
_folders: list[str] = []
atexit.register(drop_databases)


def install_schema(url: str) -> None:
    """Bring the empty private database at ``url`` to the schema's head, as ``migrate`` would,
    in a fraction of its time: swapped with an emptied database at the head an earlier test
    left (:func:`_recycle`), else a copy of one database this process migrated once per backend
    (PostgreSQL: recreated ``TEMPLATE`` it; MariaDB: its tables' own ``SHOW CREATE TABLE``
    and rows; SQLite: its file). Alembic runs each migration for real in the template, and on
    empty databases in test_migrations.py."""
    target = sa.make_url(url)
    backend = target.get_backend_name()
    template = _template(backend)
    if backend == "sqlite":
        shutil.copyfile(str(template.url.database), str(target.database))
        return
    admin_url = _admin_url(backend)
    name, spares = str(target.database), _spares(backend)
    if spares.head:  # the two databases trade contents: the spare is now the empty one
        spare = spares.head.pop()
        if backend == "postgresql":
            swap = unique_name("dbeat_swap")
            _admin(
                admin_url,
                f"ALTER DATABASE {name} RENAME TO {swap}",
                f"ALTER DATABASE {spare} RENAME TO {name}",
                f"ALTER DATABASE {swap} RENAME TO {spare}",
            )
        else:
            moves = (f"`{spare}`.`{t}` TO `{name}`.`{t}`" for t in template.tables)
            _admin(admin_url, "RENAME TABLE " + ", ".join(moves))
        spares.empty.append(spare)
    elif backend == "postgresql":
        _admin(
            admin_url,
            f"DROP DATABASE {name}",
            f"CREATE DATABASE {name} TEMPLATE {template.url.database}",
        )
    else:
        source = template.url.database
        _admin(
            admin_url,
            f"USE `{name}`",
            "SET foreign_key_checks = 0",
            *template.ddl,
            *(f"INSERT INTO `{t}` SELECT * FROM `{source}`.`{t}`" for t in template.filled),
        )


@dataclass
class _Spares:
    """This process's emptied databases on one server, by schema: none, or the head."""

    empty: list[str] = field(default_factory=list)
    head: list[str] = field(default_factory=list)


@functools.cache
def _spares(kind: str) -> _Spares:
    return _Spares()


def _recycle(kind: str, name: str) -> None:
    """Make the database a test is done with a spare, or drop it: its other sessions ended (as
    ``DROP DATABASE ... WITH (FORCE)`` would), then, if its schema is none or exactly the
    template's (tables, columns, indexes, constraints, triggers, grants, the version row), its
    rows deleted and its ids started again at 1. Anything else a test changed drops it."""
    template = _template(kind)
    spares: list[str] | None = None
    engine = sa.create_engine(_url_of(kind, name), poolclass=sa.NullPool)
    try:
        with engine.connect() as conn:
            if kind == "postgresql":
                conn.execute(
                    sa.text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE datname = :name AND pid <> pg_backend_pid()"
                    ),
                    {"name": name},
                )
            else:
                sessions = conn.execute(
                    sa.text(
                        "SELECT id FROM information_schema.processlist"
                        " WHERE db = :name AND id <> connection_id()"
                    ),
                    {"name": name},
                ).scalars()
                for session in list(sessions):
                    conn.exec_driver_sql(f"KILL CONNECTION {session}")
            schema = _schema(conn)
            if schema == template.schema:
                _empty_tables(conn, template.tables)
                conn.commit()
                spares = _spares(kind).head
            else:
                spares = _spares(kind).empty if schema == template.none else None
    except sa.exc.DBAPIError:  # the test dropped it, or its server is gone
        spares = None
    finally:
        engine.dispose()
    if spares is None:
        _drop(kind, name)
    else:
        spares.append(name)


def _empty_tables(conn: sa.Connection, tables: list[str]) -> None:
    """Delete every row of ``tables`` (listed parents first) but the version's, children first,
    and start each id again at 1."""
    postgresql = conn.dialect.name == "postgresql"
    for table in reversed(tables):
        if table != VERSION_TABLE:
            conn.exec_driver_sql(f"DELETE FROM {table}")
            if not postgresql:
                conn.exec_driver_sql(f"ALTER TABLE {table} AUTO_INCREMENT = 1")
    if postgresql:
        conn.exec_driver_sql(
            "SELECT setval(oid, 1, false) FROM pg_class"
            " WHERE relkind = 'S' AND relnamespace = 'public'::regnamespace"
        )


#: PostgreSQL's description of a database's schema and what it lets whom do, one line a thing.
_PG_SCHEMA = """
SELECT coalesce(string_agg(line, ' | ' ORDER BY line), '') FROM (
  SELECT concat_ws(' ', 'rel', relname, relkind, relowner::regrole, relacl) AS line
    FROM pg_class WHERE relnamespace = 'public'::regnamespace
  UNION ALL
  SELECT concat_ws(' ', 'col', a.attrelid::regclass, a.attname,
                   format_type(a.atttypid, a.atttypmod), a.attnotnull,
                   pg_get_expr(d.adbin, d.adrelid))
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT concat_ws(' ', 'con', conrelid::regclass, conname, pg_get_constraintdef(oid))
    FROM pg_constraint WHERE connamespace = 'public'::regnamespace
  UNION ALL SELECT concat_ws(' ', 'idx', indexdef) FROM pg_indexes WHERE schemaname = 'public'
  UNION ALL SELECT concat_ws(' ', 'fn', oid::regprocedure) FROM pg_proc
   WHERE pronamespace = 'public'::regnamespace
  UNION ALL SELECT concat_ws(' ', 'trg', tgrelid::regclass, tgname) FROM pg_trigger
   WHERE NOT tgisinternal
  UNION ALL SELECT concat_ws(' ', 'ns', nspname, nspacl) FROM pg_namespace
   WHERE left(nspname, 3) <> 'pg_' AND nspname <> 'information_schema'
  UNION ALL SELECT concat_ws(' ', 'ext', extname) FROM pg_extension
  UNION ALL SELECT concat_ws(' ', 'db', datallowconn, datconnlimit, datacl) FROM pg_database
   WHERE datname = current_database()
  UNION ALL SELECT concat_ws(' ', 'set', setrole, setconfig) FROM pg_db_role_setting
   WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
) AS lines
"""

#: The table Alembic keeps the schema's version in: its row is the template's, not a test's.
VERSION_TABLE = "dbeat_alembic_version"


def _schema(conn: sa.Connection) -> str:
    """The connection's database as the text :func:`_recycle` compares with the template's: its
    schema, grants and settings, and the version row."""
    if conn.dialect.name == "postgresql":
        text = str(conn.exec_driver_sql(_PG_SCHEMA).scalar_one())
    else:
        tables = [row[0] for row in conn.exec_driver_sql("SHOW FULL TABLES")]
        created = (conn.exec_driver_sql(f"SHOW CREATE TABLE `{t}`").one()[1] for t in tables)
        triggers = conn.exec_driver_sql("SHOW TRIGGERS").all()
        routines = conn.exec_driver_sql(
            "SELECT routine_name FROM information_schema.routines WHERE routine_schema = database()"
        ).all()
        # A table's next id is not its schema: the rows are deleted and it starts at 1 again.
        text = "\n".join(re.sub(r" AUTO_INCREMENT=\d+", "", c) for c in created)
        text += f"\n{triggers}\n{routines}"
    if VERSION_TABLE in sa.inspect(conn).get_table_names():
        text += f"\n{conn.exec_driver_sql(f'SELECT * FROM {VERSION_TABLE}').all()}"
    return text


@dataclass(frozen=True)
class _Template:
    """A database migrated to the head (see :func:`install_schema`): its tables, parents first;
    on MariaDB each table's ``CREATE TABLE`` and the tables with rows (the version's); on a
    server, the :func:`_schema` of an empty database and of one at the head."""

    url: sa.URL
    tables: list[str]
    ddl: list[str] = field(default_factory=list)
    filled: list[str] = field(default_factory=list)
    none: str = ""
    schema: str = ""


@functools.cache
def _template(backend: str) -> _Template:
    """This process's template of ``backend``, migrated on first use, dropped by
    :func:`drop_databases`."""
    if backend == "sqlite":
        folder = tempfile.mkdtemp(prefix="dbeat-template-")
        _folders.append(folder)
        url = sa.make_url(f"sqlite:///{folder}/t.db")
    else:
        url = _url_of(backend, _create(backend, "dbeat_template"))
    store = Store(url.render_as_string(hide_password=False), server_clock=False)
    try:
        if backend == "sqlite":
            migrate(store.engine)
            return _Template(url, [])
        with store.engine.connect() as conn:
            none = _schema(conn)
        migrate(store.engine)
        with store.engine.connect() as conn:
            metadata = sa.MetaData()
            metadata.reflect(conn)
            tables = [table.name for table in metadata.sorted_tables]
            schema = _schema(conn)
            if backend == "postgresql":
                return _Template(url, tables, none=none, schema=schema)
            # Foreign keys name tables only, never the database: the DDL runs anywhere.
            ddl = [conn.execute(sa.text(f"SHOW CREATE TABLE `{t}`")).one()[1] for t in tables]
            filled = [t for t in tables if conn.exec_driver_sql(f"SELECT 1 FROM `{t}`").first()]
            return _Template(url, tables, ddl, filled, none, schema)
    finally:
        store.close()


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
