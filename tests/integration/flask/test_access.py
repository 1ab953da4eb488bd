"""Nothing is open unless the host application grants it."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest
from flask import Response, request
from flask_admin import Admin

from celery_dbeat import Cron
from celery_dbeat.api import Schedules
from celery_dbeat.contrib.flask import init_admin
from tests.integration.flask.helpers import load_example, make_app

PAGES = [
    "/admin/schedules/",
    "/admin/schedules/new/",
    "/admin/schedules/edit/?id=1",
    "/admin/fires/",
    "/admin/fires/details/?id=1",
    "/admin/beats/",
]


def test_the_access_rule_is_a_required_argument(api: Schedules) -> None:
    with pytest.raises(TypeError, match="is_accessible"):
        init_admin(Admin(), api)  # type: ignore[call-arg]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_is_refused_when_the_host_says_no(api: Schedules, path: str) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    app, _ = make_app(api, is_accessible=lambda: False)
    assert app.test_client().get(path).status_code == 403


def test_refused_writes_change_nothing(api: Schedules) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    app, _ = make_app(api, is_accessible=lambda: False)
    client = app.test_client()
    schedule = api.get("report")
    assert (
        client.post("/admin/schedules/action/", data={"action": "pause", "rowid": "1"}).status_code
        == 403
    )
    assert client.post("/admin/schedules/delete/", data={"id": "1"}).status_code == 403
    assert (
        client.post(
            "/admin/schedules/new/", data={"name": "x", "task": "t", "cron": "* * * * *"}
        ).status_code
        == 403
    )
    assert api.list() == [schedule]


def test_the_menu_hides_the_views_from_whom_the_host_refuses(api: Schedules) -> None:
    allowed = {"yes": False}
    app, _ = make_app(api, is_accessible=lambda: allowed["yes"])
    client = app.test_client()
    assert "/admin/schedules/" not in client.get("/admin/").get_data(as_text=True)
    allowed["yes"] = True  # asked on every request
    assert "/admin/schedules/" in client.get("/admin/").get_data(as_text=True)


def test_a_refused_request_gets_the_host_answer_such_as_http_basic_auth(api: Schedules) -> None:
    def signed_in() -> bool:
        auth = request.authorization
        return auth is not None and (auth.username, auth.password) == ("ops", "secret")

    def ask_for_credentials() -> Response:
        return Response("sign in", 401, {"WWW-Authenticate": 'Basic realm="schedules"'})

    app, _ = make_app(api, is_accessible=signed_in, on_refused=ask_for_credentials)
    client = app.test_client()
    refused = client.get("/admin/schedules/")
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == 'Basic realm="schedules"'
    token = base64.b64encode(b"ops:secret").decode()
    assert (
        client.get("/admin/schedules/", headers={"Authorization": f"Basic {token}"}).status_code
        == 200
    )


# The example app ---------------------------------------------------------------------------------


def test_the_example_app_sends_visitors_to_its_login_page_until_they_sign_in(
    database_url: str,
) -> None:
    app = load_example().create_app(database_url, password="pw", secret_key="k")
    client = app.test_client()
    for path in ("/admin/", "/admin/schedules/", "/admin/fires/"):
        response = client.get(path)
        assert response.status_code == 302
        assert response.headers["Location"].startswith("/login?next=")
    wrong = client.post("/login", data={"username": "admin", "password": "nope"})
    assert "Wrong user or password." in wrong.get_data(as_text=True)
    signed_in = client.post(
        "/login", data={"username": "admin", "password": "pw", "next": "/admin/fires/"}
    )
    assert signed_in.headers["Location"] == "/admin/fires/"
    assert client.get("/admin/schedules/").status_code == 200
    client.get("/logout")
    assert client.get("/admin/schedules/").status_code == 302


def test_the_example_login_never_redirects_to_another_site(database_url: str) -> None:
    app = load_example().create_app(database_url, password="pw", secret_key="k")
    response = app.test_client().post(
        "/login", data={"username": "admin", "password": "pw", "next": "//evil.example/"}
    )
    assert response.headers["Location"] == "/admin/"


def test_the_example_app_suggests_the_example_projects_tasks(tmp_path: Path) -> None:
    # In a child process: the example imports example_project/proj, a top-level package.
    code = (
        "from tests.integration.flask.helpers import load_example;"
        "print(*load_example().example_task_names())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[3],
        env={**os.environ, "EXAMPLE_VAR": str(tmp_path)},  # the example's broker folders
    )
    assert done.stdout.split() == ["proj.tasks.greet"]


def test_the_core_never_imports_the_flask_integration() -> None:
    code = (
        "import sys, celery_dbeat, celery_dbeat.api, celery_dbeat.beat.scheduler,"
        " celery_dbeat.beat.ticker;"
        "bad = sorted(m for m in sys.modules if m.startswith(('celery_dbeat.contrib', 'flask')));"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[3])
