"""System checks: the admin must read and write the database that beat fires from, and find
celery-dbeat's tables there.

Every finding about the tables is a warning, never an error: Django runs the checks before
``migrate`` (an error would stop the very command that creates the tables), before ``runserver``
and before a test run, whose test databases may not hold the tables at all.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, Tags, register
from django.core.checks import Warning as CheckWarning

from celery_dbeat.config import DEFAULT_DATABASE_URL, mask_url
from celery_dbeat.errors import ConfigurationError

from .conf import (
    database_alias,
    database_url,
    dbeat_settings,
    in_memory_test_database,
    project_celery_app,
    same_database,
)
from .tables import tables_problem

HINT_URL = (
    "In settings.py: from celery_dbeat.contrib.django import database_url; "
    'CELERY_DBEAT_DATABASE_URL = database_url(DATABASES["default"])'
)


@register()
def check_schedule_database(app_configs: Any = None, **_kwargs: Any) -> list[CheckMessage]:
    in_memory = False
    try:
        alias = database_alias()
        in_memory = in_memory_test_database(alias)
        target = dbeat_settings().database_url
        read = database_url(alias)
    except ConfigurationError as exc:
        if in_memory:  # a test run: the project's own database is fine
            return [CheckWarning(str(exc), id="celery_dbeat.W005")]
        return [Error(str(exc), id="celery_dbeat.E001")]
    found: list[CheckMessage] = []
    if not same_database(target, read):
        found.append(
            CheckWarning(
                f"celery-dbeat's schedules are in {mask_url(target)}, but the admin reads them "
                f"through DATABASES[{alias!r}] ({mask_url(read)})",
                hint="Set DBEAT_DATABASE_ALIAS to a DATABASES entry for the schedule database.",
                id="celery_dbeat.W001",
            )
        )
    app = project_celery_app()
    if app is not None and not app.conf.get("dbeat_database_url"):
        found.append(
            CheckWarning(
                f"the Celery app {app.main!r} has no dbeat_database_url: its beat would use "
                f"{DEFAULT_DATABASE_URL}, while the admin uses {mask_url(target)}",
                hint=HINT_URL,
                id="celery_dbeat.W002",
            )
        )
    return found


@register(Tags.database)
def check_tables(
    app_configs: Any = None, databases: Any = None, **_kwargs: Any
) -> list[CheckMessage]:
    """celery-dbeat's tables in the schedule alias's database: missing or older (``W003``),
    newer than this celery-dbeat (``W004``), not reachable (``W005``).

    Run by ``manage.py check`` (which names no database) and by commands checking the schedule
    alias (``migrate``, a test run); not when they name only other aliases.
    """
    try:
        alias = database_alias()
    except ConfigurationError:
        return []  # check_schedule_database reports it
    if databases is not None and alias not in databases:
        return []
    problem = tables_problem()
    if problem is None or problem.check_id == "celery_dbeat.E001":
        return []
    return [CheckWarning(str(problem), id=problem.check_id)]
