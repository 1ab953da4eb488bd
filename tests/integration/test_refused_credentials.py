"""A server that refuses celery-dbeat's credentials or rights is told apart from one that is down.

``is_auth_failure`` (databases) and ``is_refused`` (Redis) classify what real servers answer: a
throwaway PostgreSQL role, MariaDB user or Redis ACL user is made for each test and dropped after
it. The shared PostgreSQL trusts every login, so a wrong password (SQLSTATE 28P01) is asked of a
private cluster that wants one. ``dbeat check`` fails on refused Redis credentials, and only warns
about a Redis that is down (beats ride that out through the database).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from celery_dbeat.checks import Level, redis_findings
from celery_dbeat.config import Settings
from celery_dbeat.redis_client import UNAVAILABLE, create_client, is_refused
from celery_dbeat.store.database import create_engine, is_auth_failure, migrate
from tests.integration.cli.conftest import Cli, make_app, migrated
from tests.services import (
    POSTGRES_URL,
    free_port,
    mysql_user,
    pg_role,
    private_database,
    redis_acl_user,
    unavailable,
    unique_name,
)


def failure(url: str, *, migrating: bool = False) -> Exception:
    """What SQLAlchemy raises connecting to ``url`` (or creating the tables there)."""
    engine = create_engine(url, {"connect_args": {"connect_timeout": 5}})
    try:
        if migrating:
            migrate(engine)
        else:
            with engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
    except sa.exc.DBAPIError as exc:
        return exc
    finally:
        engine.dispose()
    raise AssertionError(f"{url} accepted the login")


def as_user(url: str, user: str, password: str | None = None) -> str:
    return (
        sa.make_url(url).set(username=user, password=password).render_as_string(hide_password=False)
    )


# PostgreSQL -------------------------------------------------------------------------------------


@pytest.fixture
def pg_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with private_database("postgresql", tmp_path_factory) as url:
        yield url


def test_postgresql_refusing_an_unknown_role_is_an_auth_failure(pg_database: str) -> None:
    exc = failure(as_user(pg_database, unique_name("nobody")))

    assert "does not exist" in str(exc)
    assert is_auth_failure(exc)


def test_postgresql_refusing_a_role_without_login_is_an_auth_failure(pg_database: str) -> None:
    with pg_role("NOLOGIN") as role:
        exc = failure(as_user(pg_database, role))

    assert "is not permitted to log in" in str(exc)
    assert is_auth_failure(exc)


def test_postgresql_refusing_a_role_the_database_is_not_granted_to_is_an_auth_failure(
    pg_database: str,
) -> None:
    database = sa.make_url(pg_database).database
    with pg_role("LOGIN") as role:
        admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f"REVOKE CONNECT ON DATABASE {database} FROM PUBLIC"))
        admin.dispose()
        exc = failure(as_user(pg_database, role))

    assert "permission denied for database" in str(exc)
    assert is_auth_failure(exc)


def test_postgresql_refusing_to_create_the_tables_is_an_auth_failure(pg_database: str) -> None:
    # PostgreSQL 15+ lets no one but the owner create tables in the public schema.
    with pg_role("LOGIN") as role:
        exc = failure(as_user(pg_database, role), migrating=True)

    assert getattr(exc.__cause__, "sqlstate", None) == "42501"  # insufficient_privilege
    assert is_auth_failure(exc)


def test_a_wrong_postgresql_password_is_an_auth_failure() -> None:
    from tests.chaos.services import PostgresCluster, ServiceMissing

    try:
        cluster = PostgresCluster()
    except ServiceMissing as missing:
        unavailable("a private PostgreSQL cluster", "initdb", missing)
    try:
        hba = cluster.data / "pg_hba.conf"  # this role, over TCP, must give its password
        hba.write_text("host all dbeat_pw 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        cluster._ctl("reload")
        with cluster.admin.connect() as conn:
            conn.execute(sa.text("CREATE ROLE dbeat_pw LOGIN PASSWORD 'right'"))
        url = as_user(cluster.url("postgres"), "dbeat_pw", "wrong")

        exc = failure(url)
    finally:
        cluster.close()

    assert "password authentication failed" in str(exc)
    assert is_auth_failure(exc)


def test_postgresql_down_or_without_the_database_is_no_auth_failure(pg_database: str) -> None:
    down = failure(sa.make_url(pg_database).set(port=free_port()).render_as_string())
    missing = failure(sa.make_url(pg_database).set(database=unique_name()).render_as_string())

    assert not is_auth_failure(down)
    assert not is_auth_failure(missing)


# MariaDB ----------------------------------------------------------------------------------------


@pytest.fixture
def mysql_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with private_database("mysql", tmp_path_factory) as url:
        yield url


def test_a_wrong_mariadb_password_is_an_auth_failure(mysql_database: str) -> None:
    with mysql_user("right", "ALL ON *.*") as user:
        exc = failure(as_user(mysql_database, user, "wrong"))

    assert "Access denied" in str(exc)
    assert is_auth_failure(exc)


def test_mariadb_refusing_a_database_the_user_is_not_granted_is_an_auth_failure(
    mysql_database: str,
) -> None:
    with mysql_user("right") as user:
        exc = failure(as_user(mysql_database, user, "right"))

    assert exc.__cause__ is not None
    assert exc.__cause__.args[0] == 1044  # access denied to the database
    assert is_auth_failure(exc)


def test_mariadb_down_or_without_the_database_is_no_auth_failure(mysql_database: str) -> None:
    down = failure(sa.make_url(mysql_database).set(port=free_port()).render_as_string())
    missing = failure(sa.make_url(mysql_database).set(database=unique_name()).render_as_string())

    assert not is_auth_failure(down)
    assert not is_auth_failure(missing)


# Redis ------------------------------------------------------------------------------------------


def redis_as(redis_url: str, user: str, password: str) -> str:
    return redis_url.replace("redis://", f"redis://{user}:{password}@", 1)


def ping_failure(url: str) -> Exception:
    client = create_client(url, socket_connect_timeout=2)
    try:
        client.ping()
    except UNAVAILABLE as exc:
        return exc
    finally:
        client.close()
    raise AssertionError(f"{url} answered")


def test_a_wrong_redis_password_is_refused_and_fails_the_start_up_check(
    redis_url: str, redis_prefix: str
) -> None:
    settings = Settings(redis_key_prefix=redis_prefix)
    with redis_acl_user(redis_url, redis_prefix) as user:
        url = redis_as(redis_url, user, "wrong")
        exc = ping_failure(url)
        client = create_client(url)
        try:
            (finding,) = redis_findings(settings, client)
        finally:
            client.close()

    assert is_refused(exc)
    assert finding.level is Level.ERROR
    assert finding.message.startswith(f"Redis at {redis_url} refused the credentials (")
    assert finding.message.endswith(
        "fix the user and password in dbeat_redis_url (or dbeat_redis_options)"
    )


def test_a_redis_acl_user_without_the_prefix_is_refused_and_fails_the_start_up_check(
    redis_url: str, redis_prefix: str
) -> None:
    settings = Settings(redis_key_prefix="dbeat:")  # not a prefix this user may write
    with redis_acl_user(redis_url, redis_prefix) as user:
        client = create_client(redis_as(redis_url, user, "right"))
        try:
            findings = redis_findings(settings, client)
        finally:
            client.close()

    assert findings[0].level is Level.ERROR
    assert "refuses a command beats send, as this user (" in findings[0].message
    assert "give the ACL user the keys ~dbeat:* and the channel &dbeat:*" in findings[0].message


def test_a_redis_acl_user_with_its_prefix_passes_the_start_up_check(
    redis_url: str, redis_prefix: str
) -> None:
    settings = Settings(redis_key_prefix=redis_prefix)
    with redis_acl_user(redis_url, redis_prefix) as user:
        client = create_client(redis_as(redis_url, user, "right"))
        try:
            findings = redis_findings(settings, client)
        finally:
            client.close()

    assert [f.topic for f in findings] == ["redis"]
    assert findings[0].level is not Level.ERROR
    assert "maxmemory" in findings[0].message


def test_a_redis_that_is_down_is_an_outage_not_a_refusal() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    exc = ping_failure(url)
    client = create_client(url, socket_connect_timeout=2)
    try:
        (finding,) = redis_findings(Settings(), client)
    finally:
        client.close()

    assert not is_refused(exc)
    assert finding.level is Level.WARNING
    assert finding.message.startswith(f"could not reach Redis at {url} (")
    assert finding.message.endswith("until it is back, beats claim fires through the database")


def test_dbeat_check_fails_on_a_wrong_redis_password_and_only_warns_when_redis_is_down(
    sqlite_url: str, redis_url: str, redis_prefix: str
) -> None:
    database = migrated(sqlite_url)
    down = f"redis://127.0.0.1:{free_port()}/0"
    with redis_acl_user(redis_url, redis_prefix) as user:
        wrong = Cli(
            make_app(
                database,
                dbeat_redis_url=redis_as(redis_url, user, "s3cret-but-wrong"),
                dbeat_redis_key_prefix=redis_prefix,
            )
        )
        refused = wrong("check")

    unreachable = Cli(make_app(database, dbeat_redis_url=down))("check", "--json")

    assert refused.exit_code == 1, refused.output
    assert f"error   redis    Redis at {redis_url} refused the credentials (" in refused.stdout
    assert refused.stderr == "Error: some checks failed\n"
    assert "s3cret-but-wrong" not in refused.output
    assert unreachable.exit_code == 0, unreachable.output
    (finding,) = [f for f in json.loads(unreachable.stdout) if f["topic"] == "redis"]
    assert finding["level"] == "warning"
    assert finding["message"].startswith(f"could not reach Redis at {down} (")
