"""Settings of the example site: the admin of the example Celery app's schedules.

It uses the example app's database (``example_project/proj/celery.py``): ``DBEAT_DATABASE_URL``
when set (PostgreSQL or SQLite), else ``var/schedules.sqlite3``. Django's own tables (users,
sessions, the admin log) live in that database too, next to celery-dbeat's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from celery_dbeat.contrib.django import database_url

EXAMPLE = Path(__file__).resolve().parents[2]
VAR = Path(os.environ.get("EXAMPLE_VAR", EXAMPLE / "var"))
VAR.mkdir(parents=True, exist_ok=True)


def _django_database(url: str) -> dict[str, Any]:
    parts = sa.make_url(url)
    if parts.get_backend_name() == "sqlite":
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": parts.database,
            "OPTIONS": {"timeout": 30},
        }
    if parts.get_backend_name() != "postgresql":
        raise SystemExit(f"the example site runs on PostgreSQL or SQLite, not {url}")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parts.database,
        "USER": parts.username or "",
        "PASSWORD": parts.password or "",
        "HOST": parts.host or "",
        "PORT": str(parts.port or ""),
    }


DATABASES = {
    "default": _django_database(
        os.environ.get("DBEAT_DATABASE_URL") or f"sqlite:///{VAR / 'schedules.sqlite3'}"
    )
}
# The one line a Django project adds: beat (through the Celery app below) and the admin then use
# the project's own database.
CELERY_DBEAT_DATABASE_URL = database_url(DATABASES["default"])
CELERY_DBEAT_REDIS_URL = os.environ.get("DBEAT_REDIS_URL") or None
# This site's Celery app has no beat_schedule of its own: syncing an empty one would disable the
# schedules the example app (proj) defines.
CELERY_DBEAT_SYNC_BEAT_SCHEDULE = False
CELERY_TIMEZONE = "Europe/London"
if os.environ.get("CELERY_BROKER_URL"):
    CELERY_BROKER_URL = os.environ["CELERY_BROKER_URL"]
else:  # proj's filesystem broker, so proj's worker runs what this site's beat sends
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(VAR / "broker" / "out"),
        "data_folder_out": str(VAR / "broker" / "out"),
        "processed_folder": str(VAR / "broker" / "processed"),
        "control_folder": str(VAR / "broker" / "control"),
        "store_processed": False,
    }

SECRET_KEY = "example only: not secret"
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
TIME_ZONE = "Europe/London"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "celery_dbeat.contrib.django",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "dbeat_site.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
