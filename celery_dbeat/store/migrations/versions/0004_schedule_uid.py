"""a schedule's identity: dbeat_schedules.uid, from which task ids derive

Revision ID: 0004
Revises: 0003

Task ids were derived from the schedule's name, so a schedule that took an old name (a rename, a
removal and re-add, an import, a sync) planned task ids the old one had already used, and the
unique task id refused the write. Each row now has a random ``uid``, kept through renames; rows
that exist get one here. Fires recorded before the upgrade keep their task ids.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

#: 32 random hex digits per row, written by the server (so ``sqlmigrate`` can print it too).
_RANDOM_UID = {
    "postgresql": "md5(random()::text || clock_timestamp()::text || id::text)",
    "mysql": "REPLACE(UUID(), '-', '')",
    "mariadb": "REPLACE(UUID(), '-', '')",
    "sqlite": "lower(hex(randomblob(16)))",
}


def upgrade() -> None:
    # Nullable, also on PostgreSQL and MySQL: SQLite cannot make an added column NOT NULL without
    # recreating the table (which, with foreign keys on, would cascade-delete the fire history),
    # and every backend should behave alike; beat gives a uid to a row inserted by hand without.
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.add_column(sa.Column("uid", sa.String(length=32), nullable=True))
    uid = _RANDOM_UID[op.get_context().dialect.name]
    op.execute(f"UPDATE dbeat_schedules SET uid = {uid} WHERE uid IS NULL")
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.create_index("ix_dbeat_schedules_uid", ["uid"], unique=True)


def downgrade() -> None:
    # Never recreate the table on SQLite (see 0002).
    with op.batch_alter_table("dbeat_schedules", schema=None, recreate="never") as batch_op:
        batch_op.drop_index("ix_dbeat_schedules_uid")
        batch_op.drop_column("uid")
