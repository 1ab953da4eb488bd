"""Persistence: the SQLAlchemy models, the migrations, and the one module that issues SQL."""

from __future__ import annotations

from .database import check_schema, create_engine, migrate
from .models import Base, Fire, FireStatus, Schedule

__all__ = ["Base", "Fire", "FireStatus", "Schedule", "check_schema", "create_engine", "migrate"]
