"""The site's Celery app, configured from Django's settings (``CELERY_*``), as Celery's Django
guide does it. Beat started from it (``celery -A dbeat_site beat -S dbeat``) reads
``CELERY_DBEAT_DATABASE_URL``, the same database the admin shows."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dbeat_site.settings")

app = Celery("dbeat_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
