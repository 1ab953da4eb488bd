"""Fixtures for the Flask-Admin integration, on real databases.

The admin is built on the integration fixtures (tests/integration/conftest.py): ``api`` (the
:class:`Schedules` it writes through) on ``store``, writing at ``clock``'s time (a
:class:`FixedClock` at :data:`~tests.integration.conftest.START`), and ``make_ticker`` for a
beat on the same store. Here:

* ``database_url``: one private SQLite database, unless a test asks for more
  (:data:`~tests.integration.flask.helpers.ON_SQLITE_AND_POSTGRESQL`);
* ``admin``: a :class:`~tests.integration.flask.helpers.Browser` on the admin.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from celery_dbeat.api import Schedules
from tests.integration.flask.helpers import Browser, make_app
from tests.services import private_database


@pytest.fixture
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Overrides tests/conftest.py's (every backend) on purpose: most admin tests check what a
    page shows or a form refuses, the same on any database, so they run on one private SQLite
    database; the core flows (listing, editing, bulk actions, the history) run on SQLite and
    PostgreSQL by parametrising this fixture indirectly
    (:data:`~tests.integration.flask.helpers.ON_SQLITE_AND_POSTGRESQL`)."""
    with private_database(getattr(request, "param", "sqlite"), tmp_path_factory) as url:
        yield url


@pytest.fixture
def admin(api: Schedules) -> Browser:
    app, _ = make_app(api)
    return Browser(app.test_client())
