"""initial schema

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from celery_dbeat.store.types import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dbeat_schedules",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("task", sa.String(length=255), nullable=False),
        sa.Column("args", sa.Text(), nullable=False),
        sa.Column("kwargs", sa.Text(), nullable=False),
        sa.Column("options", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("config_enabled", sa.Boolean(), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("cron", sa.String(length=255), nullable=True),
        sa.Column("timezone", sa.String(length=64), nullable=True),
        sa.Column("cron_days", sa.String(length=8), nullable=True),
        sa.Column("every", sa.Double(), nullable=True),
        sa.Column("run_at", UTCDateTime(), nullable=True),
        sa.Column("anchor_at", UTCDateTime(), nullable=True),
        sa.Column("dst_gap", sa.String(length=16), nullable=True),
        sa.Column("dst_fold", sa.String(length=16), nullable=True),
        sa.Column("start_at", UTCDateTime(), nullable=True),
        sa.Column("end_at", UTCDateTime(), nullable=True),
        sa.Column("max_runs", sa.Integer(), nullable=True),
        sa.Column("run_count", sa.Integer(), nullable=False),
        sa.Column("misfire_policy", sa.String(length=16), nullable=True),
        sa.Column("misfire_grace", sa.Double(), nullable=True),
        sa.Column("catchup_limit", sa.Integer(), nullable=True),
        sa.Column("jitter", sa.Double(), nullable=True),
        sa.Column("next_run_at", UTCDateTime(), nullable=True),
        sa.Column("due_at", UTCDateTime(), nullable=True),
        sa.Column("last_slot", UTCDateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    with op.batch_alter_table("dbeat_schedules", schema=None) as batch_op:
        batch_op.create_index(
            "ix_dbeat_schedules_due", ["enabled", "due_at", "next_run_at"], unique=False
        )

    op.create_table(
        "dbeat_fires",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column(
            "schedule_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("slot", UTCDateTime(), nullable=False),
        sa.Column("manual", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("slot_count", sa.Integer(), nullable=False),
        sa.Column("first_slot", UTCDateTime(), nullable=True),
        sa.Column("task_id", sa.String(length=36), nullable=True),
        sa.Column("beat", sa.String(length=255), nullable=True),
        sa.Column("recorded_at", UTCDateTime(), nullable=False),
        sa.Column("sent_at", UTCDateTime(), nullable=True),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["schedule_id"], ["dbeat_schedules.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("schedule_id", "slot", "manual", name="uq_dbeat_fires_schedule_slot"),
    )
    with op.batch_alter_table("dbeat_fires", schema=None) as batch_op:
        batch_op.create_index("ix_dbeat_fires_pending", ["status", "lease_until"], unique=False)
        batch_op.create_index("ix_dbeat_fires_task_id", ["task_id"], unique=True)

    op.create_table(
        "dbeat_beats",
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("hostname", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(length=32), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("dbeat_beats")
    with op.batch_alter_table("dbeat_fires", schema=None) as batch_op:
        batch_op.drop_index("ix_dbeat_fires_task_id")
        batch_op.drop_index("ix_dbeat_fires_pending")

    op.drop_table("dbeat_fires")
    with op.batch_alter_table("dbeat_schedules", schema=None) as batch_op:
        batch_op.drop_index("ix_dbeat_schedules_due")

    op.drop_table("dbeat_schedules")
