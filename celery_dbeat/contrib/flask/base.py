"""What the admin views share: the host's access rule, the ORM session, the templates, and the
page every view shows instead of an error until celery-dbeat's tables exist.

Flask-Admin reads rows through an ORM session; it never writes them. Every write goes through
:class:`celery_dbeat.api.Schedules` (after
:func:`~celery_dbeat.core.definitions.definition_from_form` for forms), so validation and the
``next_run_at`` rules are those of every other surface.

On SQLite every transaction takes the database's write lock (``BEGIN IMMEDIATE``, see
``store/database.py``), so a view ends the session's read transaction (:meth:`DBeatView.end_read`)
before each API call, which opens its own connection; otherwise the two would wait on each other.

A row may hold an instant the driver cannot read (PostgreSQL's ``'-infinity'``, text that is no
timestamp in SQLite), which would fail the whole page. So the views' ORM queries leave the
instant columns out (deferred), and :meth:`DBeatView.read_instants` reads them for the rows
loaded in one query that survives such values (``store/reading.py``, as beat and the CLI read
them): an unreadable one is ``None``, a schedule's ``last_error`` says so, and the page shows
"cannot be read" in its place.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, TypedDict, TypeVar, cast

import sqlalchemy as sa
from flask import Blueprint, abort, flash, g, make_response, request, url_for
from flask.typing import ResponseReturnValue
from flask_admin import BaseView, tools
from flask_admin.actions import action
from flask_admin.contrib.sqla import ModelView
from flask_admin.contrib.sqla.typefmt import (
    DEFAULT_FORMATTERS,
)
from flask_admin.form import SecureForm
from flask_admin.model.typefmt import DETAIL_FORMATTERS
from jinja2 import BaseLoader, ChoiceLoader, FileSystemLoader, pass_context
from markupsafe import Markup
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, defer, scoped_session
from sqlalchemy.orm.attributes import set_committed_value
from typing_extensions import Unpack

from ...core.audit import Actor, Surface
from ...core.errors import ConfigOwned, DBeatError, SchemaVersionError
from ...core.urls import mask_url
from ...store.database import VERSION_TABLE, check_schema
from ...store.reading import Unreadable, chunked, read_rows_detailed
from ...store.types import UTCDateTime
from .display import instant

__all__ = [
    "BEATS_ENDPOINT",
    "FIRES_ENDPOINT",
    "SCHEDULES_ENDPOINT",
    "Access",
    "AdminSession",
    "DBeatView",
    "GuardedView",
    "SchemaProblem",
    "Where",
    "badge",
    "bulk_action",
    "edit_link",
    "flash_done",
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


_Action = TypeVar("_Action", bound=Callable[..., Any])

#: A primary key of an integer column, as a page's ``?id=`` writes it.
_WHOLE_NUMBER = re.compile(r"-?[0-9]+")


def bulk_action(
    name: str, text: str, confirmation: str | None = None
) -> Callable[[_Action], _Action]:
    """Flask-Admin's ``@action``, typed (an action may return a response: a page of its own)."""
    decorator: Callable[[_Action], _Action] = action(name, text, confirmation)
    return decorator


def _datetime(view: Any, value: datetime, name: str) -> str:
    return instant(value)


def badge(text: str, kind: str, title: str = "") -> Markup:
    return Markup('<span class="badge badge-{}" title="{}">{}</span>').format(kind, title, text)


def flash_done(done: str, names: Sequence[str], noun: str) -> None:
    """Say what a bulk action did (``Paused 2 schedule(s): a, b``), if anything."""
    if names:
        flash(f"{done} {len(names)} {noun}(s): {', '.join(names)}", "success")


def edit_link(view: Any, context: Any, row: Any, name: str) -> Markup:
    """A list's formatter: the row's name, linked to its edit page."""
    url = url_for(f"{view.endpoint}.edit_view", id=row.id)
    return Markup('<a href="{}">{}</a>').format(url, row.name)


class Where(TypedDict, total=False):
    """Where a view shows: its menu entry's ``name`` and ``category`` (``None``: top level), its
    ``endpoint`` and its ``url`` (under the admin's); by default its class's ``default_*``."""

    name: str
    category: str | None
    endpoint: str
    url: str


