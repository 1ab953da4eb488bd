"""calendars: dbeat_calendars, dbeat_schedules.calendar and dbeat_fires.calendar

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from celery_dbeat.store.types import UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "dbeat_calendars",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("dates", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    # Never recreate a table on SQLite (see 0002).
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.add_column(sa.Column("calendar", sa.String(length=200), nullable=True))
    op.create_index("ix_dbeat_schedules_calendar", "dbeat_schedules", ["calendar"])
    with op.batch_alter_table("dbeat_fires", schema=None, recreate="never") as batch_op:
        batch_op.add_column(sa.Column("calendar", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("dbeat_fires", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("calendar")
    op.drop_index("ix_dbeat_schedules_calendar", table_name="dbeat_schedules")
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("calendar")
    op.drop_table("dbeat_calendars")
