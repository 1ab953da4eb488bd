"""Whether celery-dbeat's tables are ready where the admin reads them, and the page shown until
they are.

The system check (``celery_dbeat.W003``, ``W004``, ``W005``) and every celery-dbeat admin view
ask :func:`tables_problem`; a database found ready is not asked again in this process.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

from alembic.script import ScriptDirectory
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from celery_dbeat.config import mask_url
from celery_dbeat.core.errors import ConfigurationError
from celery_dbeat.store.database import MIGRATIONS, VERSION_TABLE

from .conf import database_alias, database_url, on_reset

__all__ = [
    "TABLES",
    "TablesProblem",
    "alembic_head",
    "forget",
    "migrate_command",
    "tables_problem",
    "unavailable_response",
]

# The tables of the first revision: a schema missing any is "missing", one with them all is
# judged by its revision (the later tables, calendars and audit, come with migrations).
TABLES = ("dbeat_schedules", "dbeat_fires", "dbeat_beats")
APP_LABEL = "celery_dbeat"


@functools.lru_cache(maxsize=1)
def _scripts() -> ScriptDirectory:
    return ScriptDirectory(str(MIGRATIONS))


def alembic_head() -> str:
    """The newest revision of celery-dbeat's own (Alembic) migrations."""
    head = _scripts().get_current_head()
    assert head is not None
    return head


def _known(revision: str) -> bool:
    try:
        return _scripts().get_revision(revision) is not None
    except Exception:  # Alembic raises several kinds for a revision it has never seen
        return False


@dataclass(frozen=True)
class TablesProblem:
    """Why the admin cannot use celery-dbeat's tables, and what to do about it."""

    #: The system check's id (``celery_dbeat.W003``: missing or older, ``W004``: newer,
    #: ``W005``: cannot be checked; ``E001``: the settings are wrong).
    check_id: str
    #: What is wrong, naming the database (its URL, password masked).
    problem: str
    #: What to do.
    action: str

    def __str__(self) -> str:
        return f"{self.problem}: {self.action}"

    def html(self) -> SafeString:
        """:meth:`__str__` in HTML, each `command` as code."""
        parts = str(self).split("`")
        return format_html_join(
            "",
            "{}",
            ((format_html("<code>{}</code>", p) if i % 2 else p,) for i, p in enumerate(parts)),
        )


def migrate_command(alias: str) -> str:
    """The command that creates the tables on ``alias``."""
    where = "" if alias == DEFAULT_DB_ALIAS else f" --database {alias}"
    return f"python manage.py migrate{where}"


def _recorded_as_applied(connection: Any) -> bool:
    """Whether Django has recorded every celery_dbeat migration as applied on ``connection``
    (then ``migrate`` would not run them again: the tables were dropped or downgraded since)."""
    from django.db.migrations.loader import MigrationLoader

    try:
        loader = MigrationLoader(connection)
    except DatabaseError:
        return False
    leaves = loader.graph.leaf_nodes(APP_LABEL)
    return bool(leaves) and all(leaf in loader.applied_migrations for leaf in leaves)


def _upgrade_action(alias: str, connection: Any) -> str:
    if _recorded_as_applied(connection):
        return (
            "run `python manage.py dbeat_migrate` (Django has recorded celery_dbeat's "
            "migrations as applied already)"
        )
    return f"run `{migrate_command(alias)}`"


_lock = threading.Lock()
#: Databases found with current tables: ``(alias, ENGINE, NAME, HOST, PORT)``.
_ready: set[tuple[str, ...]] = set()


@on_reset
def forget() -> None:
    """Check every database again (settings changed)."""
    with _lock:
        _ready.clear()


def tables_problem() -> TablesProblem | None:
    """What keeps the admin from celery-dbeat's tables in the schedule alias's database, or
    ``None`` once they are there at this celery-dbeat's revision."""
    try:
        alias = database_alias()
        where = mask_url(database_url(alias))
    except ConfigurationError as exc:
        return TablesProblem("celery_dbeat.E001", str(exc), "fix the setting it names")
    connection = connections[alias]
    entry = connection.settings_dict
    key = (alias, *(str(entry.get(k)) for k in ("ENGINE", "NAME", "HOST", "PORT")))
    if key in _ready:
        return None
    try:
        with connection.cursor() as cursor:
            present = set(connection.introspection.table_names(cursor))
            revisions: list[str] = []
            if VERSION_TABLE in present:
                table = connection.ops.quote_name(VERSION_TABLE)
                cursor.execute(f"SELECT version_num FROM {table}")
                revisions = [str(row[0]) for row in cursor.fetchall()]
    except DatabaseError as exc:
        return TablesProblem(
            "celery_dbeat.W005",
            f"celery-dbeat's tables in {where} could not be checked ({exc})",
            "check that the database is reachable",
        )
    head = alembic_head()
    if any(table not in present for table in TABLES) or not revisions:
        missing = f"celery-dbeat's tables are missing in {where}"
        return TablesProblem("celery_dbeat.W003", missing, _upgrade_action(alias, connection))
    current = revisions[0]
    if current == head:
        with _lock:
            _ready.add(key)
        return None
    if not _known(current):
        return TablesProblem(
            "celery_dbeat.W004",
            f"celery-dbeat's tables in {where} are at revision {current!r}, which this "
            "celery-dbeat does not know (a newer version wrote them)",
            "upgrade celery-dbeat",
        )
    return TablesProblem(
        "celery_dbeat.W003",
        f"celery-dbeat's tables in {where} are at revision {current!r}, older than this "
        f"celery-dbeat's {head!r}",
        _upgrade_action(alias, connection),
    )


PAGE = """{% extends "admin/base_site.html" %}
{% block title %}{{ title }} | {{ site_title }}{% endblock %}
{% block breadcrumbs %}<div class="breadcrumbs"><a href="{{ index_url }}">Home</a>
&rsaquo; {{ opts.app_config.verbose_name }} &rsaquo; {{ opts.verbose_name_plural|capfirst }}
</div>{% endblock %}
{% block content %}<div id="content-main" class="dbeat-tables-problem">
<p class="errornote">{{ problem.html }}.</p>
<p>celery-dbeat keeps its schedules in tables of its own, created and upgraded by its own
migrations: Django's <code>python manage.py migrate</code> runs them on the database that
<code>DBEAT_DATABASE_ALIAS</code> names (default <code>default</code>), and so do
<code>python manage.py dbeat_migrate</code> and a beat starting with
<code>dbeat_auto_migrate</code> on.</p>
<p>This page opens as soon as the tables are there: reload it then.</p>
</div>{% endblock %}
"""


@functools.lru_cache(maxsize=1)
def _page() -> Any:
    from django.template import engines
    from django.template.backends.django import DjangoTemplates

    engine = next(e for e in engines.all() if isinstance(e, DjangoTemplates))
    return engine.from_string(PAGE)


def unavailable_response(
    request: HttpRequest, admin_site: Any, opts: Any, problem: TablesProblem
) -> HttpResponse:
    """The page every celery-dbeat admin view shows instead of its own (status 503)."""
    context = {
        **admin_site.each_context(request),
        "title": "celery-dbeat's tables are not ready",
        "index_url": reverse("admin:index", current_app=admin_site.name),
        "opts": opts,
        "problem": problem,
    }
    return HttpResponse(_page().render(context, request), status=503)