class GuardedView(BaseView):
    """What every celery-dbeat view shares, listing rows or not: the host's access rule, the page
    (503) saying what to run while the tables are missing, older than this celery-dbeat or
    unreachable (:func:`schema_problem` of :meth:`schema_engine`, asked before each page until
    they are current), and our templates."""

    access: Access
    _schema_current = False
    default_name: ClassVar[str]
    default_endpoint: ClassVar[str]
    default_url: ClassVar[str]

    def __init__(self, *args: Any, access: Access, **where: Unpack[Where]) -> None:
        """``args``: what the next class's ``__init__`` takes first (a ``ModelView``'s model and
        session)."""
        self.access = access
        super().__init__(
            *args,
            name=where.get("name", self.default_name),
            category=where.get("category"),
            endpoint=where.get("endpoint", self.default_endpoint),
            url=where.get("url", self.default_url),
        )

    def schema_engine(self) -> Engine:
        raise NotImplementedError

    def is_accessible(self) -> bool:
        return bool(self.access.is_accessible())

    def _handle_view(self, name: str, **kwargs: Any) -> ResponseReturnValue | None:
        refused: ResponseReturnValue | None = super()._handle_view(name, **kwargs)
        if refused is not None or self._schema_current:
            return refused  # the access rule first: only the host's users see the database URL
        problem = schema_problem(self.schema_engine())
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
        return blueprint


