"""celery-dbeat's Alembic revision 0009: ``dbeat_calendars`` and the ``calendar`` columns of
``dbeat_schedules`` and ``dbeat_fires`` (see ``operations.UpgradeTables``). The unmanaged models
read their fields off the tables; the new table's model needs Django's state of its own."""

from __future__ import annotations

from typing import ClassVar

from django.db import migrations, models

import celery_dbeat.contrib.django.fields
import celery_dbeat.contrib.django.operations


class Migration(migrations.Migration):
    # UpgradeTables commits through its own connection (see 0001).
    atomic = False

    dependencies: ClassVar[list[tuple[str, str]]] = [("celery_dbeat", "0006_backfill")]

    operations: ClassVar[list[migrations.operations.base.Operation]] = [
        migrations.CreateModel(
            name="Calendar",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=200, unique=True)),
                ("timezone", models.CharField(max_length=64)),
                ("dates", models.TextField()),
                ("description", models.TextField(blank=True, null=True)),
                ("version", models.IntegerField()),
                ("created_at", celery_dbeat.contrib.django.fields.UTCDateTimeField()),
                ("updated_at", celery_dbeat.contrib.django.fields.UTCDateTimeField()),
            ],
            options={
                "verbose_name": "calendar",
                "db_table": "dbeat_calendars",
                "ordering": ("name",),
                "managed": False,
            },
        ),
        celery_dbeat.contrib.django.operations.UpgradeTables("0009"),
    ]
