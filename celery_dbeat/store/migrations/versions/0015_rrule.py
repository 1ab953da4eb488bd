"""rrule schedules: dbeat_schedules.rrule, an RFC 5545 recurrence set

Revision ID: 0015
Revises: 0014

A schedule of kind ``rrule`` keeps its rules, dates and exclusions as text (read in the row's
``timezone`` with its ``dst_gap``/``dst_fold``, as a cron expression is). Nullable: the other
kinds leave it empty.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.add_column(sa.Column("rrule", sa.Text(), nullable=True))


def downgrade() -> None:
    # Never recreate a table on SQLite (see 0002).
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("rrule")
