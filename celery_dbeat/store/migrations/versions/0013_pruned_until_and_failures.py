"""pruned history and failure streaks: dbeat_schedules.pruned_until, consecutive_failures

Revision ID: 0013
Revises: 0012

The prunes (by age, beyond a ``history_limit``) deleted the fire records that backfill and
``pause_after_failures`` read: a second backfill of a pruned range sent its slots again, and a
monthly schedule under the 30 days' retention never counted two failures. A schedule now keeps
the slot up to which a prune deleted its records (``pruned_until``, NULL until the next prune)
and how many of its runs failed in a row (``consecutive_failures``, counted here from the history
still kept: the failed runs after its newest success). The downgrade drops both; no row is lost.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from celery_dbeat.store.types import UTCDateTime

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_STREAK = """
UPDATE dbeat_schedules SET consecutive_failures = (
    SELECT count(*) FROM dbeat_fires f
    WHERE f.schedule_id = dbeat_schedules.id AND f.run_status = 'failed'
      AND NOT EXISTS (
          SELECT 1 FROM dbeat_fires g
          WHERE g.schedule_id = f.schedule_id AND g.run_status = 'succeeded' AND g.slot > f.slot
      )
)
WHERE EXISTS (
    SELECT 1 FROM dbeat_fires h WHERE h.schedule_id = dbeat_schedules.id AND h.run_status = 'failed'
)
"""


def upgrade() -> None:
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.add_column(sa.Column("pruned_until", UTCDateTime(), nullable=True))
        batch_op.add_column(
            sa.Column("consecutive_failures", sa.Integer(), nullable=False, server_default="0")
        )
    op.execute(_STREAK)


def downgrade() -> None:
    # Never recreate a table on SQLite (see 0002).
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("consecutive_failures")
        batch_op.drop_column("pruned_until")
