"""Flask-Admin views for celery-dbeat: schedules (list, filters, search, forms, pause, resume,
run now, delete), their fire history (with each run's outcome) and the running beats, for a
Flask app you already have::

    from flask_admin import Admin
    from celery_dbeat.contrib.flask import init_admin

    admin = Admin(app, name="Ops", url="/admin")
    init_admin(admin, "postgresql+psycopg://.../proj", is_accessible=lambda: current_user.is_admin)

Writes go through :class:`celery_dbeat.api.Schedules`, like the CLI's. Nothing is open by
default: ``is_accessible`` is required and asked on every request; ``on_refused`` answers a
refused one (default 403). Install with ``pip install "celery-dbeat[flask]"``.
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
from .base import BEATS_ENDPOINT, FIRES_ENDPOINT, SCHEDULES_ENDPOINT, Access, AdminSession
from .beats import BeatView
from .history import FireView
from .schedules import ScheduleView

__all__ = [
    "BEATS_ENDPOINT",
    "FIRES_ENDPOINT",
    "SCHEDULES_ENDPOINT",
    "Access",
    "AdminViews",
    "BeatView",
    "FireView",
    "ScheduleView",
    "init_admin",
]


@dataclass(frozen=True)
class AdminViews:
    """What :func:`init_admin` registered."""

    schedules: ScheduleView
    fires: FireView
    beats: BeatView
    #: The management API the views write through.
    api: Schedules


def init_admin(
    admin: flask_admin.Admin,
    schedules: Schedules | Engine | str,
    *,
    is_accessible: Callable[[], bool],
    on_refused: Callable[[], ResponseReturnValue] | None = None,
    category: str | None = "Schedules",
    live_within: float = 15.0,
) -> AdminViews:
    """Add the schedule, fire-history and beat views to ``admin``.

    ``schedules`` is the management API to write through, or the engine or URL of the schedule
    database (the tables must exist: beat creates them at start-up, or call
    :func:`celery_dbeat.store.migrate`). Give ``Schedules.from_app(celery_app)`` to have each
    edit wake the running beats through Redis at once. An engine or URL given here stays open for
    the life of the app. The views read through their own ORM session on the same engine.

    ``is_accessible`` is the host's access rule, called on every request (for example
    ``lambda: current_user.is_authenticated and current_user.is_admin``); ``on_refused`` returns
    the response to a refused request (a redirect to your login page, a 401); default 403.
    The views are at ``<admin url>/schedules/``, ``<admin url>/fires/`` and
    ``<admin url>/beats/``, endpoints ``dbeat_schedules``, ``dbeat_fires`` and ``dbeat_beats``,
    under the menu ``category`` (``None``: top level). The beats view calls a beat live when
    its heartbeat is at most ``live_within`` seconds old (give 3 x ``dbeat_max_interval``).
    """
    api = schedules if isinstance(schedules, Schedules) else Schedules(schedules)
    session = AdminSession(
        sessionmaker(bind=api.store.engine, autoflush=False, expire_on_commit=False)
    )
    access = Access(is_accessible, on_refused)
    fires = FireView(session, access, category=category)
    schedule_view = ScheduleView(api, session, access, history=fires, category=category)
    beats = BeatView(session, access, category=category, live_within=live_within, clock=api.clock)
    admin.add_view(schedule_view)
    admin.add_view(fires)
    admin.add_view(beats)
    return AdminViews(schedule_view, fires, beats, api)
