"""The pure core: what a fire is (:mod:`.fires`), a schedule's fields, specs and definitions,
the slot maths (:mod:`.timing`), planning, misfire and overlap resolution, health rules, and the
exceptions. No I/O: nothing here reads the clock, opens a connection or imports anything of
celery-dbeat outside the core, nor SQLAlchemy, Alembic, Redis or Celery (checked by
import-linter, see pyproject.toml)."""
