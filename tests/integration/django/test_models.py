"""The Django models against celery-dbeat's tables: same columns, UTC instants, no ORM writes."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa

from celery_dbeat import Cron, Once
from celery_dbeat.store.models import Base
from celery_dbeat.store.types import UTCDateTime
from tests.integration.django.support import UTC

Column = tuple[str, bool, bool]  # (type family, nullable, primary key)


def sqlalchemy_columns(table: sa.Table) -> dict[str, Column]:
    def family(kind: Any) -> str:
        if isinstance(kind, UTCDateTime):
            return "utc datetime"
        for cls, name in (
            (sa.Boolean, "boolean"),
            (sa.Integer, "integer"),
            (sa.Float, "float"),
            (sa.Text, "text"),
        ):
            if isinstance(kind, cls):
                return name
        if isinstance(kind, sa.String):
            return f"string({kind.length})"
        return f"unknown {kind!r}"

    return {c.name: (family(c.type), bool(c.nullable), c.primary_key) for c in table.columns}


def django_columns(model: Any) -> dict[str, Column]:
    from celery_dbeat.contrib.django.fields import UTCDateTimeField

    families = {
        "AutoField": "integer",
        "BigAutoField": "integer",
        "IntegerField": "integer",
        "BigIntegerField": "integer",
        "BooleanField": "boolean",
        "FloatField": "float",
        "TextField": "text",
    }

    def family(field: Any) -> str:
        target = field.target_field if field.is_relation else field
        kind = target.get_internal_type()
        if isinstance(field, UTCDateTimeField):  # its own internal type: see fields.py
            return "utc datetime"
        if kind == "DateTimeField":
            return "naive datetime"
        if kind == "CharField":
            return f"string({target.max_length})"
        return families.get(kind, f"unknown {kind}")

    return {f.column: (family(f), f.null, f.primary_key) for f in model._meta.concrete_fields}


def test_every_table_has_a_django_model_and_every_model_a_table(site: Any) -> None:
    from django.apps import apps

    models = {m._meta.db_table for m in apps.get_app_config("celery_dbeat").get_models()}
    assert models == set(Base.metadata.tables)


@pytest.mark.parametrize("table", sorted(Base.metadata.tables))
def test_the_django_model_has_the_columns_of_the_sqlalchemy_table(site: Any, table: str) -> None:
    from django.apps import apps

    (model,) = [
        m for m in apps.get_app_config("celery_dbeat").get_models() if m._meta.db_table == table
    ]
    assert not model._meta.managed
    expected = sqlalchemy_columns(Base.metadata.tables[table])
    actual = django_columns(model)
    assert sorted(set(expected) - set(actual)) == [], "columns missing from the Django model"
    assert sorted(set(actual) - set(expected)) == [], "Django model columns not in the table"
    wrong = {c: (actual[c], expected[c]) for c in expected if actual[c] != expected[c]}
    assert wrong == {}, "(django, sqlalchemy) differ"


@pytest.mark.parametrize("alias", ["default", "postgres"])
def test_the_django_models_match_the_migrated_tables(site: Any, alias: str) -> None:
    from django.apps import apps
    from django.db import connections

    if alias == "postgres":
        site.require_postgres()
    models = list(apps.get_app_config("celery_dbeat").get_models())
    assert {m._meta.db_table for m in models} == set(Base.metadata.tables)
    with connections[alias].cursor() as cursor:
        for model in models:
            description = connections[alias].introspection.get_table_description(
                cursor, model._meta.db_table
            )
            stored = {column.name: bool(column.null_ok) for column in description}
            fields = {f.column: f.null for f in model._meta.concrete_fields}
            assert fields == stored, model._meta.db_table


# Instants ----------------------------------------------------------------------------------------

#: An instant with microseconds, far from midnight in New York, Tokyo and UTC alike.
AT = datetime(2030, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


@pytest.fixture
def stored(api: Any) -> Any:
    from celery_dbeat.clock import FixedClock

    api.clock = FixedClock(AT - timedelta(days=1))
    return api.add("launch", "proj.tasks.launch", Once(AT), start_at=AT - timedelta(hours=1))


def read(alias: str) -> Any:
    from celery_dbeat.contrib.django.models import Schedule

    return Schedule.objects.using(alias).get(name="launch")


@pytest.mark.usefixtures("stored")
@pytest.mark.parametrize(
    "alias",
    [
        pytest.param("default", id="time-zone-new-york"),
        pytest.param("shifted", id="database-time-zone-tokyo"),
    ],
)
def test_instants_read_back_as_the_aware_utc_values_stored(alias: str) -> None:
    row = read(alias)
    assert row.run_at == AT
    assert row.run_at.utcoffset() == timedelta(0)
    assert row.start_at == AT - timedelta(hours=1)
    assert row.created_at == AT - timedelta(days=1)


@pytest.mark.usefixtures("stored")
def test_instants_read_back_as_aware_utc_without_django_time_zone_support() -> None:
    from django.test import override_settings

    with override_settings(USE_TZ=False):
        row = read("default")
    assert row.run_at == AT
    assert row.run_at.utcoffset() == timedelta(0)


@pytest.mark.usefixtures("stored")
@pytest.mark.parametrize("alias", ["default", "shifted"])
def test_queries_compare_instants_as_stored(alias: str) -> None:
    from celery_dbeat.contrib.django.models import Schedule

    rows = Schedule.objects.using(alias)
    assert rows.filter(run_at=AT).count() == 1
    assert rows.filter(run_at__lt=AT).count() == 0
    assert rows.filter(run_at__lte=AT).count() == 1
    assert rows.filter(run_at__gt=AT - timedelta(microseconds=1)).count() == 1
    # The same instant written in another zone.
    assert rows.filter(run_at=AT.astimezone(ZoneInfo("Asia/Tokyo"))).count() == 1


def test_instants_round_trip_on_postgresql(site: Any) -> None:
    from django.test import override_settings

    from celery_dbeat.clock import FixedClock
    from celery_dbeat.contrib.django import schedules

    site.require_postgres()
    with override_settings(DBEAT_DATABASE_ALIAS="postgres"):
        api = schedules()
        api.clock = FixedClock(AT - timedelta(days=1))
        api.add("launch", "proj.tasks.launch", Once(AT))
        row = read("postgres")
        assert (row.run_at, row.run_at.utcoffset()) == (AT, timedelta(0))
        assert type(row).objects.using("postgres").filter(run_at__lte=AT).count() == 1


def test_the_django_models_refuse_orm_writes(api: Any) -> None:
    from celery_dbeat.contrib.django.models import ReadOnlyError, Schedule

    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    row = Schedule.objects.get(name="report")
    row.task = "other"
    with pytest.raises(ReadOnlyError, match=r"celery_dbeat\.api\.Schedules"):
        row.save()
    with pytest.raises(ReadOnlyError):
        Schedule.objects.filter(name="report").update(task="other")
    with pytest.raises(ReadOnlyError):
        Schedule.objects.all().delete()
    with pytest.raises(ReadOnlyError):
        row.delete()
    assert api.get("report").task == "proj.tasks.report"
