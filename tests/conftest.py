"""What every kind of test shares: the xdist grouping of the real-process tests, and private
databases and Redis key prefixes on the real services.

* ``database_url``: an empty private database on each backend (or the ones a test parametrises
  indirectly); ``sqlite_url``: an empty private SQLite file;
* ``postgres_store``: a migrated :class:`Store` on a private PostgreSQL database;
* ``redis_url`` / ``redis_prefix``: the test Redis, and a key prefix cleaned up afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from celery_dbeat.store import Store
from tests.chaos import summary as chaos_summary
from tests.services import (
    DATABASES,
    drop_databases,
    install_schema,
    private_database,
    redis_url_or_skip,
    unique_name,
)

#: Celery's own pytest plugin: ``celery_app`` and ``celery_worker`` (a worker in a thread of the
#: test process, on the in-memory broker) for tests that need a worker but not real processes.
#: pytest-celery 1.x starts its workers and brokers in Docker containers, which CI lacks.
pytest_plugins = ("celery.contrib.pytest",)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    chaos_summary.gather(report)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    chaos_summary.print_table(terminalreporter)


def pytest_sessionfinish() -> None:
    # In each test process (an xdist worker too): its databases, spares and templates.
    drop_databases()


#: The xdist groups of the real-process tests: the chaos scenarios and the load tests (marked
#: ``load``) in one, every other test that starts celery processes in the other (tests/e2e/).
#: Under ``--dist loadgroup`` each group runs one test after another on one worker, so at most
#: two sets of celery processes run at once, beside the in-process tests on the remaining
#: workers (run-tests.sh starts three).
PROCESS_GROUPS = ("processes", "chaos")


def _process_group(item: pytest.Item) -> str:
    chaos = item.path.is_relative_to(Path(__file__).parent / "chaos")
    return "chaos" if chaos or item.get_closest_marker("load") is not None else "processes"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # First, so that xdist's own hook (which reads the group into the node id) sees the marker.
    for item in items:
        if item.get_closest_marker("e2e") is not None:
            item.add_marker(pytest.mark.xdist_group(_process_group(item)))


def pytest_collection_finish(session: pytest.Session) -> None:
    # On an xdist worker under --dist loadgroup, xdist has now suffixed each grouped test's id
    # with its group. A pytest/xdist pair that no longer does (pytest 9.2 with xdist 3.8) would
    # silently run any number of celery process sets at once: refuse instead.
    if not getattr(session.config.option, "loadgroup", False):
        return
    ungrouped = [
        item.nodeid
        for item in session.items
        if item.get_closest_marker("e2e") is not None
        and not item.nodeid.endswith(tuple(f"@{group}" for group in PROCESS_GROUPS))
    ]
    if ungrouped:
        raise pytest.UsageError(
            f"pytest-xdist did not group {ungrouped[0]} (and {len(ungrouped) - 1} more) with the "
            "other real-process tests: this pytest and pytest-xdist do not honour xdist_group"
        )


@pytest.fixture(params=DATABASES)
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """An empty private database on each backend (SQLite file, PostgreSQL, MariaDB)."""
    with private_database(request.param, tmp_path_factory) as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """An empty private SQLite file (``schedules.sqlite3`` in the test's ``tmp_path``)."""
    return f"sqlite:///{tmp_path / 'schedules.sqlite3'}"


@pytest.fixture
def postgres_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """A migrated store on a private PostgreSQL database (skipped without PostgreSQL, failing
    when ``CI`` is set). Its clock of record is the test's (``server_clock=False``), as the
    integration ``store``'s is."""
    with private_database("postgresql", tmp_path_factory) as url:
        install_schema(url)
        store = Store(url, server_clock=False)
        yield store
        store.close()


@pytest.fixture
def redis_url() -> str:
    return redis_url_or_skip()


@pytest.fixture
def redis_prefix(redis_url: str) -> Iterator[str]:
    """A private key prefix; every key under it is deleted afterwards."""
    prefix = f"{unique_name('dbeat-test')}:"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()
