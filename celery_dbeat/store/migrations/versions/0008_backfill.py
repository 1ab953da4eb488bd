"""backfill: dbeat_fires.origin marks the fires a backfill recorded

Revision ID: 0008
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dbeat_fires", schema=None, recreate="never") as batch_op:
        batch_op.add_column(sa.Column("origin", sa.String(length=16), nullable=True))


def downgrade() -> None:
    # Never recreate a table on SQLite (see 0002).
    with op.batch_alter_table("dbeat_fires", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("origin")
