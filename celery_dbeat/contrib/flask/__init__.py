"""Flask-Admin views for celery-dbeat: schedules (list, filters, search, forms, pause, resume,
run now, delete), their fire history (with each run's outcome), the exclusion calendars (list,
forms, delete) and the running beats, for a Flask app you already have.

Install with ``pip install "celery-dbeat[flask]"`` (Flask and Flask-Admin; nothing else). A whole
app, with HTTP basic auth standing for your own login::

    import hmac
    import os

    from flask import Flask, Response, request
    from flask_admin import Admin

    from celery_dbeat.api import Schedules
    from celery_dbeat.contrib.flask import init_admin
    from proj.celery import app as celery_app  # your Celery app, with dbeat_database_url set

    app = Flask(__name__)
    app.secret_key = os.environ["FLASK_SECRET_KEY"]  # signs the forms' CSRF tokens


    def is_ops() -> bool:
        auth = request.authorization
        password = os.environ["OPS_PASSWORD"].encode()
        return (
            auth is not None
            and auth.username == "ops"
            and hmac.compare_digest((auth.password or "").encode(), password)
        )


    def ask_for_password() -> Response:
        return Response("Sign in", 401, {"WWW-Authenticate": 'Basic realm="schedules"'})


    celery_app.loader.import_default_modules()  # registers the tasks of `include` and `imports`
    init_admin(
        Admin(app, name="Ops", url="/admin"),
        Schedules.from_app(celery_app),
        is_accessible=is_ops,
        on_refused=ask_for_password,
        task_names=lambda: celery_app.tasks.keys(),
    )

With Flask-Login (``pip install Flask-Login``, not part of the extra) the rule would be
``is_accessible=lambda: current_user.is_authenticated`` and ``on_refused`` a redirect to your
login view. ``example_project/flask_admin_app/app.py`` is a runnable demo with a login page.

**Tables.** The views read celery-dbeat's own tables, which its Alembic migrations (shipped in
the package) create and upgrade: run ``celery -A proj dbeat migrate`` once, and again after
upgrading celery-dbeat, or let beat do it (``celery -A proj beat -S dbeat`` migrates at start-up
unless ``dbeat_auto_migrate = False``), or call ``celery_dbeat.store.migrate(engine)``. Until the
schema is current every celery-dbeat view answers 503 with a page that names the database (its
password masked) and what to run, instead of an error.

Writes go through :class:`celery_dbeat.api.Schedules`, like the CLI's. Nothing is open by
default: ``is_accessible`` is required and asked on every request; ``on_refused`` answers a
refused one (default 403).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

try:
    import flask_admin
    import flask_admin.contrib.sqla
except ImportError as exc:  # pragma: no cover - depends on the environment
    # Flask-Admin's SQLAlchemy views import Flask-SQLAlchemy, which its "sqlalchemy" extra brings.
    raise ImportError(
        "celery_dbeat.contrib.flask needs Flask and Flask-Admin with its SQLAlchemy extra: "
        f'pip install "celery-dbeat[flask]" ({exc})'
    ) from exc

from flask.typing import ResponseReturnValue
from sqlalchemy.engine import Engine
from sqlalchemy.orm import sessionmaker

from ...api import Schedules
from .audit import AUDIT_ENDPOINT, AuditView
from .base import BEATS_ENDPOINT, FIRES_ENDPOINT, SCHEDULES_ENDPOINT, Access, AdminSession
from .beats import BeatView
from .calendars import CALENDARS_ENDPOINT, CalendarView
from .history import FireView
from .load import LOAD_ENDPOINT, LoadView
from .schedules import ScheduleView, TaskNames

__all__ = [
    "AUDIT_ENDPOINT",
    "BEATS_ENDPOINT",
    "CALENDARS_ENDPOINT",
    "FIRES_ENDPOINT",
    "LOAD_ENDPOINT",
    "SCHEDULES_ENDPOINT",
    "Access",
    "AdminViews",
    "AuditView",
    "BeatView",
    "CalendarView",
    "FireView",
    "LoadView",
    "ScheduleView",
    "TaskNames",
    "init_admin",
]


@dataclass(frozen=True)
class AdminViews:
    """What :func:`init_admin` registered."""

    schedules: ScheduleView
    fires: FireView
    beats: BeatView
    calendars: CalendarView
    load: LoadView
    audit: AuditView
    #: The management API the views write through.
    api: Schedules


def init_admin(
    admin: flask_admin.Admin,
    schedules: Schedules | Engine | str,
    *,
    is_accessible: Callable[[], bool],
    on_refused: Callable[[], ResponseReturnValue] | None = None,
    category: str | None = "Schedules",
    task_names: TaskNames | None = None,
    actor: Callable[[], str | None] | None = None,
) -> AdminViews:
    """Add the schedule, fire-history, calendar, beat, load and audit views to ``admin``.

    ``schedules`` is the management API to write through, or the engine or URL of the schedule
    database. Give ``Schedules.from_app(celery_app)`` to have each edit wake the running beats
    through Redis at once and to count a beat as running by its ``dbeat_max_interval``. An
    engine or URL given here stays open for the life of the app. The views read through their
    own ORM session on the same engine. The tables must exist (see the module's docstring):
    until they do, each view shows a page saying how to create them.

    ``is_accessible`` is the host's access rule, called on every request (for example
    ``lambda: current_user.is_authenticated`` with Flask-Login); ``on_refused`` returns the
    response to a refused request (a redirect to your login page, a 401); default 403.

    ``task_names`` are the Celery task names the form's task field suggests: a list, or a
    function called on each page, such as ``lambda: celery_app.tasks.keys()`` (the tasks this
    process registered, Celery's own ``celery.*`` ones included: call
    ``celery_app.loader.import_default_modules()`` once to register those of ``include`` and
    ``imports``). Any name may still be typed; a saved one that is not among them gets a
    warning, since it may be registered only in the workers' code.

    ``actor`` returns the logged-in user's name, which the audit trail records for each edit
    (surface ``flask-admin``), for example ``lambda: current_user.get_id()``; by default the
    HTTP basic auth user, else ``anonymous``. The trail is at ``<admin url>/audit/``
    (endpoint ``dbeat_audit``), read-only.

    The views are at ``<admin url>/schedules/``, ``<admin url>/fires/``,
    ``<admin url>/calendars/`` (the exclusion calendars: list, create, edit, delete),
    ``<admin url>/beats/`` and ``<admin url>/load/`` (the next 24 hours drawn), endpoints
    ``dbeat_schedules``, ``dbeat_fires``, ``dbeat_calendars``, ``dbeat_beats`` and ``dbeat_load``,
    under the menu ``category`` (``None``: top level). A beat counts as running (the beats
    view, the run-now message) by :meth:`Schedules.live_beats`: a heartbeat within the API's
    ``live_within``.
    """
    api = schedules if isinstance(schedules, Schedules) else Schedules(schedules)
    session = AdminSession(
        sessionmaker(bind=api.store.engine, autoflush=False, expire_on_commit=False)
    )
    access = Access(is_accessible, on_refused)
    fires = FireView(session, access, category=category, schedules=api)
    schedule_view = ScheduleView(
        api,
        session,
        access,
        history=fires,
        category=category,
        task_names=task_names,
        actor=actor,
    )
    beats = BeatView(api, session, access, category=category)
    calendars = CalendarView(api, session, access, category=category, actor=actor)
    load = LoadView(api, access, category=category)
    audit = AuditView(session, access, category=category)
    admin.add_views(schedule_view, fires, calendars, beats, load, audit)
    return AdminViews(schedule_view, fires, beats, calendars, load, audit, api)
