"""Database URLs with TLS parameters reach the driver unchanged, and banners keep them (masked).

``celery_dbeat.store.database.create_engine`` adds its own connect arguments (PostgreSQL's idle
transaction timeout); these tests show that a URL's ``sslmode``/``sslrootcert`` (libpq) and
``ssl_ca``/``ssl_cert``/``ssl_key`` (MySQL drivers) are neither dropped nor rewritten on the way.
The shared test servers run without TLS, so the real-server tests accept either ending: connected
over TLS, or refused by the driver *because* TLS was asked for.
"""

from __future__ import annotations

import ssl
from typing import Any

import celery
import pytest
import sqlalchemy as sa

from celery_dbeat.beat.scheduler import Scheduler
from celery_dbeat.config import mask_url
from celery_dbeat.store.database import create_engine
from tests.services import MYSQL_URL, POSTGRES_URL, unavailable

PG_TLS = {
    "sslmode": "verify-full",
    "sslrootcert": "/etc/ssl/dbeat/ca.pem",
    "sslcert": "/etc/ssl/dbeat/client.pem",
    "sslkey": "/etc/ssl/dbeat/client.key",
}
MYSQL_TLS = {
    "ssl_ca": "/etc/ssl/dbeat/ca.pem",
    "ssl_cert": "/etc/ssl/dbeat/client.pem",
    "ssl_key": "/etc/ssl/dbeat/client.key",
}


def _query(values: dict[str, str]) -> str:
    return "&".join(f"{key}={value}" for key, value in values.items())


class _Captured(Exception):
    """Raised instead of connecting, once the driver's arguments are seen."""


def _connect_arguments(url: str) -> dict[str, Any]:
    """What ``create_engine(url)`` would hand the DBAPI's ``connect()``, without connecting."""
    engine = create_engine(url)
    seen: dict[str, Any] = {}

    @sa.event.listens_for(engine, "do_connect")
    def capture(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> None:
        seen.update(cparams)
        raise _Captured

    try:
        with pytest.raises(_Captured):
            engine.connect()
    finally:
        engine.dispose()
    return seen


def test_libpq_tls_parameters_reach_psycopg_with_dbeats_own_arguments() -> None:
    url = f"postgresql+psycopg://beat:s3cret@db.example:5432/schedules?{_query(PG_TLS)}"

    arguments = _connect_arguments(url)

    assert {key: arguments[key] for key in PG_TLS} == PG_TLS
    assert "idle_in_transaction_session_timeout" in arguments["options"]  # dbeat's, kept too
    assert arguments["password"] == "s3cret"


@pytest.mark.parametrize("scheme", ["mysql+pymysql", "mariadb+pymysql"])
def test_mysql_tls_parameters_reach_pymysql_as_its_ssl_argument(scheme: str) -> None:
    url = f"{scheme}://beat:s3cret@db.example:3306/schedules?{_query(MYSQL_TLS)}"

    arguments = _connect_arguments(url)

    # SQLAlchemy gathers ``ssl_*`` into PyMySQL's ``ssl`` dict; the values are untouched.
    assert arguments["ssl"] == {key.removeprefix("ssl_"): value for key, value in MYSQL_TLS.items()}


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg://beat:s3cret@db.example/schedules?{_query(PG_TLS)}",
        f"mysql+pymysql://beat:s3cret@db.example/schedules?{_query(MYSQL_TLS)}",
    ],
    ids=["postgresql", "mysql"],
)
def test_the_banner_keeps_tls_parameters_and_hides_the_password(url: str) -> None:
    app = celery.Celery("dbeat-tls-banner", set_as_current=False)
    app.conf.dbeat_database_url = url
    app.conf.dbeat_redis_url = "rediss://dbeat:s3cret@redis.example:6380/0?ssl_cert_reqs=required"

    banner = Scheduler(app, lazy=True).info

    assert "s3cret" not in banner
    assert "beat:***@db.example" in banner
    assert url.split("?", 1)[1] in banner
    assert "rediss://dbeat:***@redis.example:6380/0?ssl_cert_reqs=required" in banner
    assert mask_url(url) in banner


def _tls_answer(url: str, sql: str) -> str:
    """Connect with TLS required; the cipher or TLS flag if that worked, else the refusal."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return f"connected: {conn.execute(sa.text(sql)).one()}"
    except sa.exc.OperationalError as exc:
        return f"refused: {exc.orig}"
    finally:
        engine.dispose()


def _reachable(url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.connect():
            pass
    except sa.exc.OperationalError as exc:
        unavailable("database", mask_url(url), exc.orig)
    finally:
        engine.dispose()


def test_a_real_postgresql_is_asked_for_tls_when_the_url_says_so() -> None:
    _reachable(POSTGRES_URL)
    separator = "&" if "?" in POSTGRES_URL else "?"

    answer = _tls_answer(
        f"{POSTGRES_URL}{separator}sslmode=require",
        "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
    )

    assert answer == "connected: (True,)" or "SSL" in answer, answer


def test_a_real_mysql_is_asked_for_tls_when_the_url_says_so() -> None:
    _reachable(MYSQL_URL)
    ca = ssl.get_default_verify_paths().cafile  # PyMySQL loads it before it talks to the server
    if ca is None:
        pytest.skip("no system CA bundle to name in ssl_ca")
    url = sa.make_url(MYSQL_URL).difference_update_query(["ssl_disabled"])
    url = url.update_query_dict({"ssl_ca": ca})

    answer = _tls_answer(
        url.render_as_string(hide_password=False), "SHOW SESSION STATUS LIKE 'Ssl_version'"
    )

    assert answer.startswith("connected: ('Ssl_version', 'TLS") or "SSL" in answer, answer
