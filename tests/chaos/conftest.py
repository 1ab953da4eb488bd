"""Fixtures of the chaos suite: disposable services for the session, one database per scenario,
and each scenario's summary row (printed by :mod:`tests.chaos.summary`)."""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.chaos.runner import Chaos, ChaosFactory, Services
from tests.chaos.services import PostgresCluster, RedisServer, ServiceMissing
from tests.chaos.summary import summary_row
from tests.chaos.truth import Outcome
from tests.e2e.harness import Harness
from tests.proxy import Proxy
from tests.services import unavailable, unique_name


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    setattr(item, f"chaos_report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def chaos_services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    """A lock Redis, a broker Redis and a PostgreSQL cluster, all the suite's own."""
    workdir = tmp_path_factory.mktemp("chaos-services")
    started: list[RedisServer | PostgresCluster] = []
    try:
        started.append(locks := RedisServer(workdir, "locks"))
        started.append(broker := RedisServer(workdir, "broker"))
        started.append(postgres := PostgresCluster())
    except (ServiceMissing, OSError) as exc:
        for service in started:
            service.close()
        unavailable("disposable redis-server and PostgreSQL (initdb, pg_ctl)", "localhost", exc)
        raise  # unreachable: unavailable() skips or fails
    services = Services(locks, broker, postgres)
    yield services
    services.close()


@pytest.fixture
def chaos(
    request: pytest.FixtureRequest,
    chaos_services: Services,
    tmp_path: Path,
) -> Iterator[ChaosFactory]:
    """``chaos(broker_proxy=False, postgres=None)``: a scenario with its own database, key
    prefix and queue.

    With ``broker_proxy``, beats reach the broker through a TCP proxy the test can cut; the
    worker and the harness always reach it directly. The database is made in ``postgres``, or
    in the suite's cluster. Every process is killed afterwards, and
    the logs are printed if the test failed.
    """
    harnesses: list[Harness] = []

    def remember(outcome: Outcome) -> None:
        request.node.user_properties.append(("chaos", summary_row(outcome)))

    with contextlib.ExitStack() as stack:

        def make(broker_proxy: bool = False, postgres: PostgresCluster | None = None) -> Chaos:
            cluster = postgres or chaos_services.postgres
            name, url = stack.enter_context(cluster.database())
            broker = chaos_services.broker
            proxy = Proxy("127.0.0.1", broker.port) if broker_proxy else None
            if proxy is not None:
                stack.callback(proxy.close)
            harness = Harness(
                tmp_path,
                url,
                chaos_services.locks.url,
                f"{unique_name('chaos')}:",
                broker_url=broker.url,
                beat_broker_url=None if proxy is None else proxy.url_for(broker.url),
            )
            harnesses.append(harness)
            stack.callback(harness.close)  # before the database is dropped
            return Chaos(
                request.node.name,
                chaos_services,
                harness,
                name,
                proxy,
                lambda outcome: request.node.user_properties.append(
                    ("chaos", summary_row(outcome))
                ),
            )

        yield make
    report = getattr(request.node, "chaos_report_call", None)
    if report is None or report.failed:
        for harness in harnesses:
            print(f"logs in {tmp_path}\n{harness.log_tails()}")
