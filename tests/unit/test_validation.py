"""What a schedule sends (args, kwargs, options as plain JSON), and duration parsing."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from celery_dbeat.durations import parse_duration
from celery_dbeat.errors import ValidationError
from celery_dbeat.validation import (
    ALLOWED_OPTIONS,
    dump_json,
    parse_args,
    parse_kwargs,
    parse_options,
)

# args -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("[]", [], id="empty-json"),
        pytest.param('[1, "a", null, {"k": [true]}]', [1, "a", None, {"k": [True]}], id="nested"),
        pytest.param(b"[1]", [1], id="bytes"),
        pytest.param([1, 2], [1, 2], id="list"),
        pytest.param((1, 2), [1, 2], id="tuple-becomes-list"),
        pytest.param('["\\u00e9t\\u00e9"]', ["été"], id="unicode"),
    ],
)
def test_good_args_parse_to_a_list(value: Any, expected: list[Any]) -> None:
    assert parse_args(value) == expected


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        pytest.param("[1, 2", "not valid JSON", id="truncated"),
        pytest.param("", "not valid JSON", id="empty-string"),
        pytest.param("(1, 2)", "not valid JSON", id="python-tuple-syntax"),
        pytest.param('{"a": 1}', "JSON array", id="object"),
        pytest.param("1", "JSON array", id="number"),
        pytest.param("null", "JSON array", id="null"),
        pytest.param(None, "JSON array", id="none"),
        pytest.param({"a": 1}, "JSON array", id="dict"),
        pytest.param("[NaN]", "JSON-serialisable", id="nan-literal"),
        pytest.param([float("inf")], "JSON-serialisable", id="infinity"),
        pytest.param([object()], "JSON-serialisable", id="python-object"),
        pytest.param([b"raw"], "JSON-serialisable", id="bytes-item"),
    ],
)
def test_bad_args_are_rejected_naming_args(value: Any, fragment: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_args(value)
    assert caught.value.field == "args"
    assert str(caught.value).startswith("args=")
    assert fragment in str(caught.value)


# kwargs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("{}", {}, id="empty-json"),
        pytest.param('{"a": 1, "b": [null]}', {"a": 1, "b": [None]}, id="json"),
        pytest.param({"a": {"b": 1}}, {"a": {"b": 1}}, id="dict"),
    ],
)
def test_good_kwargs_parse_to_a_dict(value: Any, expected: dict[str, Any]) -> None:
    assert parse_kwargs(value) == expected


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        pytest.param("{", "not valid JSON", id="truncated"),
        pytest.param("{'a': 1}", "not valid JSON", id="python-quotes"),
        pytest.param("[]", "JSON object", id="array"),
        pytest.param("null", "JSON object", id="null"),
        pytest.param({1: "a"}, "string keys", id="int-key"),
        pytest.param({"a": {1, 2}}, "JSON-serialisable", id="set-value"),
        pytest.param({"a": float("nan")}, "JSON-serialisable", id="nan-value"),
    ],
)
def test_bad_kwargs_are_rejected_naming_kwargs(value: Any, fragment: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_kwargs(value)
    assert caught.value.field == "kwargs"
    assert fragment in str(caught.value)


# options --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("{}", id="empty"),
        pytest.param('{"queue": "reports", "priority": 0}', id="queue-and-lowest-priority"),
        pytest.param({"priority": 255}, id="highest-priority"),
        pytest.param({"expires": 30.5, "countdown": 0}, id="numbers"),
        pytest.param({"time_limit": 60, "soft_time_limit": 50}, id="time-limits"),
        pytest.param({"headers": {"x": 1}}, id="headers"),
        pytest.param(
            {"exchange": "e", "routing_key": "r", "serializer": "json", "compression": "gzip"},
            id="routing-and-encoding",
        ),
        pytest.param({"ignore_result": True, "shadow": "nightly"}, id="flags"),
        pytest.param({"routing_key": None, "priority": None}, id="null-values"),
    ],
)
def test_good_options_are_accepted(value: Any) -> None:
    parsed = parse_options(value)
    assert parsed == (json.loads(value) if isinstance(value, str) else value)


@pytest.mark.parametrize(
    ("value", "field", "fragment"),
    [
        pytest.param("{", "options", "not valid JSON", id="truncated"),
        pytest.param("[]", "options", "JSON object", id="array"),
        pytest.param({"task_id": "x"}, "options", "'task_id'", id="task-id-is-ours"),
        pytest.param({"eta": "2024-01-01"}, "options", "'eta'", id="eta-is-a-second-scheduler"),
        pytest.param({"link": "t"}, "options", "unsupported option", id="unknown-option"),
        pytest.param({"priority": 256}, "options.priority", "0..255", id="priority-too-high"),
        pytest.param({"priority": -1}, "options.priority", "0..255", id="priority-negative"),
        pytest.param({"priority": 1.5}, "options.priority", "whole number", id="priority-float"),
        pytest.param({"priority": True}, "options.priority", "whole number", id="priority-bool"),
        pytest.param({"expires": -1}, "options.expires", ">= 0", id="expires-negative"),
        pytest.param({"countdown": "5"}, "options.countdown", "seconds", id="countdown-string"),
        pytest.param({"time_limit": False}, "options.time_limit", "seconds", id="limit-bool"),
        pytest.param({"headers": []}, "options.headers", "JSON object", id="headers-list"),
        pytest.param({"queue": 5}, "options.queue", "string", id="queue-int"),
    ],
)
def test_bad_options_are_rejected_naming_the_option(value: Any, field: str, fragment: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_options(value)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}=")
    assert fragment in str(caught.value)


def test_allowed_options_exclude_task_id_and_eta() -> None:
    assert "task_id" not in ALLOWED_OPTIONS
    assert "eta" not in ALLOWED_OPTIONS


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param({"b": 1, "a": 2}, '{"a": 2, "b": 1}', id="keys-sorted"),
        pytest.param([1, "x"], '[1, "x"]', id="list"),
    ],
)
def test_dump_json_is_canonical(value: Any, expected: str) -> None:
    assert dump_json("args", value) == expected


def test_dump_json_rejects_what_json_cannot_hold() -> None:
    with pytest.raises(ValidationError) as caught:
        dump_json("kwargs", {"a": float("nan")})
    assert caught.value.field == "kwargs"


# Durations ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(30, timedelta(seconds=30), id="int-seconds"),
        pytest.param(2.5, timedelta(seconds=2.5), id="float-seconds"),
        pytest.param(0, timedelta(0), id="zero"),
        pytest.param(-5, timedelta(seconds=-5), id="negative-number"),
        pytest.param(timedelta(minutes=3), timedelta(minutes=3), id="timedelta"),
        pytest.param("30", timedelta(seconds=30), id="numeric-string"),
        pytest.param("1e3", timedelta(seconds=1000), id="exponent-string"),
        pytest.param("30s", timedelta(seconds=30), id="seconds"),
        pytest.param("5m", timedelta(minutes=5), id="minutes"),
        pytest.param("2h", timedelta(hours=2), id="hours"),
        pytest.param("1d", timedelta(days=1), id="days"),
        pytest.param("250ms", timedelta(milliseconds=250), id="milliseconds"),
        pytest.param("1h30m", timedelta(minutes=90), id="compound"),
        pytest.param("1d2h3m4s5ms", timedelta(1, 7384, 5000), id="every-unit"),
        pytest.param("1.5h", timedelta(minutes=90), id="fractional-unit"),
        pytest.param(" 1h 30m ", timedelta(minutes=90), id="spaces"),
        pytest.param("5M", timedelta(minutes=5), id="upper-case"),
    ],
)
def test_good_durations_parse(value: Any, expected: timedelta) -> None:
    assert parse_duration(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("", id="empty"),
        pytest.param("m", id="unit-only"),
        pytest.param("5x", id="unknown-unit"),
        pytest.param("h1", id="unit-first"),
        pytest.param("5m5", id="trailing-number"),
        pytest.param("5 minutes", id="words"),
        pytest.param("nan", id="nan-string"),
        pytest.param(float("nan"), id="nan"),
        pytest.param(float("inf"), id="infinity"),
        pytest.param(True, id="boolean"),
        pytest.param(None, id="none"),
        pytest.param([5], id="list"),
        pytest.param(
            "inf",
            id="infinity-string",
        ),
        pytest.param(
            1e20,
            id="too-large",
        ),
    ],
)
def test_bad_durations_raise_value_error_saying_what_is_accepted(value: Any) -> None:
    with pytest.raises(ValueError, match=r"duration|seconds|number"):
        parse_duration(value)
