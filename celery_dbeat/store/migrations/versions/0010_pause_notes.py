"""pause notes: why and when a schedule was paused, pause_after_failures, history_limit

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from celery_dbeat.store.types import UTCDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.add_column(sa.Column("pause_after_failures", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("history_limit", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("pause_note", sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column("paused_at", UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("pause_source", sa.String(length=16), nullable=True))


def downgrade() -> None:
    # Never recreate a table on SQLite (see 0002).
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("pause_source")
        batch_op.drop_column("paused_at")
        batch_op.drop_column("pause_note")
        batch_op.drop_column("history_limit")
        batch_op.drop_column("pause_after_failures")
