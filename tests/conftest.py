from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.chaos import summary as chaos_summary
from tests.services import DATABASES, private_database, redis_url_or_skip, unique_name


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    chaos_summary.gather(report)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    chaos_summary.print_table(terminalreporter)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Under pytest-xdist's --dist loadgroup (run-tests.sh), tests that start real beat and
    # worker processes run one after another on one worker, beside the in-process tests on the
    # other: at most one set of celery processes competes for the two cores at a time. First,
    # so that xdist's own hook (which reads the group into the node id) sees the marker.
    for item in items:
        if item.get_closest_marker("e2e") is not None:
            item.add_marker(pytest.mark.xdist_group("processes"))


def pytest_collection_finish(session: pytest.Session) -> None:
    # On an xdist worker under --dist loadgroup, xdist has now suffixed each grouped test's id
    # with its group. A pytest/xdist pair that no longer does (pytest 9.2 with xdist 3.8) would
    # silently run celery processes on both workers at once: refuse instead.
    if not getattr(session.config.option, "loadgroup", False):
        return
    ungrouped = [
        item.nodeid
        for item in session.items
        if item.get_closest_marker("e2e") is not None and not item.nodeid.endswith("@processes")
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
