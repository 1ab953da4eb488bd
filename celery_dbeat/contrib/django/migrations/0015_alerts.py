"""celery-dbeat's Alembic revision 0017: ``dbeat_alerts``, and each schedule's alert settings and
the episode it is in (see ``operations.UpgradeTables``). The unmanaged models read their fields
off the tables; the new table's model needs Django's state of its own."""

from __future__ import annotations

from typing import ClassVar

from django.db import migrations, models

import celery_dbeat.contrib.django.fields
import celery_dbeat.contrib.django.operations

_INSTANT = celery_dbeat.contrib.django.fields.UTCDateTimeField


class Migration(migrations.Migration):
    # UpgradeTables commits through its own connection (see 0001).
    atomic = False

    dependencies: ClassVar[list[tuple[str, str]]] = [("celery_dbeat", "0014_slot_arguments")]

    operations: ClassVar[list[migrations.operations.base.Operation]] = [
        migrations.CreateModel(
            name="Alert",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("alert_id", models.CharField(max_length=36)),
                ("schedule_id", models.IntegerField()),
                ("schedule_name", models.CharField(max_length=200)),
                ("kind", models.CharField(max_length=16)),
                ("episode_slot", _INSTANT()),
                ("slot", _INSTANT(blank=True, null=True)),
                ("error", models.TextField(blank=True, null=True)),
                ("failures", models.IntegerField()),
                ("raised_at", _INSTANT()),
                ("next_attempt_at", _INSTANT(blank=True, null=True)),
                ("lease_until", _INSTANT(blank=True, null=True)),
                ("attempts", models.IntegerField()),
                ("delivered_at", _INSTANT(blank=True, null=True)),
                ("gave_up_at", _INSTANT(blank=True, null=True)),
                ("last_error", models.TextField(blank=True, null=True)),
            ],
            options={
                "verbose_name": "alert",
                "db_table": "dbeat_alerts",
                "ordering": ("-raised_at", "-id"),
                "managed": False,
            },
        ),
        celery_dbeat.contrib.django.operations.UpgradeTables("0017"),
    ]
