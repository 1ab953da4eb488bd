"""Fixtures of the chaos suite: disposable services for the session, one database per scenario,
and the summary table printed at the end of the run."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.chaos.runner import Chaos, ChaosFactory, Services
from tests.chaos.services import PostgresCluster, RedisServer, ServiceMissing
from tests.chaos.truth import Outcome
from tests.e2e.harness import Harness
from tests.proxy import Proxy
from tests.services import unavailable, unique_name

#: Summary rows of the scenarios that ran, gathered from the test reports: under pytest-xdist
#: the scenarios run in a worker, and only the reports reach the process that prints the table.
_ROWS: list[list[str]] = []
_HEADER = (
    "scenario",
    "beats",
    "schedules",
    "expected fires",
    "messages",
    "duplicates",
    "lost",
    "repeated ids",
    "worst lag (s)",
    "time (s)",
)


def _row(o: Outcome) -> list[str]:
    return [
        o.scenario.removeprefix("test_"),
        str(o.beats),
        str(o.schedules),
        str(o.expected),
        str(o.received),
        str(len(o.duplicates)),
        str(len(o.lost)),
        f"{len(o.repeats)} ({len(o.unexplained_repeats)} undocumented)",
        f"{o.worst_lag:.2f}",
        f"{o.seconds:.0f}",
    ]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _ROWS.extend(value for name, value in report.user_properties if name == "chaos")


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
    """``chaos(broker_proxy=False)``: a scenario with its own database, key prefix and queue.

    With ``broker_proxy``, beats reach the broker through a TCP proxy the test can cut; the
    worker and the harness always reach it directly. Every process is killed afterwards, and
    the logs are printed if the test failed.
    """
    harnesses: list[Harness] = []
    with contextlib.ExitStack() as stack:

        def make(broker_proxy: bool = False) -> Chaos:
            name, url = stack.enter_context(chaos_services.postgres.database())
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
                lambda outcome: request.node.user_properties.append(("chaos", _row(outcome))),
            )

        yield make
    report = getattr(request.node, "chaos_report_call", None)
    if report is None or report.failed:
        for harness in harnesses:
            print(f"logs in {tmp_path}\n{harness.log_tails()}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _ROWS:
        return
    header, rows = _HEADER, [tuple(row) for row in _ROWS]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    terminalreporter.section("chaos summary")
    for row in [header, tuple("-" * w for w in widths), *rows]:
        terminalreporter.write_line(
            " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
        )
    if os.environ.get("DBEAT_CHAOS_MARKDOWN"):
        lines = [
            "| " + " | ".join(header) + " |",
            "|" + "|".join(" --- " for _ in header) + "|",
            *("| " + " | ".join(row) + " |" for row in rows),
        ]
        Path(os.environ["DBEAT_CHAOS_MARKDOWN"]).write_text("\n".join(lines) + "\n")
