"""Database URLs that cannot work, and what to write instead: a scheme SQLAlchemy has no dialect
for (``postgres://``), a driver that is not installed (``mysql://`` means mysqlclient), a
password that the URL cuts in two. Each answer is one sentence naming the URL to write (its
password masked) and the extra that installs the driver; :func:`.database.create_engine` raises
it, and the caller names the setting the URL came from.
"""

from __future__ import annotations

import sqlalchemy as sa

from ..core.urls import CUT_PASSWORD, cuts_password

__all__ = ["missing_driver", "read_url", "unknown_scheme"]

#: What to write when SQLAlchemy cannot read a URL at all. Its own message is not shown: it may
#: quote a part of the password (a port ``99@host`` of a password cut at an '@').
_UNREADABLE = (
    "SQLAlchemy cannot read it as a URL (is its port a number?); write "
    "dialect+driver://user:password@host:port/database, with any '@', '/', '?' or '#' in the "
    "password percent-encoded (urllib.parse.quote(password, safe=''))"
)


def read_url(url: str | sa.URL) -> sa.URL:
    """``url`` as SQLAlchemy reads it; :class:`sqlalchemy.exc.ArgumentError` (a message showing
    no part of the password) for one whose password it would cut in two at an '@', and for one
    it cannot read."""
    if isinstance(url, sa.URL):
        # Built from its parts: only its host can show that a password was cut.
        if url.host and "@" in url.host:
            raise sa.exc.ArgumentError(CUT_PASSWORD)
        return url
    if cuts_password(url):
        # SQLAlchemy ends the password at its first '@': the rest of it would be taken for the
        # host or the port, and shown in the driver's "cannot resolve host" on every retry.
        raise sa.exc.ArgumentError(CUT_PASSWORD)
    try:
        parsed = sa.make_url(url)
    except ValueError:  # a port that is not a number
        raise sa.exc.ArgumentError(_UNREADABLE) from None
    return read_url(parsed)


#: The URL celery-dbeat is tested with for each backend, the extra that installs its driver, and
#: the driver's name.
_DRIVERS = {
    "postgresql": ("postgresql+psycopg", "postgres", "psycopg 3"),
    "mysql": ("mysql+pymysql", "mysql", "PyMySQL"),
    "mariadb": ("mariadb+pymysql", "mysql", "PyMySQL"),
}
#: Schemes people write that SQLAlchemy does not know, and the backend they mean.
_MEANT = {
    "postgres": "postgresql",
    "postgresql": "postgresql",
    "psql": "postgresql",
    "pg": "postgresql",
    "pgsql": "postgresql",
    "mysql": "mysql",
    "mariadb": "mariadb",
    "sqlite": "sqlite",
    "sqlite3": "sqlite",
}
_SUPPORTED = (
    "celery-dbeat works with postgresql+psycopg://, mysql+pymysql:// (or mariadb+pymysql://) "
    "and sqlite:///PATH URLs"
)


def _written(url: sa.URL, drivername: str) -> str:
    return url.set(drivername=drivername).render_as_string(hide_password=True)


def _install(backend: str) -> str:
    _, extra, driver = _DRIVERS[backend]
    return f"{driver}: pip install 'celery-dbeat[{extra}]'"


def unknown_scheme(url: sa.URL) -> str:
    """What to write instead of a scheme SQLAlchemy has no dialect or driver for."""
    meant = _MEANT.get(url.get_backend_name().lower())
    if meant == "sqlite":
        return f"SQLAlchemy has no {url.drivername!r} dialect; write {_written(url, 'sqlite')}"
    if meant is None:
        return f"SQLAlchemy has no {url.drivername!r} dialect; {_SUPPORTED}"
    return (
        f"SQLAlchemy has no {url.drivername!r} dialect; write "
        f"{_written(url, _DRIVERS[meant][0])} ({_install(meant)})"
    )


def missing_driver(url: sa.URL, exc: ImportError) -> str:
    """What to install (or write) when the dialect's driver module cannot be imported."""
    module = exc.name or url.get_driver_name()
    backend = url.get_backend_name()
    if backend not in _DRIVERS:
        return f"its driver {module} cannot be imported ({exc}); install it, or {_SUPPORTED}"
    drivername = _DRIVERS[backend][0]
    if url.drivername == drivername:
        return f"its driver {module} cannot be imported ({exc}): {_install(backend)}"
    # A driver chosen by name may be the one wanted; SQLAlchemy's default (mysql:// means
    # mysqlclient) rarely is.
    chosen = f", or install {module}" if "+" in url.drivername else ""
    return (
        f"its driver {module} (SQLAlchemy's for {url.drivername}://) is not installed; write "
        f"{_written(url, drivername)} ({_install(backend)}){chosen}"
    )
