"""audit: dbeat_audit, one row per edit of a schedule (who, from where, when, what changed)

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from celery_dbeat.store.types import UTCDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dbeat_audit",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("actor", sa.String(length=255), nullable=False),
        sa.Column("surface", sa.String(length=32), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("schedule_name", sa.String(length=200), nullable=True),
        sa.Column("schedule_uid", sa.String(length=32), nullable=True),
        sa.Column("changes", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("dbeat_audit", schema=None, recreate="never") as batch_op:
        batch_op.create_index("ix_dbeat_audit_at", ["at"])
        batch_op.create_index("ix_dbeat_audit_schedule_name", ["schedule_name"])
        batch_op.create_index("ix_dbeat_audit_schedule_uid", ["schedule_uid"])


def downgrade() -> None:
    op.drop_table("dbeat_audit")
