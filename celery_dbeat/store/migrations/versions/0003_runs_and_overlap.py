"""run tracking and overlap policy: run columns on fires, overlap columns on schedules

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from celery_dbeat.store.types import UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dbeat_schedules", schema=None) as batch_op:
        batch_op.add_column(sa.Column("overlap_policy", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("max_run_time", sa.Double(), nullable=True))
    with op.batch_alter_table("dbeat_fires", schema=None) as batch_op:
        batch_op.add_column(sa.Column("run_status", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("started_at", UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("finished_at", UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("runtime", sa.Double(), nullable=True))
        batch_op.add_column(sa.Column("worker", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("run_error", sa.Text(), nullable=True))
        batch_op.create_index("ix_dbeat_fires_slot", ["slot"])
        batch_op.create_index("ix_dbeat_fires_finished", ["finished_at"])


def downgrade() -> None:
    # Never recreate a table on SQLite (see 0002).
    with op.batch_alter_table("dbeat_fires", schema=None, recreate="never") as batch_op:
        batch_op.drop_index("ix_dbeat_fires_finished")
        batch_op.drop_index("ix_dbeat_fires_slot")
        for column in ("run_error", "worker", "runtime", "finished_at", "started_at", "run_status"):
            batch_op.drop_column(column)
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("max_run_time")
        batch_op.drop_column("overlap_policy")
