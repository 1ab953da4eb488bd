"""celery-dbeat's Alembic revision 0011: ``dbeat_audit``, the trail of edits (see
``operations.UpgradeTables``)."""

from __future__ import annotations

from typing import ClassVar

from django.db import migrations, models

import celery_dbeat.contrib.django.fields
import celery_dbeat.contrib.django.operations


class Migration(migrations.Migration):
    # UpgradeTables commits through its own connection (see 0001).
    atomic = False

    dependencies: ClassVar[list[tuple[str, str]]] = [("celery_dbeat", "0008_pause_notes")]

    operations: ClassVar[list[migrations.operations.base.Operation]] = [
        migrations.CreateModel(
            name="AuditEntry",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("at", celery_dbeat.contrib.django.fields.UTCDateTimeField()),
                ("actor", models.CharField(max_length=255)),
                ("surface", models.CharField(max_length=32)),
                ("action", models.CharField(max_length=32)),
                ("schedule_name", models.CharField(blank=True, max_length=200, null=True)),
                ("schedule_uid", models.CharField(blank=True, max_length=32, null=True)),
                ("changes", models.TextField()),
            ],
            options={
                "verbose_name": "audit entry",
                "verbose_name_plural": "audit trail",
                "db_table": "dbeat_audit",
                "ordering": ("-at", "-id"),
                "managed": False,
            },
        ),
        celery_dbeat.contrib.django.operations.UpgradeTables("0011"),
    ]
