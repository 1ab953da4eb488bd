"""Django settings for the django-celery-beat peer: its tables in the run's private database."""

from __future__ import annotations

import os

SECRET_KEY = "bench-only"
USE_TZ = True
TIME_ZONE = "UTC"
INSTALLED_APPS = ["django_celery_beat"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("BENCH_DJANGO_DB", "postgres"),
        "USER": "postgres",
        "HOST": "127.0.0.1",
        "PORT": "5432",
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
DJANGO_CELERY_BEAT_TZ_AWARE = True
