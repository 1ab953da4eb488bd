"""What a database error means to beat (celery_dbeat/store/failures.py): a conflict is retried at
once, lost connectivity is an outage, a refused write sets one schedule aside, and anything else
is a failed tick, never reported as "unreachable"."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from celery_dbeat.store.failures import driver_message, is_conflict, is_disconnect, is_refusal


class PostgresError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__("server said no")
        self.sqlstate = sqlstate


def operational(orig: Exception) -> sa.exc.DBAPIError:
    return sa.exc.OperationalError("UPDATE ...", {}, orig)


@pytest.mark.parametrize(
    ("orig", "conflict"),
    [
        (PostgresError("40P01"), True),  # deadlock detected
        (PostgresError("40001"), True),  # serialization failure
        (PostgresError("57P01"), False),  # admin shutdown: an outage, not a conflict
        (Exception(1213, "Deadlock found"), True),  # MySQL/MariaDB
        (Exception(1205, "Lock wait timeout exceeded"), True),
        (Exception(2013, "Lost connection to server"), False),
        (Exception("no code at all"), False),
    ],
)
def test_deadlocks_and_serialisation_failures_are_conflicts_and_nothing_else(
    orig: Exception, conflict: bool
) -> None:
    assert is_conflict(operational(orig)) is conflict


@pytest.mark.parametrize(
    ("error", "disconnect"),
    [
        pytest.param(operational(PostgresError("08006")), True, id="pg-connection-failure"),
        pytest.param(operational(PostgresError("08001")), True, id="pg-cannot-connect"),
        pytest.param(operational(PostgresError("57P01")), True, id="pg-admin-shutdown"),
        pytest.param(operational(PostgresError("57P03")), True, id="pg-starting-up"),
        pytest.param(operational(Exception("connection failed: refused")), True, id="no-code"),
        pytest.param(
            operational(Exception(2003, "Can't connect")), True, id="mysql-cannot-connect"
        ),
        pytest.param(operational(Exception(2006, "gone away")), True, id="mysql-gone-away"),
        pytest.param(operational(Exception(1053, "Server shutdown")), True, id="mysql-shutdown"),
        pytest.param(sa.exc.TimeoutError("QueuePool limit"), True, id="pool-timeout"),
        pytest.param(operational(PostgresError("40P01")), False, id="pg-deadlock"),
        pytest.param(operational(PostgresError("57014")), False, id="pg-statement-timeout"),
        pytest.param(operational(PostgresError("53100")), False, id="pg-disk-full"),
        pytest.param(operational(PostgresError("28P01")), False, id="pg-bad-password"),
        pytest.param(operational(Exception(1045, "Access denied")), False, id="mysql-denied"),
        pytest.param(operational(Exception(1205, "Lock wait")), False, id="mysql-lock-wait"),
        pytest.param(
            sa.exc.IntegrityError("INSERT ...", {}, PostgresError("23505")), False, id="unique"
        ),
        pytest.param(
            sa.exc.InternalError("SELECT ...", {}, PostgresError("P0001")), False, id="raised"
        ),
    ],
)
def test_only_lost_connectivity_is_an_outage(error: Exception, disconnect: bool) -> None:
    assert is_disconnect(error) is disconnect


def test_an_error_sqlalchemy_recognised_as_a_disconnect_is_one_whatever_its_code() -> None:
    error = operational(PostgresError("XX000"))
    error.connection_invalidated = True
    assert is_disconnect(error)


@pytest.mark.parametrize(
    ("error", "refusal"),
    [
        pytest.param(
            sa.exc.IntegrityError("INSERT ...", {}, PostgresError("23505")), True, id="constraint"
        ),
        pytest.param(
            sa.exc.DataError("INSERT ...", {}, PostgresError("22008")), True, id="value-refused"
        ),
        pytest.param(
            sa.exc.StatementError("bind", "INSERT ...", {}, OverflowError("date too big")),
            True,
            id="value-not-converted",
        ),
        pytest.param(operational(PostgresError("08006")), False, id="connectivity"),
        pytest.param(operational(PostgresError("40P01")), False, id="deadlock"),
        pytest.param(
            sa.exc.ProgrammingError("SELECT ...", {}, PostgresError("42P01")), False, id="bad-sql"
        ),
        pytest.param(
            sa.exc.StatementError("bind", "INSERT ...", {}, KeyError("x")), False, id="a-bug"
        ),
    ],
)
def test_a_refused_write_is_a_constraint_or_a_value_and_nothing_else(
    error: Exception, refusal: bool
) -> None:
    assert is_refusal(error) is refusal


def test_the_reason_is_the_drivers_first_line_without_sql_or_parameters() -> None:
    orig = Exception('duplicate key value violates unique constraint "ix"\nDETAIL: Key (x)=(1)')
    error = sa.exc.IntegrityError("INSERT INTO secret ...", {"password": "p"}, orig)
    assert driver_message(error) == 'duplicate key value violates unique constraint "ix"'


def _sqlite_error(tmp_path: Path, case: str) -> sqlite3.Error:
    """A real error of SQLite's, as its driver raises it."""
    path = tmp_path / "db.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as setup:
        setup.execute("CREATE TABLE t (x TEXT)")
        setup.commit()
    statements: dict[str, Callable[[], object]] = {
        "locked": lambda: sqlite3.connect(path, timeout=0).execute("INSERT INTO t VALUES ('a')"),
        "cannot-open": lambda: sqlite3.connect(tmp_path / "no such folder" / "db.sqlite3"),
        "read-only": lambda: sqlite3.connect(f"file:{path}?mode=ro", uri=True).execute(
            "INSERT INTO t VALUES ('a')"
        ),
        "full": lambda: _fill(sqlite3.connect(path)),
    }
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as holder:
        if case == "locked":
            holder.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
        with pytest.raises(sqlite3.Error) as raised:
            statements[case]()
    return raised.value


def _fill(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA max_page_count = 2")
    conn.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))


@pytest.mark.parametrize(
    ("case", "conflict", "disconnect"),
    [
        pytest.param("locked", True, False, id="database-is-locked"),
        pytest.param("cannot-open", False, True, id="unable-to-open"),
        pytest.param("read-only", False, False, id="readonly-database"),
        pytest.param("full", False, False, id="database-or-disk-is-full"),
    ],
)
def test_sqlite_a_locked_database_is_a_conflict_and_only_a_file_it_cannot_open_an_outage(
    tmp_path: Path, case: str, conflict: bool, disconnect: bool
) -> None:
    """Before, every SQLite error without a SQLSTATE was "unreachable": a full disk too."""
    error = operational(_sqlite_error(tmp_path, case))
    assert is_conflict(error) is conflict
    assert is_disconnect(error) is disconnect
