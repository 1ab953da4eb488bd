"""celery-dbeat's Alembic revision 0016: ``dbeat_schedules.slot_kwarg`` and
``previous_slot_kwarg``, the keyword names a schedule's fires pass their slots under (see
``operations.UpgradeTables``). The unmanaged models read their fields off the tables, so Django's
state needs no field of its own."""

from __future__ import annotations

from typing import ClassVar

from django.db import migrations

import celery_dbeat.contrib.django.operations


class Migration(migrations.Migration):
    # UpgradeTables commits through its own connection (see 0001).
    atomic = False

    dependencies: ClassVar[list[tuple[str, str]]] = [("celery_dbeat", "0013_rrule")]

    operations: ClassVar[list[migrations.operations.base.Operation]] = [
        celery_dbeat.contrib.django.operations.UpgradeTables("0016"),
    ]
