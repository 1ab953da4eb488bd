"""What a database error means to beat, decided in one place.

* a **conflict** (deadlock, serialisation failure, lock wait timeout): another transaction won;
  nothing is wrong, and trying again shortly is the answer;
* lost **connectivity** (refused, reset, timed out, the server shut down or ended the session, the
  pool waited in vain): an outage, retried with backoff and reported as "unreachable";
* a **refusal** of one write (a constraint violated, a value the database or its driver will not
  take): the fault of one schedule's data, which is set aside with the error while every other
  schedule goes on;
* a refused **login** (:func:`is_auth_failure`: wrong credentials, missing rights): a
  configuration error that stops beat at start-up and is reported as such while it runs;
* anything else (a server error that is none of these, such as a full disk): the tick failed;
  it is retried, and reported as what it is, never as "unreachable".

PostgreSQL errors are told apart by SQLSTATE, MySQL/MariaDB errors by their error number,
SQLite's by its result code (a busy or locked database is a conflict; only a file that cannot be
opened is lost connectivity: a full disk, an I/O error or a read-only file are not).
"""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa

__all__ = [
    "BAD_URL",
    "DATABASE_ERRORS",
    "DRIVER_ERRORS",
    "SQL_ERRORS",
    "driver_message",
    "is_auth_failure",
    "is_conflict",
    "is_disconnect",
    "is_refusal",
]

#: What a database operation raises when it fails: the driver's error (a ``DBAPIError``), a value
#: the driver could not convert (a ``StatementError``), no connection from the pool in time. The
#: functions below tell their kinds apart.
DATABASE_ERRORS: tuple[type[Exception], ...] = (sa.exc.StatementError, sa.exc.TimeoutError)
#: Of those, the ones the database or the pool answered with (not a value the driver refused).
DRIVER_ERRORS: tuple[type[Exception], ...] = (sa.exc.DBAPIError, sa.exc.TimeoutError)
#: Anything SQLAlchemy raises.
SQL_ERRORS = sa.exc.SQLAlchemyError
#: What :func:`.engine.create_engine` (and so :class:`.database.Store`) raises for a URL that
#: cannot work, with a message that says what to write instead.
BAD_URL = sa.exc.ArgumentError

#: Deadlock and serialisation failures (PostgreSQL SQLSTATE, MySQL/MariaDB error numbers).
_CONFLICT_SQLSTATES = {"40001", "40P01"}
_CONFLICT_MYSQL_ERRORS = {1205, 1213}
#: PostgreSQL: class 08 (connection exception), and the server shutting down or starting up.
_DISCONNECT_SQLSTATE_CLASS = "08"
_DISCONNECT_SQLSTATES = {"57P01", "57P02", "57P03"}
#: MySQL/MariaDB server errors that mean the session is gone (too many connections, shutdown,
#: killed, idle timeout); client errors (2000 and up: cannot connect, server gone away, lost
#: connection) all do.
_DISCONNECT_MYSQL_ERRORS = {1040, 1053, 1927, 4031}
_MYSQL_CLIENT_ERRORS = 2000
#: SQLite primary result codes: SQLITE_BUSY and SQLITE_LOCKED (another connection holds the
#: lock), SQLITE_CANTOPEN (the file cannot be opened).
_SQLITE_CONFLICTS = {5, 6}
_SQLITE_CANTOPEN = 14
#: Python before 3.11 gives no result code: SQLite's own messages for those codes.
_SQLITE_MESSAGES = {
    "database is locked": 5,
    "database table is locked": 6,
    "unable to open database file": _SQLITE_CANTOPEN,
}


def _sqlstate(exc: BaseException) -> str | None:
    state = getattr(getattr(exc, "orig", None), "sqlstate", None)
    return state if isinstance(state, str) else None


