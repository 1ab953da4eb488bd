"""What the Flask-Admin tests share: the admin on a test client, readers of what a page shows
(table rows, field errors, flashed messages), beats' heartbeats, and the example app. The
recording broker and the beat ticker are the integration ones (tests/integration/conftest.py)."""

from __future__ import annotations

import html
import importlib.util
import re
from collections.abc import Callable
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from flask_admin import Admin

from celery_dbeat.api import Schedules
from celery_dbeat.contrib.flask import AdminViews, init_admin
from tests.integration.conftest import START

#: Runs a test on SQLite and on PostgreSQL (the ``database_url`` of tests/integration/flask).
ON_SQLITE_AND_POSTGRESQL = pytest.mark.parametrize(
    "database_url", ["sqlite", "postgresql"], indirect=True
)
EXAMPLE = Path(__file__).resolve().parents[3] / "example_project" / "flask_admin_app" / "app.py"


# The admin ---------------------------------------------------------------------------------------


def make_app(
    api: Schedules, is_accessible: Callable[[], bool] = lambda: True, **options: Any
) -> tuple[Flask, AdminViews]:
    app = Flask(__name__)
    app.secret_key = "test-secret"
    app.config["TESTING"] = True
    admin = Admin(app, name="test", url="/admin")
    views = init_admin(admin, api, is_accessible=is_accessible, **options)
    return app, views


class Browser:
    """A test client on the admin that knows the CSRF token and reads pages."""

    def __init__(self, client: FlaskClient) -> None:
        self.client = client
        self._token: str | None = None

    def get(self, path: str, status: int = 200) -> str:
        response = self.client.get(path)
        assert response.status_code == status, (path, response.status_code)
        return response.get_data(as_text=True)

    @property
    def token(self) -> str:
        if self._token is None:
            page = self.get("/admin/schedules/new/")
            match = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page)
            assert match, "no CSRF token on the create page"
            self._token = match.group(1)
        return self._token

    def post(self, path: str, data: dict[str, Any], *, follow: bool = True) -> str:
        response = self.client.post(
            path, data={"csrf_token": self.token, **data}, follow_redirects=follow
        )
        assert response.status_code == (200 if follow else 302), response.status_code
        return response.get_data(as_text=True)

    def action(self, name: str, ids: list[int], **fields: str) -> str:
        """Run a bulk action on the schedules ``ids``, with the list page's other ``fields``."""
        return self.post(
            "/admin/schedules/action/",
            {"action": name, "rowid": [str(i) for i in ids], "url": "/admin/schedules/", **fields},
        )


# Reading pages -----------------------------------------------------------------------------------


class _Table(HTMLParser):
    """Rows of the ``model-list`` table as ``{column: text}`` (``col-name`` -> ``name``)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, str]] = []
        self._in_table = False
        self._column: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "table" and "model-list" in classes:
            self._in_table = True
        elif self._in_table and tag == "tr":
            self.rows.append({})
        elif self._in_table and tag == "td":
            column = next((c[4:] for c in classes if c.startswith("col-")), None)
            self._column = column
            if column and self.rows:
                self.rows[-1][column] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._column = None
        elif tag == "table":
            self._in_table = False

    def handle_data(self, data: str) -> None:
        if self._in_table and self._column and self.rows:
            row = self.rows[-1]
            row[self._column] = " ".join((row[self._column] + " " + data).split())


def rows(page: str) -> list[dict[str, str]]:
    parser = _Table()
    parser.feed(page)
    return [row for row in parser.rows if row]


def names(page: str) -> list[str]:
    return [row["name"] for row in rows(page)]


def field_errors(page: str, field: str) -> list[str]:
    """The errors shown under form field ``field``."""
    groups = page.split('<div class="form-group')
    group = next((g for g in groups if re.search(rf'\bid="{re.escape(field)}"', g)), None)
    assert group is not None, f"no field {field!r} on the page"
    if "invalid-feedback" not in group:
        return []
    feedback = group.split("invalid-feedback", 1)[1]
    return [html.unescape(e) for e in re.findall(r"<li>(.*?)</li>", feedback, re.S)]


def flashes(page: str) -> list[str]:
    """Flashed messages as ``"<bootstrap kind>: <text>"``."""
    found = re.findall(r'<div class="alert alert-(\w+)[^"]*">(.*?)</div>', page, re.S)
    messages = []
    for kind, text in found:
        text = re.sub(r"<button.*?</button>", "", text, flags=re.S)
        messages.append(f"{kind}: {' '.join(html.unescape(re.sub('<[^>]+>', '', text)).split())}")
    return messages


# Beat and the example app ----------------------------------------------------------------------


def heartbeat(api: Schedules, name: str, seen: timedelta) -> None:
    """A beat ``name`` whose last heartbeat is ``seen`` before the API's clock."""
    beat = {"name": name, "hostname": "host", "pid": 42, "version": "9.9", "started_at": START}
    api.store.heartbeat(beat, api.clock.now() - seen)


def load_example() -> ModuleType:
    """example_project/flask_admin_app/app.py as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("flask_admin_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
