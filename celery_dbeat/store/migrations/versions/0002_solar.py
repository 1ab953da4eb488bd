"""solar schedules: event and observer place columns

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dbeat_schedules", schema=None) as batch_op:
        batch_op.add_column(sa.Column("solar_event", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("latitude", sa.Double(), nullable=True))
        batch_op.add_column(sa.Column("longitude", sa.Double(), nullable=True))


def downgrade() -> None:
    # Never recreate the table on SQLite: with foreign keys on, dropping the old copy would
    # cascade-delete the fire history. SQLite >= 3.35 drops a plain column in place.
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("longitude")
        batch_op.drop_column("latitude")
        batch_op.drop_column("solar_event")
