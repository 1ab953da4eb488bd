"""Config sync refuses the shared table of bad inputs like every other surface does: a
``beat_schedule`` entry holding one stops beat (and ``dbeat sync``) with one error naming the
entry, the field and the value, before anything is written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from celery import Celery

from celery_dbeat import Cron
from celery_dbeat.beat_schedule import definitions_from_app
from celery_dbeat.core.errors import ConfigurationError
from tests.bad_inputs import BAD_INPUTS, VALID, BadInput

#: The spec's fields: a ``beat_schedule`` entry gives a Celery schedule instead, whose own
#: conversion is tested in test_config_sync.py.
SPEC_FIELDS = frozenset({"kind", "cron", "timezone", "every", "dst_gap"})
WHOLE_FIELDS = frozenset({"catchup_limit", "max_runs", "pause_after_failures", "history_limit"})
JSON_FIELDS = frozenset({"args", "kwargs", "options"})


def _value(key: str, text: str) -> Any:
    """A form's text as a ``beat_schedule`` entry holds it: JSON decoded, whole numbers as
    ``int``; anything else (text that is not JSON, ``"ten"``) as typed, refused the same way."""
    if key in JSON_FIELDS:
        try:
            return json.loads(text)
        except ValueError:
            return text
    if key in WHOLE_FIELDS and text.isdigit():
        return int(text)
    return text


def _entry(fields: dict[str, Any]) -> dict[str, Any]:
    entry = {"task": fields["task"], "schedule": Cron(fields["cron"], fields["timezone"])}
    for key, text in fields.items():
        if key not in SPEC_FIELDS and key not in ("name", "task"):
            entry[key] = _value(key, text)
    return entry


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.id) for c in BAD_INPUTS if not SPEC_FIELDS & set(c.fields)]
)
def test_config_sync_refuses_each_bad_input_naming_the_entry_and_the_field(case: BadInput) -> None:
    fields = {**VALID, **case.fields}
    app = Celery("proj", set_as_current=False)
    app.conf.beat_schedule = {fields["name"]: _entry(fields)}

    with pytest.raises(ConfigurationError) as caught:
        definitions_from_app(app)

    assert caught.value.key == f"beat_schedule[{fields['name']!r}]"
    assert f": {case.error_field}=" in str(caught.value)
    assert case.message in str(caught.value)


def test_the_valid_base_of_the_table_is_synced() -> None:
    app = Celery("proj", set_as_current=False)
    app.conf.beat_schedule = {VALID["name"]: _entry(dict(VALID))}

    (definition,) = definitions_from_app(app)

    assert (definition.name, definition.args) == (VALID["name"], [1, 2])
