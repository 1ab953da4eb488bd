"""alerts: dbeat_alerts, and each schedule's alert settings and the episode it is in

Revision ID: 0017
Revises: 0016

A schedule may ask for an alert after N failed runs in a row (``alert_after_failures``) or when
a slot's run has not succeeded some time after it (``alert_deadline``), sent to a Celery task
(``alert_task``) and/or a webhook (``alert_webhook``); ``alert_kind`` and ``alert_episode`` say
which episode it is in. ``dbeat_alerts`` records each alert once (its unique key) and its
delivery. The downgrade drops the table and the columns (the alerts recorded are lost).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from celery_dbeat.store.types import UTCDateTime

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.add_column(sa.Column("alert_after_failures", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("alert_deadline", sa.Double(), nullable=True))
        batch_op.add_column(sa.Column("alert_task", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("alert_webhook", sa.String(length=1000), nullable=True))
        batch_op.add_column(sa.Column("alert_kind", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("alert_episode", UTCDateTime(), nullable=True))
    op.create_table(
        "dbeat_alerts",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("alert_id", sa.String(length=36), nullable=False),
        sa.Column("schedule_id", _ID, nullable=False),
        sa.Column("schedule_name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("episode_slot", UTCDateTime(), nullable=False),
        sa.Column("slot", UTCDateTime(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("raised_at", UTCDateTime(), nullable=False),
        sa.Column("next_attempt_at", UTCDateTime(), nullable=True),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("delivered_at", UTCDateTime(), nullable=True),
        sa.Column("gave_up_at", UTCDateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["schedule_id"], ["dbeat_schedules.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("schedule_id", "kind", "episode_slot", name="uq_dbeat_alerts_episode"),
    )
    with op.batch_alter_table("dbeat_alerts", schema=None, recreate="never") as batch_op:
        batch_op.create_index("ix_dbeat_alerts_alert_id", ["alert_id"], unique=True)
        batch_op.create_index("ix_dbeat_alerts_next_attempt", ["next_attempt_at"])
        batch_op.create_index("ix_dbeat_alerts_raised", ["raised_at"])


def downgrade() -> None:
    op.drop_table("dbeat_alerts")
    # Never recreate a table on SQLite (see 0002).
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        for column in (
            "alert_episode",
            "alert_kind",
            "alert_webhook",
            "alert_task",
            "alert_deadline",
            "alert_after_failures",
        ):
            batch_op.drop_column(column)
