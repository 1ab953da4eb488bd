"""A schedule's fields are declared once (celery_dbeat.core.fields), with their types: the typed
signatures take that declaration, and every layer that spells the fields out again for typing's
sake (the table, a definition's attributes, the rows planning and the API read) must have each
one, with the type the table stores; every value round-trips through the plain form that the CLI,
export and admins exchange."""

from __future__ import annotations

import dataclasses
import inspect
from datetime import datetime, timezone
from typing import Any, get_args, get_type_hints

import pytest

from celery_dbeat import Cron, Every, Once, Solar
from celery_dbeat.api import ScheduleInfo, Schedules
from celery_dbeat.core.definitions import (
    CREATE_ARGUMENTS,
    SPEC_COLUMNS,
    Definition,
    definition_from_form,
    definition_to_form,
    form_text,
)
from celery_dbeat.core.errors import ValidationError
from celery_dbeat.core.fields import (
    BY_NAME,
    FIELDS,
    KIND_FIELDS,
    KINDS,
    Form,
    Role,
    ScheduleFields,
    _OwnArguments,
    names,
)
from celery_dbeat.core.fires import ScheduleRow
from celery_dbeat.core.specs import SPEC_CLASSES, Spec, spec_from_fields
from celery_dbeat.store.models import Schedule

FIELD_NAMES = [f.name for f in FIELDS]


def test_every_field_is_a_column_of_the_schedules_table() -> None:
    columns = Schedule.__table__.columns
    assert [name for name in FIELD_NAMES if name not in columns] == []


def test_the_typed_signatures_take_the_declared_fields_and_a_definition_holds_them() -> None:
    settable = tuple(get_type_hints(ScheduleFields))
    assert ("task", "schedule", *settable) == CREATE_ARGUMENTS
    # Schedules.add also takes who made the edit, for the audit trail.
    own = ["name", "task", "schedule"]
    for function, expected in ((Definition.create, own), (Schedules.add, ["self", *own, "actor"])):
        parameters = inspect.signature(function).parameters
        assert [name for name in parameters if name != "fields"] == expected
        assert parameters["fields"].kind is inspect.Parameter.VAR_KEYWORD
        assert get_args(get_type_hints(function)["fields"]) == (ScheduleFields,)
    held = {f.name for f in dataclasses.fields(Definition)} - {"spec"}
    assert held == {"name", "task", *settable}
    assert held == set(names(Role.IDENTITY, Role.PAYLOAD, Role.SWITCH, Role.BOUNDS))


def test_the_rows_planning_and_the_api_read_hold_each_field_as_the_table_stores_it() -> None:
    # Mapped[str | None] -> str | None
    stored = {name: get_args(get_type_hints(Schedule)[name])[0] for name in FIELD_NAMES}
    own = ("name", "task", *SPEC_COLUMNS)
    assert get_type_hints(_OwnArguments) == {name: stored[name] for name in own}
    planned = get_type_hints(ScheduleRow)
    expected = names(Role.IDENTITY, Role.SPEC, Role.BOUNDS, Role.PAYLOAD)
    assert {name: planned.get(name) for name in expected} == {
        name: stored[name] for name in expected
    }
    # The API reads JSON decoded, and the spec as one Spec.
    shown = get_type_hints(ScheduleInfo)
    expected = tuple(name for name in FIELD_NAMES if name not in SPEC_COLUMNS)
    assert {name: shown.get(name) for name in expected} == {
        name: Any if BY_NAME[name].form is Form.JSON else stored[name] for name in expected
    }


def test_each_spec_kind_has_its_fields_and_every_spec_field_a_kind() -> None:
    assert set(KINDS) == {spec.kind for spec in SPEC_CLASSES}
    for kind, fields in KIND_FIELDS.items():
        assert fields, kind
    spec_fields = {f.name for f in FIELDS if f.role is Role.SPEC and f.name != "kind"}
    assert spec_fields == {name for fields in KIND_FIELDS.values() for name in fields}


