"""System checks: celery-dbeat's settings must all be known and valid, the admin must read and
write the database that beat fires from, and find celery-dbeat's tables there.

Every setting problem is reported at once, one error each (a misspelt ``CELERY_DBEAT_*`` or
``DBEAT_*`` setting, which would otherwise be ignored here while beat refuses it, names the
setting it most likely meant). Every finding about the tables is a warning, never an error:
Django runs the checks before ``migrate`` (an error would stop the very command that creates the
tables), before ``runserver`` and before a test run, whose test databases may not hold the tables
at all.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, register
from django.core.checks import Warning as CheckWarning

from celery_dbeat.config import (
    SETTING_KEYS,
    default_database_url,
    mask_url,
    misspelt_keys,
    suggestion,
)
from celery_dbeat.core.errors import ConfigurationError

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


#: Django settings of the integration itself (not read by Celery).
DJANGO_SETTINGS = ("DBEAT_DATABASE_ALIAS",)


def _misspelt() -> list[ConfigurationError]:
    """Django settings that look like celery-dbeat's but name none (``CELERY_DBEAT_*``, or
    ``DBEAT_*``, which the Celery app never reads), and the same in the project's Celery app."""
    from django.conf import settings

    known = [f"CELERY_{key.upper()}" for key in SETTING_KEYS] + list(DJANGO_SETTINGS)
    found = []
    for name in dir(settings):
        if not name.isupper() or name in known:
            continue
        if name.startswith("DBEAT_") and f"CELERY_{name}" in known:
            meant = f" (did you mean CELERY_{name}?)"
        elif name.startswith(("CELERY_DBEAT_", "DBEAT_")):
            meant = suggestion(name, known) or " (misspelt?)"
        else:
            continue
        found.append(ConfigurationError(name, None, f"unknown setting{meant}", hidden=True))
    app = project_celery_app()
    if app is not None:
        seen = {error.key for error in found}
        found += [
            error
            for error in misspelt_keys(app.conf.keys(), getattr(app, "namespace", None))
            if error.key not in seen
        ]
    return found


@register()
def check_schedule_database(app_configs: Any = None, **_kwargs: Any) -> list[CheckMessage]:
    found: list[CheckMessage] = [Error(str(error), id="celery_dbeat.E002") for error in _misspelt()]
    in_memory = False
    try:
        alias = database_alias()
        in_memory = in_memory_test_database(alias)
        target = dbeat_settings().database_url
        read = database_url(alias)
    except ConfigurationError as exc:
        problems = getattr(exc, "errors", [exc])  # every bad setting, one message each
        if in_memory:  # a test run: the project's own database is fine
            return found + [CheckWarning(str(p), id="celery_dbeat.W005") for p in problems]
        return found + [Error(str(p), id="celery_dbeat.E001") for p in problems]
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
                f"{default_database_url(app.main)}, while the admin uses {mask_url(target)}",
                hint=HINT_URL,
                id="celery_dbeat.W002",
            )
        )
    return found


# Not tagged ``database``: Django 6.1 runs such checks only for a command that names an alias
# (``check --database``), and ``manage.py check`` would no longer say the tables are missing.
@register()
def check_tables(
    app_configs: Any = None, databases: Any = None, **_kwargs: Any
) -> list[CheckMessage]:
    """celery-dbeat's tables in the schedule alias's database: missing or older (``W003``),
    newer than this celery-dbeat (``W004``), not reachable (``W005``).

    Run by ``manage.py check`` (which names no database: ``None`` up to Django 6.0, every alias
    from 6.1 on) and by commands checking the schedule alias (``migrate``, a test run); not
    when they name only other aliases.
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
