"""Read-only Django models over celery-dbeat's tables (``managed = False``).

The tables belong to celery-dbeat: its Alembic migrations create them (run by ``manage.py
migrate``, see ``operations.py``, or ``manage.py dbeat_migrate``) and
:class:`celery_dbeat.api.Schedules` writes them, so that every write is
validated and moves ``next_run_at`` by the same rules as the CLI and beat's config sync. These
models are for reading (the admin, your own queries); an ORM write raises :class:`ReadOnlyError`.
Their fields are read off the SQLAlchemy tables (``celery_dbeat.store.models``), one per column,
so a new column needs no edit here; ``tests/integration/django/test_models.py`` checks the result
against the tables and the migrated databases.

An instant the field cannot read (PostgreSQL's ``'-infinity'``, text that is no timestamp in
SQLite; see ``fields.py``) is ``None`` on the instance, whose ``unreadable`` says which columns
and why; a schedule's ``last_error`` then says so, as celery-dbeat's own reads do
(``store/reading.py``), so the schedule shows as in error.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, NoReturn

import sqlalchemy as sa
from django.db import models

from ...api import ScheduleInfo
from ...core.states import schedule_state
from ...store.models import Base
from ...store.reading import Unreadable
from ...store.types import UTCDateTime
from .fields import UnreadableInstant, UTCDateTimeField

__all__ = ["AuditEntry", "Beat", "Calendar", "Fire", "ReadOnlyError", "Schedule"]


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
    #: What of this row cannot be read (those columns are ``None``), if anything.
    unreadable: Unreadable | None = None

    class Meta:
        abstract = True

    save = delete = _refuse

    @classmethod
    def from_db(
        cls, db: str | None, field_names: Sequence[str], values: Sequence[Any], **options: Any
    ) -> Any:
        """``options``: what Django passes on (``fetch_mode`` from Django 6.1 on, which warns
        about an override that does not take it)."""
        pairs = zip(field_names, values, strict=True)
        bad = {n: v for n, v in pairs if isinstance(v, UnreadableInstant)}
        if not bad:
            return super().from_db(db, field_names, values, **options)
        readable = [None if isinstance(v, UnreadableInstant) else v for v in values]
        row = super().from_db(db, field_names, readable, **options)
        reasons = [str(v) if len(bad) == 1 else f"{n}: {v}" for n, v in bad.items()]
        row.unreadable = Unreadable(tuple(bad), "; ".join(reasons), cls._meta.db_table)
        if "last_error" in field_names:
            row.last_error = str(row.unreadable)
        return row


def _field(column: sa.Column[Any]) -> models.Field:
    """The Django field reading ``column`` as SQLAlchemy writes it."""
    nullable = {"null": True, "blank": True} if column.nullable and not column.primary_key else {}
    kind = column.type
    if column.primary_key and isinstance(kind, sa.Integer):
        return models.BigAutoField(primary_key=True)
    if isinstance(kind, UTCDateTime):
        return UTCDateTimeField(**nullable)
    if isinstance(kind, sa.Text):
        return models.TextField(**nullable)
    if isinstance(kind, sa.String):
        return models.CharField(max_length=kind.length, primary_key=column.primary_key, **nullable)
    if isinstance(kind, sa.Boolean):
        return models.BooleanField(**nullable)
    if isinstance(kind, sa.Float):
        return models.FloatField(**nullable)
    if isinstance(kind, sa.Integer):
        return models.IntegerField(**nullable)
    raise TypeError(f"no Django field for {column.table.name}.{column.name} ({kind!r})")


def _columns_of(table: str, **special: tuple[str, models.Field]) -> Any:
    """An abstract read-only model with a field per column of the SQLAlchemy ``table``, in
    table order; ``special`` maps a column to the attribute and field that read it instead
    (a foreign key)."""
    attributes: dict[str, Any] = {
        "__module__": __name__,
        "Meta": type("Meta", (), {"abstract": True}),
    }
    for column in Base.metadata.tables[table].columns:
        name, field = special.get(column.name) or (column.name, _field(column))
        attributes[name] = field
    return type(f"{table.title().replace('_', '')}Columns", (ReadOnlyModel,), attributes)


_ScheduleColumns: Any = _columns_of("dbeat_schedules")


class Schedule(_ScheduleColumns):
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

    #: Whether it comes from the app's ``beat_schedule``: the API's rule, the same property.
    from_beat_schedule = ScheduleInfo.from_beat_schedule


_FireColumns: Any = _columns_of(
    "dbeat_fires",
    schedule_id=(
        "schedule",
        models.ForeignKey(
            "Schedule",
            on_delete=models.DO_NOTHING,  # the database cascades; the API deletes history
            db_column="schedule_id",
            db_constraint=False,
            related_name="fires",
        ),
    ),
)


class Fire(_FireColumns):
    class Meta:
        managed = False
        db_table = "dbeat_fires"
        ordering = ("-slot", "-id")
        verbose_name = "fire"

    def __str__(self) -> str:
        kind = "manual fire" if self.manual else "fire"
        at = "an unreadable slot" if self.slot is None else f"{self.slot:%Y-%m-%d %H:%M:%S} UTC"
        return f"{kind} of schedule {self.schedule_id} at {at}"

    @property
    def lag(self) -> timedelta | None:
        """How long after its slot the fire reached the broker (as ``FireInfo.lag``)."""
        if self.sent_at is None or self.slot is None:  # not sent, or cannot be read
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


_BeatColumns: Any = _columns_of("dbeat_beats")


class Beat(_BeatColumns):
    class Meta:
        managed = False
        db_table = "dbeat_beats"
        ordering = ("name",)
        verbose_name = "beat"

    def __str__(self) -> str:
        return str(self.name)


_AuditColumns: Any = _columns_of("dbeat_audit")


class AuditEntry(_AuditColumns):
    """One entry of the audit trail: who changed a schedule, from where, when, and how."""

    class Meta:
        managed = False
        db_table = "dbeat_audit"
        ordering = ("-at", "-id")
        verbose_name = "audit entry"
        verbose_name_plural = "audit trail"

    def __str__(self) -> str:
        return f"{self.action} of {self.schedule_name} by {self.actor}"


_CalendarColumns: Any = _columns_of("dbeat_calendars")


class Calendar(_CalendarColumns):
    class Meta:
        managed = False
        db_table = "dbeat_calendars"
        ordering = ("name",)
        verbose_name = "calendar"

    def __str__(self) -> str:
        return str(self.name)
