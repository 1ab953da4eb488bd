"""Persistence. Only this package issues SQL: ``queries.py`` holds beat's hot path (due rows,
recording and publishing fires), ``manage.py`` the writes of definitions (config sync and the
management API), ``database.py`` engines and migrations, ``reading.py`` reads of schedule rows
that survive a value the driver cannot convert."""

from __future__ import annotations

from .database import check_schema, create_engine, migrate
from .models import Base, Fire, Schedule

__all__ = ["Base", "Fire", "Schedule", "check_schema", "create_engine", "migrate"]
