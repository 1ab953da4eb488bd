"""celery-dbeat's Alembic revision 0008: ``dbeat_fires.origin``, which marks a backfill's fires
(see ``operations.UpgradeTables``)."""

from __future__ import annotations

from typing import ClassVar

from django.db import migrations

import celery_dbeat.contrib.django.operations


class Migration(migrations.Migration):
    # UpgradeTables commits through its own connection (see 0001).
    atomic = False

    dependencies: ClassVar[list[tuple[str, str]]] = [("celery_dbeat", "0002_schedule_uid")]

    operations: ClassVar[list[migrations.operations.base.Operation]] = [
        celery_dbeat.contrib.django.operations.UpgradeTables("0008"),
    ]