def _mysql_errno(exc: BaseException) -> int | None:
    args: tuple[Any, ...] = getattr(getattr(exc, "orig", None), "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _sqlite_error(exc: BaseException) -> BaseException | None:
    """The driver's error under ``exc`` if it is SQLite's."""
    orig = getattr(exc, "orig", None)
    return orig if type(orig).__module__ == "sqlite3" else None


def _sqlite_code(exc: BaseException) -> int | None:
    """SQLite's primary result code of ``exc`` (``None``: not an error of SQLite's, or one
    without a code before Python 3.11 whose message is not one of :data:`_SQLITE_MESSAGES`)."""
    orig = _sqlite_error(exc)
    if orig is None:
        return None
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF  # the primary code of an extended one
    return _SQLITE_MESSAGES.get(str(orig))


def is_conflict(exc: BaseException) -> bool:
    """A transaction lost to another (deadlock, serialisation failure, lock wait timeout; a
    SQLite database another connection holds locked)."""
    return (
        _sqlstate(exc) in _CONFLICT_SQLSTATES
        or _mysql_errno(exc) in _CONFLICT_MYSQL_ERRORS
        or _sqlite_code(exc) in _SQLITE_CONFLICTS
    )


def is_disconnect(exc: BaseException) -> bool:
    """Lost connectivity: the database cannot be reached or ended the session."""
    if isinstance(exc, sa.exc.TimeoutError):  # no connection from the pool in time
        return True
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    if exc.connection_invalidated:  # SQLAlchemy's dialect recognised a disconnect
        return True
    if not isinstance(exc, (sa.exc.OperationalError, sa.exc.InterfaceError)):
        return False
    if is_conflict(exc) or is_auth_failure(exc):
        return False
    state = _sqlstate(exc)
    if state is not None:
        return state.startswith(_DISCONNECT_SQLSTATE_CLASS) or state in _DISCONNECT_SQLSTATES
    errno = _mysql_errno(exc)
    if errno is not None:
        return errno >= _MYSQL_CLIENT_ERRORS or errno in _DISCONNECT_MYSQL_ERRORS
    if _sqlite_error(exc) is not None:
        return _sqlite_code(exc) == _SQLITE_CANTOPEN
    # No code: psycopg's "connection failed".
    return True


def is_refusal(exc: BaseException) -> bool:
    """One write refused for what it writes: a constraint violated, or a value the database
    (``DataError``) or the driver's own conversion (``StatementError`` around a ``ValueError``)
    would not take. Setting that one schedule aside lets the others go on."""
    if isinstance(exc, (sa.exc.IntegrityError, sa.exc.DataError)):
        return True
    return (
        isinstance(exc, sa.exc.StatementError)
        and not isinstance(exc, sa.exc.DBAPIError)
        and isinstance(exc.orig, (ValueError, OverflowError, TypeError))
    )


#: Authentication and authorisation failures: the server answered, and said no. PostgreSQL: class
#: 28 (a wrong password, an unknown role, no pg_hba.conf entry) and 42501 (insufficient privilege);
#: MySQL/MariaDB: access denied (to the server, a database, a table or a privilege), an account
#: locked or whose password expired, an authentication method the client cannot speak.
_AUTH_SQLSTATES = {"28000", "28P01", "42501"}
_AUTH_MYSQL_ERRORS = {1044, 1045, 1130, 1142, 1143, 1227, 1251, 1698, 1820, 1862, 2059, 3118, 4151}
#: libpq reports a failed connection without its SQLSTATE (psycopg's ``sqlstate`` is ``None``
#: then): the server's message is all there is. These are PostgreSQL's own (English) texts for
#: the SQLSTATEs above, and libpq's for a password it was not given.
_PG_AUTH_MESSAGES = re.compile(
    r"authentication failed for user"
    r"|no pg_hba\.conf entry"
    r'|role ".*" (?:does not exist|is not permitted to log in)'
    r"|permission denied for"
    r"|no password supplied"
)


def is_auth_failure(exc: BaseException) -> bool:
    """The database refused these credentials or this user's rights (a wrong password, an
    unknown user, an account without the grants celery-dbeat needs): a configuration error that
    retrying does not fix, unlike an outage. ``exc``: SQLAlchemy's error or the driver's own."""
    orig = getattr(exc, "orig", None) or exc
    args: tuple[Any, ...] = getattr(orig, "args", ())
    if args and isinstance(args[0], int):  # MySQL drivers: (error number, message)
        # Not their SQLSTATE: MySQL gives most refusals the catch-all 42000.
        return args[0] in _AUTH_MYSQL_ERRORS
    sqlstate = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if sqlstate is not None:
        return sqlstate in _AUTH_SQLSTATES
    module = type(orig).__module__
    return module.startswith("psycopg") and bool(_PG_AUTH_MESSAGES.search(str(orig)))


def driver_message(exc: BaseException) -> str:
    """The driver's own message, first line only: no SQL, no parameters, no SQLAlchemy link."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines[0].split()) if lines else type(orig or exc).__name__
