"""The Python API rejects the shared table of bad inputs like every other surface does."""

from __future__ import annotations

from typing import Any

import pytest

from celery_dbeat import Cron, Every
from celery_dbeat.api import Schedules
from celery_dbeat.core.definitions import definition_from_form
from celery_dbeat.core.errors import ValidationError
from tests.bad_inputs import VALID, BadInput, bad_input_params

#: The API's own checks do not depend on the database: one private SQLite file is enough.
pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def _add_typed(api: Schedules, fields: dict[str, Any]) -> None:
    if fields["kind"] == "cron":
        spec: Cron | Every = Cron(fields["cron"], fields["timezone"], dst_gap=fields.get("dst_gap"))
    else:
        spec = Every(float(fields["every"]))
    api.add(
        fields["name"],
        fields["task"],
        spec,
        args=fields["args"],
        kwargs=fields["kwargs"],
        options=fields["options"],
        misfire_policy=fields.get("misfire_policy"),
        catchup_limit=None if fields.get("catchup_limit") is None else int(fields["catchup_limit"]),
        overlap_policy=fields.get("overlap_policy"),
        max_run_time=fields.get("max_run_time"),
        pause_after_failures=_whole(fields.get("pause_after_failures")),
        history_limit=_whole(fields.get("history_limit")),
        slot_kwarg=fields.get("slot_kwarg"),
        previous_slot_kwarg=fields.get("previous_slot_kwarg"),
    )


def _whole(value: Any) -> Any:
    """A whole number as the typed API takes it; anything else as given (refused there)."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


def _create_from_form(api: Schedules, fields: dict[str, Any]) -> None:
    api.create(definition_from_form(fields))


@pytest.mark.parametrize("case", bad_input_params())
@pytest.mark.parametrize("path", ["typed-add", "plain-form-create"])
def test_the_api_rejects_each_bad_input_naming_the_field_and_stores_nothing(
    api: Schedules, case: BadInput, path: str
) -> None:
    fields = {**VALID, **case.fields}
    write = _add_typed if path == "typed-add" else _create_from_form
    with pytest.raises(ValidationError) as caught:
        write(api, fields)
    assert caught.value.field == case.error_field
    assert case.message in str(caught.value)
    assert api.list() == []


def test_the_valid_base_of_the_table_is_accepted(api: Schedules) -> None:
    _add_typed(api, dict(VALID))
    assert [info.name for info in api.list()] == [VALID["name"]]
