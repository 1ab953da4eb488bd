"""Persistence: the only package that issues SQL, one module per role (each says which in its
docstring). :class:`Store` (:mod:`.database`) is the database as beat uses it, the beat's one
interface to it."""

from __future__ import annotations

# First: Alembic's routine INFO lines stay out of beat's log from its import on (alembic_logs).
from . import alembic_logs  # noqa: F401
from .database import Store, check_schema, create_engine, migrate
from .models import Base, Fire, Schedule

__all__ = ["Base", "Fire", "Schedule", "Store", "check_schema", "create_engine", "migrate"]
