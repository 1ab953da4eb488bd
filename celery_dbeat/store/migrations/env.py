"""Alembic environment for celery-dbeat's own tables (version table ``dbeat_alembic_version``).

Run through :func:`celery_dbeat.store.migrate`, which passes an open connection.
"""

from __future__ import annotations

from alembic import context

from celery_dbeat.store.database import VERSION_TABLE
from celery_dbeat.store.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    url = context.config.get_main_option("sqlalchemy.url")
    context.configure(
        url=url, target_metadata=Base.metadata, version_table=VERSION_TABLE, literal_binds=True
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        version_table=VERSION_TABLE,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
