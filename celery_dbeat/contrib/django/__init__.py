"""Django integration: an admin for celery-dbeat's schedules, on the project's own database.

    # settings.py
    INSTALLED_APPS = [..., "celery_dbeat.contrib.django"]

    from celery_dbeat.contrib.django import database_url
    CELERY_DBEAT_DATABASE_URL = database_url(DATABASES["default"])   # beat uses it too

Then ``python manage.py migrate`` creates the tables (its ``celery_dbeat`` migrations run
celery-dbeat's own Alembic ones; the Django models are unmanaged and read-only; see
``operations.py``), and ``celery -A proj beat -S dbeat`` fires them. Without
``CELERY_DBEAT_DATABASE_URL`` the admin still defaults to Django's database, but a Celery app
configured from Django's settings would default to its own SQLite file.
"""

from __future__ import annotations

from .conf import database_alias, database_url, dbeat_settings, schedules

__all__ = ["database_alias", "database_url", "dbeat_settings", "schedules"]
