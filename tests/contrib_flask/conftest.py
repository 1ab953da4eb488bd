"""Fixtures for the Flask-Admin integration, on real databases.

* ``db_url``: a private SQLite database; ``core_db_url``: the same on SQLite and PostgreSQL;
* ``clock``: a :class:`FixedClock` at :data:`~tests.contrib_flask.helpers.START` that the API (and
  so the forms) writes with;
* ``api`` / ``core_api``: :class:`Schedules` on a migrated database;
* ``admin`` / ``core_admin``: a :class:`~tests.contrib_flask.helpers.Browser` on the admin.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.store import migrate
from celery_dbeat.store.queries import Store
from tests.contrib_flask.helpers import START, Browser, make_app
from tests.services import private_database


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: drives a real headless Chromium")


@pytest.fixture
def db_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with private_database("sqlite", tmp_path_factory) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def core_db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The core flows run on SQLite and on PostgreSQL."""
    with private_database(request.param, tmp_path_factory) as url:
        yield url


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(START)


def open_api(url: str, clock: FixedClock) -> Iterator[Schedules]:
    store = Store(url, server_clock=False)  # writes and ticks follow the test's FixedClock
    migrate(store.engine)
    with Schedules(store, clock=clock) as api:
        yield api
    store.close()


@pytest.fixture
def api(db_url: str, clock: FixedClock) -> Iterator[Schedules]:
    yield from open_api(db_url, clock)


@pytest.fixture
def core_api(core_db_url: str, clock: FixedClock) -> Iterator[Schedules]:
    yield from open_api(core_db_url, clock)


@pytest.fixture
def admin(api: Schedules) -> Browser:
    app, _ = make_app(api)
    return Browser(app.test_client())


@pytest.fixture
def core_admin(core_api: Schedules) -> Browser:
    app, _ = make_app(core_api)
    return Browser(app.test_client())
