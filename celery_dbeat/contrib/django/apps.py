"""The Django app ``celery_dbeat.contrib.django`` (label ``celery_dbeat``)."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.core.signals import setting_changed


class DBeatConfig(AppConfig):
    name = "celery_dbeat.contrib.django"
    label = "celery_dbeat"
    verbose_name = "Celery beat schedules"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)
        from .conf import remember_celery_app, remember_databases

        remember_celery_app()
        remember_databases()
        setting_changed.connect(_forget_engines, dispatch_uid="celery_dbeat.forget_engines")


def _forget_engines(setting: str, **_kwargs: Any) -> None:
    if setting.startswith("CELERY_DBEAT_") or setting in ("DBEAT_DATABASE_ALIAS", "DATABASES"):
        from .conf import reset

        reset()
