"""a calendar's identity: dbeat_calendars.uid, by which beats cache it

Revision ID: 0014
Revises: 0013

Beats cached a calendar by ``(name, version)``, and a calendar removed and created again under
its name starts again at version 1: a beat that had read the old one kept its dates, while a beat
started since used the new ones. Each row now has a random ``uid``, given when it is created and
never reused, and beats cache by ``(uid, version)``; rows that exist get one here.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

#: 32 random hex digits per row, written by the server, as in 0004.
_RANDOM_UID = {
    "postgresql": "md5(random()::text || clock_timestamp()::text || id::text)",
    "mysql": "REPLACE(UUID(), '-', '')",
    "mariadb": "REPLACE(UUID(), '-', '')",
    "sqlite": "lower(hex(randomblob(16)))",
}


def upgrade() -> None:
    # Nullable, as dbeat_schedules.uid (see 0004): beat reads a row inserted by hand without one
    # again at every batch instead of caching it.
    with op.batch_alter_table("dbeat_calendars", schema=None, recreate="never") as batch_op:
        batch_op.add_column(sa.Column("uid", sa.String(length=32), nullable=True))
    uid = _RANDOM_UID[op.get_context().dialect.name]
    op.execute(f"UPDATE dbeat_calendars SET uid = {uid} WHERE uid IS NULL")
    with op.batch_alter_table("dbeat_calendars", schema=None, recreate="never") as batch_op:
        batch_op.create_index("ix_dbeat_calendars_uid", ["uid"], unique=True)


def downgrade() -> None:
    # Never recreate a table on SQLite (see 0002).
    with op.batch_alter_table("dbeat_calendars", schema=None, recreate="never") as batch_op:
        batch_op.drop_index("ix_dbeat_calendars_uid")
        batch_op.drop_column("uid")
