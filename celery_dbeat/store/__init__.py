"""Persistence. Only this package issues SQL, one module per role: ``due.py`` beat's due path
(what is due, the batch it claims and records), ``fires.py`` fires after they are recorded
(publishing bookkeeping, run-now fires, history), ``runs.py`` what workers report of runs and
the overlap policy's reads, ``beats.py`` heartbeats, ``schedules.py`` the management API's writes
and reads of schedules, ``sync.py`` the ``beat_schedule`` sync, ``health.py`` the schedules whose
runs fail or are overdue, ``database.py`` migrations and :class:`Store` (a database as beat uses
it: the beat's one interface), ``engine.py`` engines and the server settings they need,
``urls.py`` database URLs that cannot work (and what to write instead), ``clock.py`` the database
clock, ``reading.py`` reads of rows that survive a value the driver cannot convert, ``models.py``
the tables, ``alembic_logs.py`` Alembic's routine INFO lines kept out of beat's log."""

from __future__ import annotations

# First: Alembic's routine INFO lines stay out of beat's log from its import on (alembic_logs).
from . import alembic_logs  # noqa: F401
from .database import Store, check_schema, create_engine, migrate
from .models import Base, Fire, Schedule

__all__ = ["Base", "Fire", "Schedule", "Store", "check_schema", "create_engine", "migrate"]
