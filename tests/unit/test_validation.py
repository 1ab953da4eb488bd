"""What a schedule sends (args, kwargs, options as plain JSON), and duration parsing."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from celery_dbeat import Cron, Every
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.durations import parse_duration
from celery_dbeat.core.errors import ValidationError
from celery_dbeat.core.validation import (
    ALLOWED_OPTIONS,
    CELERY_ACCEPT_CONTENT,
    MAX_CATCHUP_LIMIT,
    MAX_DELAY_SECONDS,
    MAX_JSON_BYTES,
    MAX_TIME_LIMIT_SECONDS,
    RESERVED_HEADERS,
    check_accepted,
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


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"headers": {"trace": "abc", "x-id": 1}}, id="custom-headers"),
        pytest.param({"headers": {"my_dbeat_tag": 1}}, id="dbeat-not-a-prefix"),
        pytest.param({"headers": {}}, id="no-headers"),
        pytest.param({"serializer": "json"}, id="json"),
        pytest.param({"serializer": "pickle"}, id="pickle"),
        pytest.param({"serializer": "yaml"}, id="yaml"),
        pytest.param({"compression": "gzip"}, id="gzip"),
        pytest.param({"compression": "zlib"}, id="zlib"),
        pytest.param({"compression": "bzip2"}, id="bzip2"),
        pytest.param({"compression": "application/x-gzip"}, id="compression-content-type"),
        pytest.param({"serializer": None, "compression": None}, id="null-encoding"),
        pytest.param({"countdown": MAX_DELAY_SECONDS}, id="countdown-at-the-bound"),
        pytest.param({"expires": float(MAX_DELAY_SECONDS)}, id="expires-at-the-bound"),
        pytest.param({"time_limit": MAX_TIME_LIMIT_SECONDS}, id="time-limit-at-the-bound"),
        pytest.param({"soft_time_limit": 0.5}, id="soft-time-limit-alone"),
        pytest.param({"queue": "io", "exchange": "tasks", "routing_key": "io.x"}, id="routing"),
    ],
)
def test_options_that_publish_as_asked_are_accepted(value: dict[str, Any]) -> None:
    assert parse_options(value) == value


@pytest.mark.parametrize(
    ("value", "field", "fragment"),
    [
        *(
            pytest.param(
                {"headers": {name: "x"}}, "options.headers", "sets itself", id=f"header-{name}"
            )
            for name in sorted(RESERVED_HEADERS)
        ),
        *(
            pytest.param(
                {"headers": {name: "x"}}, "options.headers", "sets itself", id=f"header-{name}"
            )
            for name in ("ID", "Task", "ETA", "Root_Id", "CELERY_BEAT_TASK")
        ),
        pytest.param(
            {"headers": {"dbeat_schedule": "x"}}, "options.headers", "dbeat_*", id="dbeat-schedule"
        ),
        pytest.param(
            {"headers": {"DBEAT_slot": "x"}}, "options.headers", "dbeat_*", id="dbeat-any-case"
        ),
        pytest.param(
            {"headers": {"dbeat_mine": 1}}, "options.headers", "dbeat_*", id="dbeat-any-name"
        ),
        pytest.param({"serializer": "xml"}, "options.serializer", "json", id="unknown-serializer"),
        pytest.param({"serializer": "JSON"}, "options.serializer", "json", id="serializer-case"),
        pytest.param({"serializer": "raw"}, "options.serializer", "json", id="raw-serializer"),
        pytest.param({"serializer": ""}, "options.serializer", "json", id="empty-serializer"),
        pytest.param({"compression": "rar"}, "options.compression", "gzip", id="unknown-codec"),
        pytest.param({"compression": ""}, "options.compression", "gzip", id="empty-codec"),
        pytest.param(
            {"countdown": MAX_DELAY_SECONDS + 1}, "options.countdown", "2,678,400", id="countdown"
        ),
        pytest.param({"expires": 1e12}, "options.expires", "31 days", id="expires"),
        pytest.param({"expires": float("inf")}, "options.expires", "31 days", id="expires-inf"),
        *(
            pytest.param({key: value}, f"options.{key}", "must not be empty", id=f"{key}-{shown}")
            for key in ("queue", "exchange", "routing_key")
            for value, shown in (("", "empty"), ("  ", "blank"))
        ),
        *(
            pytest.param({key: value}, f"options.{key}", "at most 604,800", id=f"{key}-{shown}")
            for key in ("time_limit", "soft_time_limit")
            for value, shown in (
                (0, "zero"),
                (-1, "negative"),
                (MAX_TIME_LIMIT_SECONDS + 1, "past-the-bound"),
                (1e308, "absurd"),
                (float("inf"), "infinite"),
                (float("nan"), "nan"),
                (10**400, "beyond-a-float"),
            )
        ),
        pytest.param(
            {"time_limit": 60, "soft_time_limit": 90},
            "options.soft_time_limit",
            "must be below time_limit (60 s)",
            id="soft-limit-after-the-hard-one",
        ),
    ],
)
def test_options_that_would_break_publishing_are_refused_naming_the_option(
    value: dict[str, Any], field: str, fragment: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_options(value)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}=")
    assert fragment in str(caught.value)


def test_a_refused_header_is_named_in_the_message() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_options('{"headers": {"root_id": "x"}}')
    assert str(caught.value).startswith("options.headers='root_id': ")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(
            {"queue": "io\n"},
            "options.queue='io\\n': contains the control character U+000A ('\\n') at "
            "position 2; remove it",
            id="queue",
        ),
        pytest.param(
            {"headers": {"X-Trace\x1b[2J": "1"}},
            "options.headers='X-Trace\\x1b[2J': the header name contains the control "
            "character U+001B ('\\x1b') at position 7; remove it",
            id="header-name",
        ),
        pytest.param(
            {"headers": {"X-Note": "\u202eok"}},
            "options.headers='\\u202eok': the value of header 'X-Note' contains the control "
            "character U+202E ('\\u202e') at position 0; remove it",
            id="header-value",
        ),
    ],
)
def test_a_control_character_in_an_option_is_refused_showing_the_value_escaped(
    value: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_options(value)
    assert str(caught.value) == message


def test_only_header_values_that_are_text_are_checked_for_control_characters() -> None:
    assert parse_options({"headers": {"X-Count": 3, "X-Tags": ["a\nb"]}})["headers"]["X-Count"] == 3


def test_beat_s_own_headers_are_reserved() -> None:
    """Beat sets these on every fire; a schedule must not replace them."""
    assert {"celery_beat_task", "id", "task", "eta"} <= RESERVED_HEADERS


def test_a_serializer_kombu_lists_but_cannot_encode_with_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kombu.serialization import registry  # type: ignore[attr-defined]

    monkeypatch.setitem(registry.name_to_type, "missing", "application/x-missing")
    with pytest.raises(ValidationError) as caught:
        parse_options({"serializer": "missing"})
    assert caught.value.field == "options.serializer"


def test_a_serializer_the_app_registers_is_accepted() -> None:
    from kombu.serialization import register, unregister

    register("upper", lambda v: json.dumps(v).upper(), json.loads, "application/x-upper")
    try:
        assert parse_options({"serializer": "upper"}) == {"serializer": "upper"}
    finally:
        unregister("upper")


def test_a_text_parsed_again_gives_fresh_values_and_a_bad_one_is_refused_every_time() -> None:
    # The beat parses the same stored texts when it plans and when it publishes each fire.
    for _ in range(2):
        args, kwargs = parse_args('[{"a": [1]}]'), parse_kwargs('{"k": {"v": 1}}')
        options = parse_options('{"headers": {"h": "x"}, "queue": "q"}')
        assert (args, kwargs, options) == (
            [{"a": [1]}],
            {"k": {"v": 1}},
            {"headers": {"h": "x"}, "queue": "q"},
        )
        args[0]["a"].append(2)  # the caller's to change
        kwargs["k"]["v"] = 2
        options.pop("headers")
    for _ in range(2):
        with pytest.raises(ValidationError, match="must be JSON-serialisable"):
            parse_args("[NaN]")
        with pytest.raises(ValidationError, match="unsupported option 'eta'"):
            parse_options('{"eta": 1}')


def test_a_serializer_accepted_once_is_checked_again_once_kombu_no_longer_has_it() -> None:
    from kombu.serialization import register, unregister

    text = '{"serializer": "upper"}'
    register("upper", lambda v: json.dumps(v).upper(), json.loads, "application/x-upper")
    try:
        assert parse_options(text) == {"serializer": "upper"}
    finally:
        unregister("upper")
    with pytest.raises(ValidationError) as caught:
        parse_options(text)
    assert caught.value.field == "options.serializer"


@pytest.mark.parametrize(
    ("accept_content", "serializer"),
    [
        pytest.param(None, "json", id="no-app-json"),
        pytest.param(["json"], "json", id="json"),
        pytest.param(["application/json"], "json", id="accepted-as-a-content-type"),
        pytest.param(["json", "pickle"], "pickle", id="pickle-accepted"),
        pytest.param(["application/x-python-serialize"], "pickle", id="pickle-as-a-content-type"),
        pytest.param(["yaml"], "yaml", id="yaml-accepted"),
        pytest.param(["json"], None, id="no-serializer-option"),
    ],
)
def test_a_serializer_the_workers_accept_passes(
    accept_content: list[str] | None, serializer: str | None
) -> None:
    check_accepted({"serializer": serializer}, accept_content)


@pytest.mark.parametrize(
    ("accept_content", "serializer", "message"),
    [
        pytest.param(
            None,
            "pickle",
            "options.serializer='pickle': is not in Celery's default accept_content ['json'], so "
            "workers would refuse its messages; use 'json', or add 'pickle' to the app's "
            "accept_content and manage schedules with Schedules.from_app(app)",
            id="no-app-pickle",
        ),
        pytest.param(
            ["json"],
            "yaml",
            "options.serializer='yaml': is not in the app's accept_content ['json'], so workers "
            "would refuse its messages; use 'json', or add 'yaml' to accept_content "
            "(CELERY_ACCEPT_CONTENT in Django settings)",
            id="yaml",
        ),
        pytest.param(
            ["application/json", "pickle"],
            "yaml",
            "options.serializer='yaml': is not in the app's accept_content ['application/json', "
            "'pickle'], so workers would refuse its messages; use 'json' or 'pickle', or add "
            "'yaml' to accept_content (CELERY_ACCEPT_CONTENT in Django settings)",
            id="names-every-accepted-serializer",
        ),
        pytest.param(
            ["pickle"],
            "json",
            "options.serializer='json': is not in the app's accept_content ['pickle'], so "
            "workers would refuse its messages; use 'pickle', or add 'json' to accept_content "
            "(CELERY_ACCEPT_CONTENT in Django settings)",
            id="even-json",
        ),
    ],
)
def test_a_serializer_the_workers_refuse_is_refused_saying_which_setting_to_change(
    accept_content: list[str] | None, serializer: str, message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        check_accepted({"serializer": serializer}, accept_content)
    assert caught.value.field == "options.serializer"
    assert str(caught.value) == message


def test_celery_s_default_accept_content_is_json_only() -> None:
    from celery import Celery

    assert tuple(Celery(set_as_current=False).conf.accept_content) == CELERY_ACCEPT_CONTENT


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


@pytest.mark.parametrize(
    ("parse", "field", "value"),
    [
        pytest.param(parse_args, "args", ["x" * MAX_JSON_BYTES], id="args"),
        pytest.param(parse_kwargs, "kwargs", {"k": "x" * MAX_JSON_BYTES}, id="kwargs"),
        pytest.param(
            parse_options, "options", {"headers": {"k": "x" * MAX_JSON_BYTES}}, id="options"
        ),
        pytest.param(parse_args, "args", ["é" * (MAX_JSON_BYTES // 6 + 1)], id="escaped-unicode"),
    ],
)
def test_a_payload_over_the_size_cap_is_refused_naming_the_field_and_the_limit(
    parse: Any, field: str, value: Any
) -> None:
    with pytest.raises(ValidationError) as caught:
        parse(value)
    assert caught.value.field == field
    assert "at most 65,535 are allowed" in str(caught.value)


def test_a_payload_at_the_size_cap_is_accepted() -> None:
    value = ["x" * (MAX_JSON_BYTES - len('[""]'))]
    assert len(dump_json("args", value)) == MAX_JSON_BYTES
    assert parse_args(value) == value


def _with_catchup_limit(limit: Any) -> Definition:
    return Definition.create(
        name="n", task="t", schedule=Cron("* * * * *", "UTC"), catchup_limit=limit
    )


@pytest.mark.parametrize("limit", [0, 1, MAX_CATCHUP_LIMIT, None])
def test_a_catchup_limit_up_to_the_cap_is_accepted(limit: int | None) -> None:
    assert _with_catchup_limit(limit).catchup_limit == limit


@pytest.mark.parametrize("limit", [MAX_CATCHUP_LIMIT + 1, 2**31 - 1, -1])
def test_a_catchup_limit_beyond_the_cap_is_refused_saying_the_range(limit: int) -> None:
    with pytest.raises(ValidationError) as caught:
        _with_catchup_limit(limit)
    assert caught.value.field == "catchup_limit"
    assert "from 0 to 10000" in str(caught.value)


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


def test_an_instant_in_an_error_reads_as_iso_8601_not_as_python() -> None:
    start, end = (
        datetime(2025, 1, 2, tzinfo=timezone.utc),
        datetime(2025, 1, 1, tzinfo=timezone.utc),
    )
    with pytest.raises(ValidationError) as caught:
        Definition.create(name="a", task="t", schedule=Every(60), start_at=start, end_at=end)

    assert str(caught.value) == (
        "end_at=2025-01-01T00:00:00+00:00: is before start_at (2025-01-02T00:00:00+00:00)"
    )
