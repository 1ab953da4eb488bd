"""slot arguments: dbeat_schedules.slot_kwarg and previous_slot_kwarg

Revision ID: 0016
Revises: 0015

The keyword names a schedule's fires pass their slot, and the schedule's previous slot, under
(NULL: not passed, as every schedule that exists).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.add_column(sa.Column("slot_kwarg", sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column("previous_slot_kwarg", sa.String(length=100), nullable=True))


def downgrade() -> None:
    # Never recreate a table on SQLite (see 0002).
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("previous_slot_kwarg")
        batch_op.drop_column("slot_kwarg")
