"""The example Django site; as in Celery's Django guide, the Celery app loads with Django."""

from __future__ import annotations

from .celery import app as celery_app

__all__ = ["celery_app"]