class DBeatView(GuardedView, ModelView):
    """What the views of rows share: the session's lifetime, rows whose values cannot be read,
    and who a view's writes are recorded as."""

    #: The logged-in user's name, for the audit trail (``None``: the HTTP basic auth user).
    actor: Callable[[], str | None] | None = None

    form_base_class = SecureForm
    named_filter_urls = True
    can_set_page_size = True
    page_size = 50
    column_type_formatters: ClassVar[dict[type, Any]] = {**DEFAULT_FORMATTERS, datetime: _datetime}
    column_type_formatters_detail: ClassVar[dict[type, Any]] = {
        **DETAIL_FORMATTERS,
        datetime: _datetime,
    }

    #: The table the view lists.
    row_model: ClassVar[type[Any]]

    def __init__(self, session: AdminSession, access: Access, **where: Unpack[Where]) -> None:
        table = cast(sa.Table, self.row_model.__table__)
        (self._key,) = table.primary_key.columns
        #: The instant columns, read apart from the others (:meth:`read_instants`); with a
        #: schedule's ``last_error``, which says when one of them cannot be read.
        self._instants = [c for c in table.columns if isinstance(c.type, UTCDateTime)]
        self._read_apart = [*self._instants, *(c for c in table.columns if c.name == "last_error")]
        super().__init__(self.row_model, session, access=access, **where)

    def who(self) -> Actor:
        """The logged-in user, as the audit trail records them (``anonymous`` without one)."""
        auth = request.authorization  # the HTTP basic auth user, without an actor function
        name = self.actor() if self.actor is not None else auth and auth.username
        return Actor(name or "anonymous", Surface.FLASK_ADMIN.value)

    # Rows holding a value that cannot be read --------------------------------------------------

    def _deferred(self) -> list[Any]:
        return [defer(getattr(self.model, column.name)) for column in self._instants]

    def get_query(self) -> Any:
        return super().get_query().options(*self._deferred())

    def get_list(self, *args: Any, **kwargs: Any) -> Any:
        count, rows = super().get_list(*args, **kwargs)
        self.read_instants(rows)
        return count, rows

    def get_one(self, id: Any) -> Any:
        parts = tools.iterdecode(id)
        key = self.key_of(parts[0]) if len(parts) == 1 else None
        return None if key is None else self.load(key)

    def key_of(self, text: object) -> Any | None:
        """The primary key that ``text`` (a page's ``?id=``, a bulk action's row id) names, or
        ``None`` when no row can have it: not a whole number in the column's range, or text the
        column cannot hold. Looked up as it is, such a key is not a missing row but an error of
        the driver (PostgreSQL: "invalid input syntax for type bigint"), a 500."""
        if not isinstance(text, str):
            return None
        column_type = self._key.type
        if isinstance(column_type, sa.Integer):
            if not _WHOLE_NUMBER.fullmatch(text):
                return None
            bits = 63 if isinstance(column_type, sa.BigInteger) else 31
            key = int(text)
            return key if -(2**bits) <= key < 2**bits else None
        length = getattr(column_type, "length", None)
        if "\x00" in text or (length is not None and len(text) > length):
            return None
        return text

    def selected(self, ids: Iterable[str]) -> list[Any]:
        """The rows a bulk action's ``ids`` name, by name, read before an API call."""
        keys = [key for key in map(self.key_of, ids) if key is not None]
        rows: list[Any] = (
            self.get_query().filter(self._key.in_(keys)).order_by(self.model.name).all()
        )
        self.read_instants(rows)
        self.end_read()
        return rows

    def delete_with(self, model: Any, remove: Callable[..., object], noun: str) -> bool:
        """Delete ``model`` by its name with ``remove`` (the API's), between Flask-Admin's
        hooks; a refusal is flashed, the ``noun`` ("Schedule") naming what was not deleted."""
        name = model.name
        self.on_model_delete(model)
        self.end_read()
        try:
            remove(name, actor=self.who())
        except DBeatError as exc:
            # No override here: the next beat start would create one from beat_schedule again.
            told = exc.told(None) if isinstance(exc, ConfigOwned) else str(exc)
            flash(f"{noun} {name!r} not deleted: {told}", "error")
            return False
        self.after_model_delete(model)
        return True

    def delete_selected(self, ids: Sequence[str], noun: str) -> None:
        """The bulk delete: each through :meth:`delete_model`."""
        deleted = [row.name for row in self.selected(ids) if self.delete_model(row)]
        flash_done("Deleted", deleted, noun)

    def load(self, key: Any) -> Any:
        """The row whose primary key is ``key`` (``None`` if there is none), its instants read
        by :meth:`read_instants`."""
        row = self.session.get(self.model, key, options=self._deferred(), populate_existing=True)
        if row is not None:
            self.read_instants([row])
        return row

    def read_instants(self, rows: Sequence[Any]) -> None:
        """Set the instants of ``rows`` (loaded without them) from one read that survives a
        value the driver cannot convert, and remember which rows hold one (:meth:`unreadable`).
        """
        key, unreadable = self._key, g.setdefault("dbeat_unreadable", {})
        by_key = {getattr(row, key.name): row for row in rows}
        query = sa.select(key, *self._read_apart)
        for chunk in chunked(list(by_key)):
            found, problems = read_rows_detailed(
                self.session.connection(), query.where(key.in_(chunk)), key=key
            )
            for values in found:
                row = by_key[values._mapping[key.name]]
                for column in self._read_apart:
                    set_committed_value(row, column.name, values._mapping[column.name])
            unreadable.update(((self.model, k), problem) for k, problem in problems.items())

    def unreadable(self, row: Any) -> Unreadable | None:
        """What of ``row`` cannot be read, if anything (rows read in this request)."""
        problems: dict[tuple[type[Any], Any], Unreadable] = g.get("dbeat_unreadable", {})
        return problems.get((self.model, getattr(row, self._key.name)))

    def _badge_of(self, model: Any, name: str) -> Markup | None:
        """What a page shows in place of a value that cannot be read; the message on hover."""
        problem = self.unreadable(model)
        unread = problem is not None and name in problem.columns
        return badge("cannot be read", "danger", str(problem)) if unread else None

    @pass_context  # as Flask-Admin's: the templates call it with their context
    def get_list_value(self, context: Any, model: Any, name: str) -> Any:
        return self._badge_of(model, name) or super().get_list_value(context, model, name)

    @pass_context
    def get_detail_value(self, context: Any, model: Any, name: str) -> Any:
        return self._badge_of(model, name) or super().get_detail_value(context, model, name)

    # Schema, session ---------------------------------------------------------------------------

    def schema_engine(self) -> Engine:
        bind = self.session.get_bind()
        return bind if isinstance(bind, Engine) else bind.engine

    def create_blueprint(self, admin: Any) -> Blueprint:
        blueprint = super().create_blueprint(admin)
        blueprint.teardown_request(lambda _exc: self.session.remove())
        return blueprint

    def end_read(self) -> None:
        """End the session's read transaction (keeping loaded rows) before an API call."""
        self.session.commit()
