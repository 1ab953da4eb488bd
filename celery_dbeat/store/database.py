"""Connecting to the schedule database, keeping its schema at the version the code knows, and
:class:`Store`: a database as beat uses it.

Engines get the per-backend settings the exactly-once design relies on: SQLite serialises writers
with ``BEGIN IMMEDIATE`` and WAL; MySQL/MariaDB read committed rows; PostgreSQL ends a transaction
left idle by a paused beat so its row locks cannot block other beats for ever. A URL that cannot
work (a scheme SQLAlchemy does not know, a driver that is not installed, a password that would be
cut in two) is refused before any connection, saying which URL to write and what to install.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine

from ..config import default_database_dir
from ..core.errors import DBeatError, SchemaVersionError
from ..core.fires import PublishRequest
from . import beats, due, fires, queue, urls
from .clock import DatabaseClock
from .due import DueBatch, Peek
from .failures import driver_message, is_auth_failure, is_conflict

__all__ = [
    "VERSION_TABLE",
    "Store",
    "check_schema",
    "create_engine",
    "database_findings",
    "driver_message",
    "is_auth_failure",
    "is_conflict",
    "migrate",
    "migrate_command",
]

VERSION_TABLE = "dbeat_alembic_version"
MIGRATIONS = Path(__file__).parent / "migrations"
#: PostgreSQL ends a transaction idle for this long (a SIGSTOPped beat's), releasing its locks.
IDLE_IN_TRANSACTION = timedelta(seconds=30)
#: MySQL/MariaDB lock names are server-wide: one per database, so that migrations of other
#: databases on the same server do not wait on each other.
_MYSQL_LOCK_NAME = "CONCAT('celery_dbeat_migrate_', MD5(DATABASE()))"
_PG_LOCK_KEY = 0x64626561  # "dbea"


def create_engine(
    url: str | sa.URL,
    options: Mapping[str, Any] | None = None,
    *,
    idle_in_transaction: timedelta = IDLE_IN_TRANSACTION,
) -> Engine:
    """An engine for ``url`` set up as celery-dbeat needs it; ``options`` go to SQLAlchemy.

    On PostgreSQL a transaction left idle longer than ``idle_in_transaction`` (a paused beat's)
    is ended by the server, releasing its row locks and voiding what it would have recorded;
    statements are not prepared on the server (psycopg 3), so each is planned for its values.

    Raises :class:`sqlalchemy.exc.ArgumentError` for a URL that cannot work, with a message
    that says which URL to write (the password masked) and which extra to install; the caller
    names the setting it came from.
    """
    url = urls.read_url(url)
    kwargs: dict[str, Any] = {}
    backend = url.get_backend_name()
    if backend == "sqlite":
        kwargs["connect_args"] = {"timeout": 30}
        if url.database and Path(url.database).parent == default_database_dir():
            # The default file's folder is ours to make (a folder the user named is not).
            default_database_dir().mkdir(parents=True, exist_ok=True)
    else:
        kwargs["pool_pre_ping"] = True
    if backend == "postgresql" and url.get_driver_name() in ("psycopg", "psycopg2"):
        kwargs["connect_args"] = {
            "options": "-c idle_in_transaction_session_timeout="
            f"{int(idle_in_transaction.total_seconds() * 1000)}"
        }
        if url.get_driver_name() == "psycopg":
            # psycopg 3 prepares a statement run five times, and the server may then plan it
            # once for any parameters: an IN list of 1,000 names was then compared one by one
            # with every row (a re-sync of 100,000 unchanged entries took 290 s, not 10 s).
            kwargs["connect_args"]["prepare_threshold"] = None
    if backend in ("mysql", "mariadb"):
        kwargs["isolation_level"] = "READ COMMITTED"
    kwargs.update(options or {})
    try:
        engine = sa.create_engine(url, **kwargs)
    except sa.exc.NoSuchModuleError:
        raise sa.exc.ArgumentError(urls.unknown_scheme(url)) from None
    except ImportError as exc:  # the dialect's driver module
        raise sa.exc.ArgumentError(urls.missing_driver(url, exc)) from None
    if backend == "sqlite":
        _serialise_sqlite_writers(engine)
    return engine


def _serialise_sqlite_writers(engine: Engine) -> None:
    # pysqlite's own transaction handling would start transactions lazily and let two beats read,
    # then both try to write (SQLITE_BUSY). Take the write lock when the transaction begins.
    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        if engine.url.database not in (None, "", ":memory:"):
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def _head() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def _current(connection: Connection) -> str | None:
    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    return context.get_current_revision()


def _known(revision: str) -> bool:
    script = ScriptDirectory.from_config(_config())
    try:
        return script.get_revision(revision) is not None
    except Exception:
        return False


def migrate_command(app: str | None = None) -> str:
    """The command that creates or upgrades the tables, for the Celery app ``app`` (as given to
    ``-A``); without one, a placeholder that says what to put there."""
    return f"`celery -A {app or '<your Celery app>'} dbeat migrate`"


def check_schema(engine: Engine, app: str | None = None) -> str:
    """Raise :class:`SchemaVersionError` unless the schema is at this version's head; its
    message names ``app`` (:func:`migrate_command`)."""
    with engine.connect() as connection:
        current = _current(connection)
    head = _head()
    if current == head:
        return current
    if current is None:
        raise SchemaVersionError(
            f"the celery-dbeat tables are not installed; run {migrate_command(app)} "
            "or set dbeat_auto_migrate=True"
        )
    if not _known(current):
        raise SchemaVersionError(
            f"the database schema is at revision {current!r}, which this celery-dbeat does not "
            "know (it was written by a newer version); upgrade celery-dbeat"
        )
    raise SchemaVersionError(
        f"the database schema is at revision {current!r}, older than {head!r}; run "
        f"{migrate_command(app)} or set dbeat_auto_migrate=True"
    )


_MIGRATION_WAIT_S = 120


@contextmanager
def _migration(engine: Engine) -> Iterator[Connection]:
    """A transaction that holds the migration lock until it has committed.

    Several beats starting at once migrate one after another. On MySQL/MariaDB the lock is a
    session's ``GET_LOCK``, released only after the transaction commits: released before, the
    next beat would read the version row still uncommitted and run the last migration again.
    The lock is named after the database, as PostgreSQL's advisory locks are scoped to it.
    """
    with engine.connect() as connection:
        backend = connection.dialect.name
        if backend in ("mysql", "mariadb"):
            got = connection.execute(
                sa.text(f"SELECT GET_LOCK({_MYSQL_LOCK_NAME}, :s)"), {"s": _MIGRATION_WAIT_S}
            ).scalar()
            connection.commit()
            if got != 1:
                raise DBeatError(
                    f"another process held this database's migration lock for over "
                    f"{_MIGRATION_WAIT_S} s; look for a migration still running, then retry"
                )
            try:
                with connection.begin():
                    yield connection
            finally:
                connection.execute(sa.text(f"SELECT RELEASE_LOCK({_MYSQL_LOCK_NAME})"))
                connection.commit()
        else:
            with connection.begin():
                if backend == "postgresql":  # released as the transaction ends
                    connection.execute(
                        sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY}
                    )
                # SQLite: the engine's BEGIN IMMEDIATE already holds the database's write lock.
                yield connection


def migrate(engine: Engine, revision: str = "head") -> str:
    """Upgrade the schema to ``revision`` (default: the newest). Safe to call from many processes.

    Refuses a database whose schema is newer than this version of celery-dbeat.
    """
    with _migration(engine) as connection:
        current = _current(connection)
        if current is not None and not _known(current):
            raise SchemaVersionError(
                f"the database schema is at revision {current!r}, which this celery-dbeat "
                "does not know (it was written by a newer version); upgrade celery-dbeat"
            )
        if revision == "head" and current == _head():
            return current
        command.upgrade(_config(connection), revision)
        new = _current(connection)
    assert new is not None
    return new


def database_findings(engine: Engine) -> list[tuple[str, str]]:
    """``(level, message)`` pairs about server settings that could corrupt stored instants."""
    backend = engine.dialect.name
    found: list[tuple[str, str]] = []
    with engine.connect() as conn:
        if backend in ("mysql", "mariadb"):
            mode = str(conn.execute(sa.text("SELECT @@SESSION.sql_mode")).scalar_one() or "")
            if "STRICT_TRANS_TABLES" not in mode and "STRICT_ALL_TABLES" not in mode:
                found.append(
                    (
                        "warning",
                        f"sql_mode {mode!r} is not strict: MySQL/MariaDB would silently truncate "
                        "a bad value instead of refusing it; add STRICT_TRANS_TABLES",
                    )
                )
        elif backend == "sqlite":
            journal = str(conn.execute(sa.text("PRAGMA journal_mode")).scalar_one())
            if journal.lower() != "wal":
                found.append(
                    (
                        "warning",
                        f"journal_mode is {journal!r}, not WAL: beats on this SQLite file block "
                        "each other's reads while one writes",
                    )
                )
    if not found:
        storage = _STORAGE.get(backend, "?")
        found.append(("ok", f"{backend}: instants stored as UTC ({storage})"))
    return found


_STORAGE = {
    "postgresql": "timestamptz",
    "mysql": "DATETIME(6), naive UTC",
    "mariadb": "DATETIME(6), naive UTC",
    "sqlite": "text, naive UTC",
}


class Store:
    """A schedule database as beat uses it: an engine, the clock leases are taken on, and beat's
    operations (:mod:`.due`, :mod:`.fires`, :mod:`.beats`). Accepts an ``Engine`` (left open) or
    a URL (owned, closed by :meth:`close`)."""

    def __init__(
        self,
        engine: Engine | str,
        *,
        engine_options: dict[str, Any] | None = None,
        idle_in_transaction: timedelta = IDLE_IN_TRANSACTION,
        server_clock: bool = True,
    ):
        if isinstance(engine, Engine):
            self.engine, self._owns_engine = engine, False
        else:
            self.engine = create_engine(
                engine, engine_options, idle_in_transaction=idle_in_transaction
            )
            self._owns_engine = True
        #: The clock leases and writes are taken on (:mod:`.clock`); ``server_clock=False``
        #: turns the database server's off, for tests that move a fake clock past leases.
        self.clock = DatabaseClock(self.engine.dialect.name, enabled=server_clock)

    def close(self) -> None:
        if self._owns_engine:
            self.engine.dispose()

    def peek(self) -> Peek:
        """:func:`.due.peek`: when the earliest schedule is due, and the database clock."""
        return due.peek(self.engine, self.clock)

    def claim_due(
        self, now: datetime, limit: int, beat: str, late_since: datetime | None = None
    ) -> AbstractContextManager[DueBatch]:
        """:func:`.due.claim_due`: up to ``limit`` due schedules, locked in a transaction, those
        due since ``late_since`` first."""
        return due.claim_due(self.engine, self.clock, now, limit, beat, late_since)

    def heartbeat(self, beat: Mapping[str, Any], now: datetime) -> list[tuple[datetime, datetime]]:
        """:func:`.beats.heartbeat`: write this beat's row; every beat's running stretch."""
        return beats.heartbeat(self.engine, beat, now)

    def forget_beat(self, name: str) -> None:
        beats.forget_beat(self.engine, name)

    def mark_sent(self, task_ids: Sequence[str], now: datetime, beat: str) -> list[str]:
        """:func:`.fires.mark_sent`; the names of the schedules set aside."""
        return fires.mark_sent(self.engine, task_ids, now, beat)

    def mark_publish_failed(
        self, task_id: str, error: str, retry_at: datetime, *, give_up: bool
    ) -> list[str]:
        """:func:`.fires.mark_publish_failed`; the names of the schedules set aside."""
        return fires.mark_publish_failed(self.engine, task_id, error, retry_at, give_up=give_up)

    def claim_stale_pending(
        self, now: datetime, lease_until: datetime, limit: int
    ) -> list[PublishRequest]:
        """:func:`.fires.claim_stale_pending`: take over fires their beat did not publish."""
        return fires.claim_stale_pending(self.engine, self.clock, now, lease_until, limit)

    def claim_queued(
        self, now: datetime, lease_until: datetime, limit: int, beat: str
    ) -> list[PublishRequest]:
        """:func:`.queue.claim_queued`: lease queued slots (catch-up, backfill) to publish."""
        return queue.claim_queued(self.engine, self.clock, now, lease_until, limit, beat)

    def extend_leases(
        self, task_ids: Sequence[str], held_until: datetime, now: datetime, lease_until: datetime
    ) -> tuple[set[str], datetime]:
        """:func:`.fires.extend_leases`: keep fires this beat is still publishing."""
        return fires.extend_leases(self.engine, self.clock, task_ids, held_until, now, lease_until)
