"""Until celery-dbeat's tables exist (and are at this version's schema), every view shows a page
saying so and what to run, never a 500; once they are current the views open."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from celery_dbeat.api import Schedules
from celery_dbeat.store import migrate
from tests.integration.flask.helpers import make_app
from tests.services import private_database

PAGES = [
    "/admin/schedules/",
    "/admin/schedules/new/",
    "/admin/schedules/edit/?id=1",
    "/admin/fires/",
    "/admin/fires/details/?id=1",
    "/admin/beats/",
]
POSTS = [
    ("/admin/schedules/new/", {"name": "x", "task": "t", "kind": "cron", "cron": "* * * * *"}),
    ("/admin/schedules/action/", {"action": "trigger", "rowid": "1"}),
    ("/admin/schedules/delete/", {"id": "1"}),
]


def problem(page: str) -> str:
    """The schema page's heading and text, tags stripped."""
    match = re.search(r'id="dbeat-schema-problem">(.*?)</div>\s*</div>', page, re.S)
    assert match, "no schema page"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", match.group(1))).split())


@pytest.fixture
def empty_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh PostgreSQL database, reached with a password in its URL (the server trusts
    local connections and ignores it), so the page can be seen to mask it."""
    with private_database("postgresql", tmp_path_factory) as url:
        yield sa.make_url(url).set(password="s3cret").render_as_string(hide_password=False)


def test_every_view_says_the_tables_are_missing_and_what_to_run(empty_postgres: str) -> None:
    with Schedules(empty_postgres) as api:
        app, _ = make_app(api)
        client = app.test_client()
        masked = empty_postgres.replace(":s3cret@", ":***@")
        for path in PAGES:
            response = client.get(path)
            assert response.status_code == 503, path
            text = problem(response.get_data(as_text=True))
            assert text.startswith(
                f"celery-dbeat's tables are missing in {masked} Run celery -A proj dbeat migrate "
            ), text
            assert "s3cret" not in response.get_data(as_text=True)
            assert "celery_dbeat.store.migrate(engine)" in text
        for path, data in POSTS:
            assert client.post(path, data=data).status_code == 503, path


def test_the_views_open_once_the_tables_are_created(database_url: str) -> None:
    with Schedules(database_url) as api:
        app, _ = make_app(api)
        client = app.test_client()
        assert client.get("/admin/schedules/").status_code == 503
        migrate(api.store.engine)  # asked again at the next request: no restart needed
        for path in ("/admin/schedules/", "/admin/fires/", "/admin/beats/"):
            assert client.get(path).status_code == 200, path
        assert api.list() == []


def test_an_older_schema_is_named_with_what_to_run(database_url: str) -> None:
    with Schedules(database_url) as api:
        migrate(api.store.engine, "0002")
        app, _ = make_app(api)
        response = app.test_client().get("/admin/schedules/")
        assert response.status_code == 503
        text = problem(response.get_data(as_text=True))
        assert text.startswith(f"celery-dbeat's tables in {database_url} are not at this version's")
        assert "at revision '0002', older than" in text
        assert "celery -A <your Celery app> dbeat migrate" in text


def test_an_unreachable_database_is_named_not_a_500(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/no/such/folder/schedules.sqlite3"
    with Schedules(url) as api:
        app, _ = make_app(api)
        response = app.test_client().get("/admin/fires/")
        assert response.status_code == 503
        text = problem(response.get_data(as_text=True))
        assert text.startswith(f"celery-dbeat cannot read its database {url} ")
        assert "unable to open database file" in text


def test_a_refused_visitor_gets_the_refusal_not_the_database_url(database_url: str) -> None:
    with Schedules(database_url) as api:
        app, _ = make_app(api, is_accessible=lambda: False)
        response = app.test_client().get("/admin/schedules/")
        assert response.status_code == 403
        assert database_url not in response.get_data(as_text=True)
