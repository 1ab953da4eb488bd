"""queued runs: dbeat_fires.slots, the slots a queued row stands for

Revision ID: 0012
Revises: 0011

A catch-up (policy ``all``) or a backfill was recorded as one queued row per slot, so the first
pass after a week-long outage inserted ~110,000 rows before the schedules after them in that pass
had their on-time slots recorded. A queued row may now stand for several slots of one schedule
(``slot`` the newest, ``first_slot`` the oldest, ``slot_count`` how many, ``slots`` each of them
as JSON); beats turn it into fires as they publish them. The downgrade turns every such row
back into one queued row per slot, with the task id each would have had.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import sqlalchemy as sa
from alembic import op

from celery_dbeat.core.fires import fire_task_id
from celery_dbeat.store.types import UTCDateTime

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dbeat_fires", schema=None, recreate="never") as batch_op:
        batch_op.add_column(sa.Column("slots", sa.Text(), nullable=True))


def downgrade() -> None:
    fires = sa.table(
        "dbeat_fires",
        sa.column("id", sa.Integer),
        sa.column("schedule_id", sa.Integer),
        sa.column("slot", UTCDateTime()),
        sa.column("manual", sa.Boolean),
        sa.column("origin", sa.String),
        sa.column("status", sa.String),
        sa.column("slot_count", sa.Integer),
        sa.column("first_slot", UTCDateTime()),
        sa.column("task_id", sa.String),
        sa.column("beat", sa.String),
        sa.column("recorded_at", UTCDateTime()),
        sa.column("lease_until", UTCDateTime()),
        sa.column("attempts", sa.Integer),
        sa.column("slots", sa.Text),
    )
    schedules = sa.table("dbeat_schedules", sa.column("id", sa.Integer), sa.column("uid"))
    conn = op.get_bind()
    runs = conn.execute(
        sa.select(fires, schedules.c.uid)
        .join(schedules, schedules.c.id == fires.c.schedule_id)
        .where(fires.c.slots.is_not(None))
    ).all()
    for run in runs:
        slots = [
            datetime.fromisoformat(text).astimezone(timezone.utc) for text in json.loads(run.slots)
        ]
        conn.execute(sa.delete(fires).where(fires.c.id == run.id))
        conn.execute(
            sa.insert(fires),
            [
                {
                    "schedule_id": run.schedule_id,
                    "slot": slot,
                    "manual": False,
                    "origin": run.origin,
                    "status": run.status,
                    "slot_count": 1,
                    "first_slot": None,
                    "task_id": fire_task_id(run.uid, slot),
                    "beat": run.beat,
                    "recorded_at": run.recorded_at,
                    "lease_until": slot,
                    "attempts": 0,
                    "slots": None,
                }
                for slot in slots
            ],
        )
    # Never recreate a table on SQLite (see 0002).
    with op.batch_alter_table("dbeat_fires", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("slots")
