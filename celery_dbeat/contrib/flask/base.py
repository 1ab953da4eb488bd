"""What the admin views share: the host's access rule, the ORM session, the templates, and the
page every view shows instead of an error until celery-dbeat's tables exist.

Flask-Admin reads rows through an ORM session; it never writes them. Every write goes through
:class:`celery_dbeat.api.Schedules` (after :func:`~celery_dbeat.definitions.definition_from_form`
for forms), so validation and the ``next_run_at`` rules are those of every other surface.

On SQLite every transaction takes the database's write lock (``BEGIN IMMEDIATE``, see
``store/database.py``), so a view ends the session's read transaction (:meth:`DBeatView.end_read`)
before each API call, which opens its own connection; otherwise the two would wait on each other.

Before its first page a view checks the schema (:func:`schema_problem`): while the tables are
missing, older than this celery-dbeat or unreachable, every view answers 503 with a page that
says so and what to run, and checks again on the next request; once they are current it stops
checking.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import sqlalchemy as sa
from flask import Blueprint, abort, make_response
from flask.typing import ResponseReturnValue
from flask_admin.actions import action
from flask_admin.contrib.sqla import ModelView
from flask_admin.contrib.sqla.typefmt import (
    DEFAULT_FORMATTERS,
)
from flask_admin.form import SecureForm
from flask_admin.model.typefmt import DETAIL_FORMATTERS
from jinja2 import BaseLoader, ChoiceLoader, FileSystemLoader
from markupsafe import Markup
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, scoped_session

from ...errors import SchemaVersionError
from ...store.database import VERSION_TABLE, check_schema
from ...urls import mask_url
from .display import instant

__all__ = [
    "BEATS_ENDPOINT",
    "FIRES_ENDPOINT",
    "SCHEDULES_ENDPOINT",
    "Access",
    "AdminSession",
    "DBeatView",
    "SchemaProblem",
    "badge",
    "bulk_action",
    "schema_problem",
]

SCHEDULES_ENDPOINT = "dbeat_schedules"
FIRES_ENDPOINT = "dbeat_fires"
BEATS_ENDPOINT = "dbeat_beats"
TEMPLATES = Path(__file__).parent / "templates"
SCHEMA_TEMPLATE = "celery_dbeat/schema_problem.html"


@dataclass(frozen=True)
class Access:
    """The host application's decision: ``is_accessible()`` is asked on every request;
    ``on_refused()`` answers a refused one (a redirect to a login page, a 401 asking for HTTP
    basic auth, ...). Without it a refused request gets 403."""

    is_accessible: Callable[[], bool]
    on_refused: Callable[[], ResponseReturnValue] | None = None


class AdminSession(scoped_session[Session]):
    """A scoped ORM session that is its own ``.session``.

    Flask-Admin 2 takes an object with a ``.session`` (Flask-SQLAlchemy's ``db``) and deprecates
    plain sessions; celery-dbeat's database is not the host's Flask-SQLAlchemy one.
    """

    @property
    def session(self) -> AdminSession:
        return self


@dataclass(frozen=True)
class SchemaProblem:
    """Why the views cannot read the schedule database, as the page shown instead says it."""

    title: str
    detail: str
    #: The tables were never created: the page says how to create them.
    missing: bool


def schema_problem(engine: Engine) -> SchemaProblem | None:
    """What keeps the views from reading ``engine``'s database, or ``None`` when its
    celery-dbeat schema is at this version's revision."""
    url = mask_url(engine.url.render_as_string(hide_password=False))
    try:
        check_schema(engine)
    except SchemaVersionError as exc:
        if not sa.inspect(engine).has_table(VERSION_TABLE):
            return SchemaProblem(
                f"celery-dbeat's tables are missing in {url}",
                "Run `celery -A proj dbeat migrate` (proj: your Celery app, whose "
                "dbeat_database_url is this database), or start a beat: it migrates at start-up.",
                missing=True,
            )
        return SchemaProblem(
            f"celery-dbeat's tables in {url} are not at this version's schema", str(exc), False
        )
    except sa.exc.DBAPIError as exc:  # refused, unknown database, bad credentials, ...
        return SchemaProblem(f"celery-dbeat cannot read its database {url}", str(exc.orig), False)
    return None


_Action = TypeVar("_Action", bound=Callable[..., None])


def bulk_action(name: str, text: str, confirmation: str) -> Callable[[_Action], _Action]:
    """Flask-Admin's ``@action``, typed."""
    decorator: Callable[[_Action], _Action] = action(name, text, confirmation)
    return decorator


def _datetime(view: Any, value: datetime, name: str) -> str:
    return instant(value)


def badge(text: str, kind: str, title: str = "") -> Markup:
    return Markup('<span class="badge badge-{}" title="{}">{}</span>').format(kind, title, text)


class DBeatView(ModelView):
    """What both views share: the host's access rule, the session's lifetime, the templates."""

    form_base_class = SecureForm
    named_filter_urls = True
    can_set_page_size = True
    page_size = 50
    column_type_formatters: ClassVar[dict[type, Any]] = {**DEFAULT_FORMATTERS, datetime: _datetime}
    column_type_formatters_detail: ClassVar[dict[type, Any]] = {
        **DETAIL_FORMATTERS,
        datetime: _datetime,
    }

    def __init__(
        self,
        model: type[Any],
        session: AdminSession,
        access: Access,
        *,
        name: str,
        category: str | None,
        endpoint: str,
        url: str,
    ) -> None:
        self.access = access
        self._schema_current = False
        super().__init__(model, session, name=name, category=category, endpoint=endpoint, url=url)

    def is_accessible(self) -> bool:
        return bool(self.access.is_accessible())

    def _handle_view(self, name: str, **kwargs: Any) -> ResponseReturnValue | None:
        refused: ResponseReturnValue | None = super()._handle_view(name, **kwargs)
        if refused is not None or self._schema_current:
            return refused  # the access rule first: only the host's users see the database URL
        bind = self.session.get_bind()
        problem = schema_problem(bind if isinstance(bind, Engine) else bind.engine)
        if problem is not None:
            return make_response(self.render(SCHEMA_TEMPLATE, dbeat_schema=problem), 503)
        self._schema_current = True
        return None

    def inaccessible_callback(self, name: str, **kwargs: Any) -> ResponseReturnValue:
        if self.access.on_refused is not None:
            return self.access.on_refused()
        abort(403)

    def create_blueprint(self, admin: Any) -> Blueprint:
        blueprint: Blueprint = super().create_blueprint(admin)
        # Our templates first, then Flask-Admin's; the host app's own loader comes before both,
        # so a host can override celery_dbeat/*.html.
        loaders: list[BaseLoader] = [FileSystemLoader(TEMPLATES)]
        if blueprint.jinja_loader is not None:
            loaders.append(blueprint.jinja_loader)
        blueprint.jinja_loader = ChoiceLoader(loaders)
        blueprint.teardown_request(self._release_session)
        return blueprint

    def _release_session(self, exc: BaseException | None) -> None:
        self.session.remove()

    def end_read(self) -> None:
        """End the session's read transaction (keeping loaded rows) before an API call."""
        self.session.commit()
