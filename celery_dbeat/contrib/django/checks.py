"""System checks: the admin must read and write the database that beat fires from."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, register
from django.core.checks import Warning as CheckWarning

from celery_dbeat.config import DEFAULT_DATABASE_URL, mask_url
from celery_dbeat.errors import ConfigurationError

from .conf import (
    database_alias,
    database_url,
    dbeat_settings,
    project_celery_app,
    same_database,
)

HINT_URL = (
    "In settings.py: from celery_dbeat.contrib.django import database_url; "
    'CELERY_DBEAT_DATABASE_URL = database_url(DATABASES["default"])'
)


@register()
def check_schedule_database(app_configs: Any = None, **_kwargs: Any) -> list[CheckMessage]:
    try:
        alias = database_alias()
        target = dbeat_settings().database_url
        read = database_url(alias)
    except ConfigurationError as exc:
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
