"""Read-only Django models over celery-dbeat's tables (``managed = False``).

The tables belong to celery-dbeat: its Alembic migrations create them (run by ``manage.py
migrate``, see ``operations.py``, or ``manage.py dbeat_migrate``) and
:class:`celery_dbeat.api.Schedules` writes them, so that every write is
validated and moves ``next_run_at`` by the same rules as the CLI and beat's config sync. These
models are for reading (the admin, your own queries); an ORM write raises :class:`ReadOnlyError`.
``tests/contrib_django/test_models.py`` fails when they drift from ``celery_dbeat.store.models``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, NoReturn

from django.db import models

from ...core.states import schedule_state
from .fields import UTCDateTimeField

__all__ = ["Beat", "Fire", "ReadOnlyError", "Schedule"]


class ReadOnlyError(TypeError):
    """An ORM write to a celery-dbeat table; use :class:`celery_dbeat.api.Schedules` instead."""


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise ReadOnlyError(
        "celery-dbeat's tables are written through celery_dbeat.api.Schedules (it validates, "
        "recomputes next_run_at and bumps the row version); the Django models are read-only"
    )


class ReadOnlyQuerySet(models.QuerySet):
    create = get_or_create = update_or_create = _refuse
    bulk_create = bulk_update = update = delete = _refuse


class ReadOnlyModel(models.Model):
    objects = ReadOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    save = delete = _refuse


class Schedule(ReadOnlyModel):
    id = models.BigAutoField(primary_key=True)
    name = models.CharField(max_length=200, unique=True)
    task = models.CharField(max_length=255)
    args = models.TextField()
    kwargs = models.TextField()
    options = models.TextField()
    enabled = models.BooleanField()
    origin = models.CharField(max_length=16)
    config_enabled = models.BooleanField(null=True, blank=True)
    kind = models.CharField(max_length=16)
    cron = models.CharField(max_length=255, null=True, blank=True)
    timezone = models.CharField(max_length=64, null=True, blank=True)
    cron_days = models.CharField(max_length=8, null=True, blank=True)
    every = models.FloatField(null=True, blank=True)
    run_at = UTCDateTimeField(null=True, blank=True)
    anchor_at = UTCDateTimeField(null=True, blank=True)
    dst_gap = models.CharField(max_length=16, null=True, blank=True)
    dst_fold = models.CharField(max_length=16, null=True, blank=True)
    solar_event = models.CharField(max_length=32, null=True, blank=True)
    latitude = models.FloatField(null=True, blank=True)
    longitude = models.FloatField(null=True, blank=True)
    start_at = UTCDateTimeField(null=True, blank=True)
    end_at = UTCDateTimeField(null=True, blank=True)
    max_runs = models.IntegerField(null=True, blank=True)
    run_count = models.IntegerField()
    misfire_policy = models.CharField(max_length=16, null=True, blank=True)
    misfire_grace = models.FloatField(null=True, blank=True)
    catchup_limit = models.IntegerField(null=True, blank=True)
    jitter = models.FloatField(null=True, blank=True)
    overlap_policy = models.CharField(max_length=16, null=True, blank=True)
    max_run_time = models.FloatField(null=True, blank=True)
    next_run_at = UTCDateTimeField(null=True, blank=True)
    due_at = UTCDateTimeField(null=True, blank=True)
    last_slot = UTCDateTimeField(null=True, blank=True)
    last_error = models.TextField(null=True, blank=True)
    finished_at = UTCDateTimeField(null=True, blank=True)
    version = models.IntegerField()
    created_at = UTCDateTimeField()
    updated_at = UTCDateTimeField()

    class Meta:
        managed = False
        db_table = "dbeat_schedules"
        ordering = ("name",)
        verbose_name = "schedule"

    def __str__(self) -> str:
        return str(self.name)

    @property
    def state(self) -> str:
        """``active``, ``paused``, ``finished`` or ``error`` (:mod:`celery_dbeat.core.states`)."""
        return schedule_state(self)


class Fire(ReadOnlyModel):
    id = models.BigAutoField(primary_key=True)
    schedule = models.ForeignKey(
        Schedule,
        on_delete=models.DO_NOTHING,  # the database cascades; the API deletes history itself
        db_column="schedule_id",
        db_constraint=False,
        related_name="fires",
    )
    slot = UTCDateTimeField()
    manual = models.BooleanField()
    status = models.CharField(max_length=16)
    slot_count = models.IntegerField()
    first_slot = UTCDateTimeField(null=True, blank=True)
    task_id = models.CharField(max_length=36, null=True, blank=True)
    beat = models.CharField(max_length=255, null=True, blank=True)
    recorded_at = UTCDateTimeField()
    sent_at = UTCDateTimeField(null=True, blank=True)
    lease_until = UTCDateTimeField(null=True, blank=True)
    attempts = models.IntegerField()
    error = models.TextField(null=True, blank=True)
    run_status = models.CharField(max_length=16, null=True, blank=True)
    started_at = UTCDateTimeField(null=True, blank=True)
    finished_at = UTCDateTimeField(null=True, blank=True)
    runtime = models.FloatField(null=True, blank=True)
    worker = models.CharField(max_length=255, null=True, blank=True)
    run_error = models.TextField(null=True, blank=True)

    class Meta:
        managed = False
        db_table = "dbeat_fires"
        ordering = ("-slot", "-id")
        verbose_name = "fire"

    def __str__(self) -> str:
        kind = "manual fire" if self.manual else "fire"
        return f"{kind} of schedule {self.schedule_id} at {self.slot:%Y-%m-%d %H:%M:%S} UTC"

    @property
    def lag(self) -> timedelta | None:
        """How long after its slot the fire reached the broker (as ``FireInfo.lag``)."""
        if self.sent_at is None:
            return None
        lag: timedelta = self.sent_at - self.slot
        return lag

    @property
    def outcome(self) -> str:
        """The run's status once the worker reported on it, else the fire's (as
        ``FireInfo.outcome``)."""
        return str(self.run_status or self.status)

    @property
    def run_duration(self) -> timedelta | None:
        """How long the run took (as ``FireInfo.run_duration``)."""
        if self.runtime is not None:
            return timedelta(seconds=self.runtime)
        if self.started_at is not None and self.finished_at is not None:
            taken: timedelta = self.finished_at - self.started_at
            return taken
        return None


class Beat(ReadOnlyModel):
    name = models.CharField(max_length=255, primary_key=True)
    hostname = models.CharField(max_length=255)
    pid = models.IntegerField()
    version = models.CharField(max_length=32)
    started_at = UTCDateTimeField()
    last_seen_at = UTCDateTimeField()

    class Meta:
        managed = False
        db_table = "dbeat_beats"
        ordering = ("name",)
        verbose_name = "beat"

    def __str__(self) -> str:
        return str(self.name)
