"""Connecting to the schedule database: engines with the per-backend settings the exactly-once
design relies on, whether claims skip locked rows (:func:`skips_locked`), and the server settings
that would defeat it (:func:`database_findings`). SQLite serialises writers with ``BEGIN
IMMEDIATE`` and WAL; MySQL/MariaDB read committed rows; PostgreSQL ends a transaction left idle
by a paused beat so its row locks cannot block other beats for ever.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ..config import default_database_dir
from . import urls

__all__ = ["IDLE_IN_TRANSACTION", "create_engine", "database_findings", "skips_locked"]

#: PostgreSQL ends a transaction idle for this long (a SIGSTOPped beat's), releasing its locks.
IDLE_IN_TRANSACTION = timedelta(seconds=30)


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


def skips_locked(engine: Engine) -> bool:
    """Whether claims lock rows ``FOR UPDATE SKIP LOCKED``: beats then split a herd instead of
    queueing on each other's rows. SQLite has no row locks; BEGIN IMMEDIATE serialises its
    writers instead."""
    return engine.dialect.name in ("postgresql", "mysql", "mariadb")


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
