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
from typing import Any, NoReturn

import sqlalchemy as sa
from django.db import models

from ...api import FireInfo, ScheduleInfo
from ...core.states import schedule_state
from ...store.models import Base
from ...store.reading import Unreadable
from ...store.types import UTCDateTime
from .fields import UnreadableInstant, UTCDateTimeField

__all__ = ["Alert", "AuditEntry", "Beat", "Calendar", "Fire", "ReadOnlyError", "Schedule"]


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

    def __str__(self) -> str:
        """Its name (a fire and an audit entry, which have none, say more)."""
        return str(self.name)

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


def _columns_of(
    table: str, meta: dict[str, Any], special: dict[str, tuple[str, models.Field]] | None = None
) -> Any:
    """An abstract read-only model with a field per column of the SQLAlchemy ``table``, in
    table order, whose ``Meta`` (with ``meta``'s options) the model over ``table`` inherits;
    ``special`` maps a column to the attribute and field that read it instead (a foreign key)."""
    options = {"abstract": True, "managed": False, "db_table": table, **meta}
    attributes: dict[str, Any] = {"__module__": __name__, "Meta": type("Meta", (), options)}
    for column in Base.metadata.tables[table].columns:
        name, field = (special or {}).get(column.name) or (column.name, _field(column))
        attributes[name] = field
    return type(f"{table.title().replace('_', '')}Columns", (ReadOnlyModel,), attributes)


_ScheduleColumns: Any = _columns_of(
    "dbeat_schedules", {"ordering": ("name",), "verbose_name": "schedule"}
)


class Schedule(_ScheduleColumns):
    @property
    def state(self) -> str:
        """``active``, ``paused``, ``finished`` or ``error`` (:mod:`celery_dbeat.core.states`)."""
        return schedule_state(self)

    #: Whether it comes from the app's ``beat_schedule``: the API's rule, the same property.
    from_beat_schedule = ScheduleInfo.from_beat_schedule


_FireColumns: Any = _columns_of(
    "dbeat_fires",
    {"ordering": ("-slot", "-id"), "verbose_name": "fire"},
    {
        "schedule_id": (
            "schedule",
            models.ForeignKey(
                "Schedule",
                on_delete=models.DO_NOTHING,  # the database cascades; the API deletes history
                db_column="schedule_id",
                db_constraint=False,
                related_name="fires",
            ),
        )
    },
)


class Fire(_FireColumns):
    def __str__(self) -> str:
        kind = "manual fire" if self.manual else "fire"
        at = "an unreadable slot" if self.slot is None else f"{self.slot:%Y-%m-%d %H:%M:%S} UTC"
        return f"{kind} of schedule {self.schedule_id} at {at}"

    #: The API's rules, the same properties.
    lag = FireInfo.lag
    outcome = FireInfo.outcome
    run_duration = FireInfo.run_duration


_BeatColumns: Any = _columns_of("dbeat_beats", {"ordering": ("name",), "verbose_name": "beat"})


class Beat(_BeatColumns):
    """A running beat's heartbeat."""


_AuditColumns: Any = _columns_of(
    "dbeat_audit",
    {
        "ordering": ("-at", "-id"),
        "verbose_name": "audit entry",
        "verbose_name_plural": "audit trail",
    },
)


class AuditEntry(_AuditColumns):
    """One entry of the audit trail: who changed a schedule, from where, when, and how."""

    def __str__(self) -> str:
        return f"{self.action} of {self.schedule_name} by {self.actor}"


_CalendarColumns: Any = _columns_of(
    "dbeat_calendars", {"ordering": ("name",), "verbose_name": "calendar"}
)


class Calendar(_CalendarColumns):
    """An exclusion calendar: the dates on which the schedules naming it do not fire."""


_AlertColumns: Any = _columns_of(
    "dbeat_alerts", {"ordering": ("-raised_at", "-id"), "verbose_name": "alert"}
)


class Alert(_AlertColumns):
    """One alert (:mod:`celery_dbeat.core.alerts`) and its delivery."""

    def __str__(self) -> str:
        return f"{self.kind} alert of {self.schedule_name}"
