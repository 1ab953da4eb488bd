"""The pure core: what a fire is (:mod:`.fires`). Imports nothing from the store, the locks or
the surfaces, nor SQLAlchemy, Alembic or Redis (checked by import-linter, see pyproject.toml)."""
