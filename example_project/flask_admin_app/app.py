"""A Flask app with the celery-dbeat admin at /admin, on the example project's schedule database.

    .venv/bin/python example_project/flask_admin_app/app.py     # http://127.0.0.1:5000/admin/

Sign in as admin / admin (DBEAT_ADMIN_USER and DBEAT_ADMIN_PASSWORD change them). The database
is DBEAT_DATABASE_URL, or the SQLite file example_project/proj/celery.py uses by default, so the
schedules and fires of ``example_project/run.sh`` show up here; the task field suggests the
example Celery app's tasks. The login is a stub standing for your app's own: the admin asks it
through ``is_accessible`` and sends refused requests to it. It needs only what
``pip install "celery-dbeat[flask]"`` installs.
"""

from __future__ import annotations

import hmac
import os
import secrets
import sys
from pathlib import Path

from flask import Flask, redirect, render_template_string, request, session, url_for
from flask.typing import ResponseReturnValue
from flask_admin import Admin, AdminIndexView
from flask_admin.menu import MenuLink

from celery_dbeat.api import Schedules
from celery_dbeat.contrib.flask import TaskNames, init_admin
from celery_dbeat.core.urls import mask_url
from celery_dbeat.store import migrate

EXAMPLE_PROJECT = Path(__file__).resolve().parent.parent
# The same default as example_project/proj/celery.py.
VAR = Path(os.environ.get("EXAMPLE_VAR", EXAMPLE_PROJECT / "var"))
DATABASE_URL = os.environ.get("DBEAT_DATABASE_URL", f"sqlite:///{VAR / 'schedules.sqlite3'}")

LOGIN_PAGE = """<!doctype html>
<title>Sign in</title>
<link rel="stylesheet"
      href="{{ url_for('admin.static', filename='bootstrap/bootstrap4/css/bootstrap.min.css') }}">
<main class="container" style="max-width: 24rem; margin-top: 10vh">
  <h1 class="h4 mb-3">celery-dbeat admin</h1>
  {% if error %}<div class="alert alert-danger">{{ error }}</div>{% endif %}
  <form method="post">
    <input type="hidden" name="next" value="{{ next }}">
    <div class="form-group"><label for="username">User</label>
      <input class="form-control" id="username" name="username" autofocus></div>
    <div class="form-group"><label for="password">Password</label>
      <input class="form-control" id="password" name="password" type="password"></div>
    <button class="btn btn-primary" type="submit">Sign in</button>
  </form>
</main>
"""


def _safe_next(target: str | None) -> str:
    # Only paths on this site: never redirect a login to another host.
    if target and target.startswith("/") and not target.startswith("//"):
        return target
    return "/admin/"


def example_task_names() -> list[str]:
    """The tasks of the example Celery app (example_project/proj), as its workers register them.

    Your app would pass ``task_names=lambda: celery_app.tasks.keys()`` after
    ``celery_app.loader.import_default_modules()``; the example imports its project first.
    """
    sys.path.insert(0, str(EXAMPLE_PROJECT))
    from proj.celery import app as celery_app

    celery_app.loader.import_default_modules()  # proj.tasks and the other `include` modules
    # Celery's own canvas tasks (celery.chord, celery.group, ...) are never scheduled by hand.
    return sorted(name for name in celery_app.tasks if not name.startswith("celery."))


def create_app(
    database_url: str = DATABASE_URL,
    *,
    username: str | None = None,
    password: str | None = None,
    secret_key: str | None = None,
    task_names: TaskNames | None = None,
) -> Flask:
    username = username or os.environ.get("DBEAT_ADMIN_USER", "admin")
    password = password or os.environ.get("DBEAT_ADMIN_PASSWORD", "admin")
    app = Flask(__name__)
    # Signs the session cookie (login and the forms' CSRF tokens).
    app.secret_key = secret_key or os.environ.get("FLASK_SECRET_KEY") or secrets.token_hex(32)

    schedules = Schedules(database_url)
    # celery-dbeat's tables: beat creates them at start-up, `celery -A proj dbeat migrate` too.
    # The demo may start first, so it runs the same migrations; without them the admin's views
    # would show a page saying what to run.
    migrate(schedules.store.engine)

    def signed_in() -> bool:
        return session.get("user") == username

    def to_login() -> ResponseReturnValue:
        return redirect(url_for("login", next=request.full_path.rstrip("?")))

    class IndexView(AdminIndexView):  # the admin's home page asks the same rule
        def is_accessible(self) -> bool:
            return signed_in()

        def inaccessible_callback(self, name: str, **kwargs: object) -> ResponseReturnValue:
            return to_login()

    admin = Admin(app, name="celery-dbeat", url="/admin", index_view=IndexView(url="/admin"))
    init_admin(
        admin, schedules, is_accessible=signed_in, on_refused=to_login, task_names=task_names
    )
    admin.add_link(MenuLink("Sign out", url="/logout"))

    @app.route("/")
    def home() -> ResponseReturnValue:
        return redirect(url_for("admin.index"))

    @app.route("/login", methods=["GET", "POST"])
    def login() -> ResponseReturnValue:
        error = None
        target = _safe_next(request.values.get("next"))
        if request.method == "POST":
            user_ok = hmac.compare_digest(request.form.get("username", ""), username)
            password_ok = hmac.compare_digest(request.form.get("password", ""), password)
            if user_ok and password_ok:
                session.clear()
                session["user"] = username
                return redirect(target)
            error = "Wrong user or password."
        return render_template_string(LOGIN_PAGE, error=error, next=target)

    @app.route("/logout")
    def logout() -> ResponseReturnValue:
        session.pop("user", None)
        return redirect(url_for("login"))

    return app


if __name__ == "__main__":
    host = os.environ.get("HOST", "127.0.0.1")
    port = int(os.environ.get("PORT", "5000"))
    VAR.mkdir(parents=True, exist_ok=True)  # where the default SQLite file lives
    print(
        f" * celery-dbeat admin on http://{host}:{port}/admin/ (database {mask_url(DATABASE_URL)})"
    )
    create_app(task_names=example_task_names()).run(host=host, port=port)
