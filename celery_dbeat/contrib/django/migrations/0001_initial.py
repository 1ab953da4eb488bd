"""celery-dbeat's tables: Django's state of the read-only models (no SQL: they are unmanaged) and
celery-dbeat's own Alembic migrations, up to revision 0003 (see ``operations.UpgradeTables``)."""

from __future__ import annotations

from typing import ClassVar

import django.db.models.deletion
from django.db import migrations, models

import celery_dbeat.contrib.django.fields
import celery_dbeat.contrib.django.operations


class Migration(migrations.Migration):
    initial = True
    # UpgradeTables commits through its own connection: no Django transaction around it (on
    # SQLite it would hold the lock that connection waits for).
    atomic = False

    dependencies: ClassVar[list[tuple[str, str]]] = []

    operations: ClassVar[list[migrations.operations.base.Operation]] = [
        migrations.CreateModel(
            name="Schedule",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=200, unique=True)),
                ("task", models.CharField(max_length=255)),
                ("args", models.TextField()),
                ("kwargs", models.TextField()),
                ("options", models.TextField()),
                ("enabled", models.BooleanField()),
                ("origin", models.CharField(max_length=16)),
                ("config_enabled", models.BooleanField(blank=True, null=True)),
                ("kind", models.CharField(max_length=16)),
                ("cron", models.CharField(blank=True, max_length=255, null=True)),
                ("timezone", models.CharField(blank=True, max_length=64, null=True)),
                ("cron_days", models.CharField(blank=True, max_length=8, null=True)),
                ("every", models.FloatField(blank=True, null=True)),
                (
                    "run_at",
                    celery_dbeat.contrib.django.fields.UTCDateTimeField(blank=True, null=True),
                ),
                (
                    "anchor_at",
                    celery_dbeat.contrib.django.fields.UTCDateTimeField(blank=True, null=True),
                ),
                ("dst_gap", models.CharField(blank=True, max_length=16, null=True)),
                ("dst_fold", models.CharField(blank=True, max_length=16, null=True)),
                ("solar_event", models.CharField(blank=True, max_length=32, null=True)),
                ("latitude", models.FloatField(blank=True, null=True)),
                ("longitude", models.FloatField(blank=True, null=True)),
                (
                    "start_at",
                    celery_dbeat.contrib.django.fields.UTCDateTimeField(blank=True, null=True),
                ),
                (
                    "end_at",
                    celery_dbeat.contrib.django.fields.UTCDateTimeField(blank=True, null=True),
                ),
                ("max_runs", models.IntegerField(blank=True, null=True)),
                ("run_count", models.IntegerField()),
                ("misfire_policy", models.CharField(blank=True, max_length=16, null=True)),
                ("misfire_grace", models.FloatField(blank=True, null=True)),
                ("catchup_limit", models.IntegerField(blank=True, null=True)),
                ("jitter", models.FloatField(blank=True, null=True)),
                ("overlap_policy", models.CharField(blank=True, max_length=16, null=True)),
                ("max_run_time", models.FloatField(blank=True, null=True)),
                (
                    "next_run_at",
                    celery_dbeat.contrib.django.fields.UTCDateTimeField(blank=True, null=True),
                ),
                (
                    "due_at",
                    celery_dbeat.contrib.django.fields.UTCDateTimeField(blank=True, null=True),
                ),
                (
                    "last_slot",
                    celery_dbeat.contrib.django.fields.UTCDateTimeField(blank=True, null=True),
                ),
                ("last_error", models.TextField(blank=True, null=True)),
                (
                    "finished_at",
                    celery_dbeat.contrib.django.fields.UTCDateTimeField(blank=True, null=True),
                ),
                ("version", models.IntegerField()),
                ("created_at", celery_dbeat.contrib.django.fields.UTCDateTimeField()),
                ("updated_at", celery_dbeat.contrib.django.fields.UTCDateTimeField()),
            ],
            options={
                "verbose_name": "schedule",
                "db_table": "dbeat_schedules",
                "ordering": ("name",),
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="Fire",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                (
                    "schedule",
                    models.ForeignKey(
                        db_column="schedule_id",
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="fires",
                        to="celery_dbeat.schedule",
                    ),
                ),
                ("slot", celery_dbeat.contrib.django.fields.UTCDateTimeField()),
                ("manual", models.BooleanField()),
                ("status", models.CharField(max_length=16)),
                ("slot_count", models.IntegerField()),
                (
                    "first_slot",
                    celery_dbeat.contrib.django.fields.UTCDateTimeField(blank=True, null=True),
                ),
                ("task_id", models.CharField(blank=True, max_length=36, null=True)),
                ("beat", models.CharField(blank=True, max_length=255, null=True)),
                ("recorded_at", celery_dbeat.contrib.django.fields.UTCDateTimeField()),
                (
                    "sent_at",
                    celery_dbeat.contrib.django.fields.UTCDateTimeField(blank=True, null=True),
                ),
                (
                    "lease_until",
                    celery_dbeat.contrib.django.fields.UTCDateTimeField(blank=True, null=True),
                ),
                ("attempts", models.IntegerField()),
                ("error", models.TextField(blank=True, null=True)),
                ("run_status", models.CharField(blank=True, max_length=16, null=True)),
                (
                    "started_at",
                    celery_dbeat.contrib.django.fields.UTCDateTimeField(blank=True, null=True),
                ),
                (
                    "finished_at",
                    celery_dbeat.contrib.django.fields.UTCDateTimeField(blank=True, null=True),
                ),
                ("runtime", models.FloatField(blank=True, null=True)),
                ("worker", models.CharField(blank=True, max_length=255, null=True)),
                ("run_error", models.TextField(blank=True, null=True)),
            ],
            options={
                "verbose_name": "fire",
                "db_table": "dbeat_fires",
                "ordering": ("-slot", "-id"),
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="Beat",
            fields=[
                ("name", models.CharField(max_length=255, primary_key=True, serialize=False)),
                ("hostname", models.CharField(max_length=255)),
                ("pid", models.IntegerField()),
                ("version", models.CharField(max_length=32)),
                ("started_at", celery_dbeat.contrib.django.fields.UTCDateTimeField()),
                ("last_seen_at", celery_dbeat.contrib.django.fields.UTCDateTimeField()),
            ],
            options={
                "verbose_name": "beat",
                "db_table": "dbeat_beats",
                "ordering": ("name",),
                "managed": False,
            },
        ),
        celery_dbeat.contrib.django.operations.UpgradeTables("0003"),
    ]