def test_a_choice_field_lists_its_choices_and_says_what_blank_means() -> None:
    for f in FIELDS:
        if f.form is Form.CHOICE:
            assert f.choices, f.name
            assert f.blank or f.default in f.choices, f.name


SPECS: list[Any] = [
    pytest.param(
        Cron("30 9 * * 1-5", "Europe/Paris", dst_gap="skip", dst_fold="both", days="all"),
        id="cron",
    ),
    pytest.param(Every(90.5), id="interval"),
    pytest.param(Once(datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)), id="once"),
    pytest.param(Solar("sunset", 48.85, 2.35), id="solar"),
]
EVERY_FIELD: ScheduleFields = {
    "args": [1, "two"],
    "kwargs": {"three": 3},
    "options": {"queue": "reports", "priority": 5},
    "enabled": False,
    "start_at": datetime(2029, 1, 1, tzinfo=timezone.utc),
    "end_at": datetime(2031, 1, 1, tzinfo=timezone.utc),
    "max_runs": 12,
    "misfire_policy": "all",
    "misfire_grace": 5400.0,
    "catchup_limit": 7,
    "jitter": 30.0,
    "overlap_policy": "buffer_one",
    "max_run_time": 7200.0,
    "calendar": "uk-holidays",
    "pause_after_failures": 3,
    "history_limit": 20,
    "slot_kwarg": "slot",
    "previous_slot_kwarg": "previous_slot",
    "alert_after_failures": 2,
    "alert_deadline": 900.0,
    "alert_task": "proj.tasks.on_alert",
    "alert_webhook": "https://hooks.example.com/dbeat?token=x",
}


@pytest.mark.parametrize("spec", SPECS)
def test_every_field_round_trips_through_the_plain_form(spec: Spec) -> None:
    definition = Definition.create(name="report", task="proj.tasks.report", schedule=spec)
    full = Definition.create(name="report", task="proj.tasks.report", schedule=spec, **EVERY_FIELD)
    for one in (definition, full):
        assert definition_from_form(definition_to_form(one)) == one
    assert set(EVERY_FIELD) | {"name", "task"} | set(SPEC_COLUMNS) == set(FIELD_NAMES)


@pytest.mark.parametrize("spec", SPECS)
def test_a_stored_row_shown_in_a_form_and_submitted_unchanged_stores_the_same_columns(
    spec: Spec,
) -> None:
    definition = Definition.create(
        name="report", task="proj.tasks.report", schedule=spec, **EVERY_FIELD
    )
    row = type("Row", (), {"name": "report", "enabled": False, **definition.columns()})
    shown = form_text(row)
    assert all(isinstance(value, (str, bool)) for value in shown.values()), shown
    again = definition_from_form(shown)
    assert again.columns() == definition.columns()
    assert spec_from_fields(again.spec) == spec


@pytest.mark.parametrize(
    ("field", "typed", "message"),
    [
        pytest.param("max_runs", "twelve", "must be a whole number", id="whole"),
        pytest.param("latitude", "north", "must be a number", id="number"),
        pytest.param("start_at", "2030-01-01T00:00:00", "needs a time zone offset", id="naive"),
        pytest.param("enabled", "maybe", "must be true or false", id="flag"),
        pytest.param("every", "", "is required for an interval schedule", id="required"),
        pytest.param("every", "ten", "", id="duration"),
    ],
)
def test_a_badly_typed_value_is_refused_naming_its_field(
    field: str, typed: str, message: str
) -> None:
    kind = "solar" if field == "latitude" else "interval"
    form = {"name": "n", "task": "t", "kind": kind, "every": "60"}
    if kind == "solar":
        form.update(solar_event="sunrise", latitude="0", longitude="0")
    form[field] = typed
    with pytest.raises(ValidationError) as caught:
        definition_from_form(form)
    assert caught.value.field == field
    assert message in str(caught.value)
