"""celery-dbeat's Alembic revision 0013: ``dbeat_schedules.pruned_until``, the slot up to which
the prunes deleted fire records, and ``consecutive_failures``, how many runs failed in a row (see
``operations.UpgradeTables``). The unmanaged models read their fields off the tables, so Django's
state needs no field of its own."""

from __future__ import annotations

from typing import ClassVar

from django.db import migrations

import celery_dbeat.contrib.django.operations


class Migration(migrations.Migration):
    # UpgradeTables commits through its own connection (see 0001).
    atomic = False

    dependencies: ClassVar[list[tuple[str, str]]] = [("celery_dbeat", "0010_queued_runs")]

    operations: ClassVar[list[migrations.operations.base.Operation]] = [
        celery_dbeat.contrib.django.operations.UpgradeTables("0013"),
    ]
