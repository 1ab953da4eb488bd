from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import Harness
from tests.services import amqp_url_or_skip, private_database


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    # Lets the harness fixture know whether the test body failed.
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def e2e_database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A private database of the kind given by indirect parametrisation.

    Set up before the harness and dropped after it, so no beat holds a connection to it then.
    """
    with private_database(request.param, tmp_path_factory) as url:
        yield url


@pytest.fixture
def e2e_broker_url(request: pytest.FixtureRequest) -> str | None:
    """The broker: ``None`` (the locks' Redis) unless indirectly parametrised ``"rabbitmq"``
    (``DBEAT_TEST_AMQP_URL``; skips when absent, fails under ``CI``)."""
    kind = getattr(request, "param", "redis")
    if kind == "redis":
        return None
    if kind == "rabbitmq":
        return amqp_url_or_skip()
    raise ValueError(f"e2e_broker_url={kind!r}: expected 'redis' or 'rabbitmq'")


@pytest.fixture
def harness(
    request: pytest.FixtureRequest,
    e2e_broker_url: str | None,  # first: skips before a database is made
    e2e_database_url: str,
    redis_url: str,
    redis_prefix: str,
    tmp_path: Path,
) -> Iterator[Harness]:
    """Processes for one test; all killed afterwards, with their logs shown if the test failed.

    The locks and the received list (and on a Redis broker, its keys) all live under
    ``redis_prefix``, which that fixture deletes after this one has killed every process; on
    RabbitMQ the harness deletes its private queue and exchange itself.
    """
    harness = Harness(
        tmp_path,
        e2e_database_url,
        redis_url,
        redis_prefix,
        broker_url=e2e_broker_url,
        receipts_url=redis_url,
    )
    try:
        yield harness
    finally:
        harness.close()
        report = getattr(request.node, "report_call", None)
        if report is None or report.failed:
            print(f"logs in {tmp_path}\n{harness.log_tails()}")
