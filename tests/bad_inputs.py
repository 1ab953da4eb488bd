"""The tables of bad schedule inputs (and bad posts of the admins' calendar forms) that every
surface must reject the same way.

Each case is the fields of a schedule as a user would type them (strings, as in a form or on the
command line, where the surface allows it) plus the field the error must name and a fragment of
the message. The Python API, the CLI, Flask-Admin and Django admin tests all iterate this table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from celery_dbeat.core.validation import (
    MAX_CATCHUP_LIMIT,
    MAX_DELAY_SECONDS,
    MAX_JSON_BYTES,
    MAX_TIME_LIMIT_SECONDS,
)


@dataclass(frozen=True)
class BadInput:
    id: str
    #: Overrides of a valid cron schedule named "bad-input", task "proj.tasks.add".
    fields: dict[str, Any] = field(default_factory=dict)
    #: The field the error names ("cron", "timezone", ...), as in ``ValidationError.field``.
    error_field: str = ""
    #: A fragment of the message every surface shows.
    message: str = ""


VALID = {
    "name": "bad-input",
    "task": "proj.tasks.add",
    "kind": "cron",
    "cron": "*/5 * * * *",
    "timezone": "UTC",
    "args": "[1, 2]",
    "kwargs": "{}",
    "options": "{}",
}

BAD_INPUTS = [
    BadInput("cron-minute-out-of-range", {"cron": "61 * * * *"}, "cron", "minute field '61'"),
    BadInput("cron-too-few-fields", {"cron": "* * *"}, "cron", "has 3 fields"),
    BadInput("cron-random", {"cron": "R * * * *"}, "cron", "random (R)"),
    BadInput("cron-backwards-range", {"cron": "5-1 * * * *"}, "cron", "runs backwards"),
    BadInput("cron-never-matches", {"cron": "0 0 30 2 *"}, "cron", "never matches"),
    BadInput("unknown-zone", {"timezone": "Mars/Olympus"}, "timezone", "not a known IANA"),
    BadInput("args-not-json", {"args": "[1, 2"}, "args", "not valid JSON"),
    BadInput("args-not-a-list", {"args": '{"a": 1}'}, "args", "must be a JSON array"),
    BadInput("kwargs-not-an-object", {"kwargs": "[1]"}, "kwargs", "must be a JSON object"),
    BadInput(
        "options-unknown-key", {"options": '{"eta": 5}'}, "options", "unsupported option 'eta'"
    ),
    BadInput(
        "options-bad-priority", {"options": '{"priority": 300}'}, "options.priority", "0..255"
    ),
    BadInput(
        "options-header-overrides-celery",
        {"options": '{"headers": {"id": "x"}}'},
        "options.headers",
        "a header Celery or celery-dbeat sets itself",
    ),
    BadInput(
        "options-header-overrides-celery-in-another-case",
        {"options": '{"headers": {"TASK": "proj.tasks.other"}}'},
        "options.headers",
        "a header Celery or celery-dbeat sets itself",
    ),
    BadInput(
        "options-header-is-dbeat",
        {"options": '{"headers": {"DBeat_Slot": "x"}}'},
        "options.headers",
        "may not be named dbeat_*",
    ),
    BadInput(
        "options-unknown-serializer",
        {"options": '{"serializer": "xml"}'},
        "options.serializer",
        "not a serializer kombu can encode with",
    ),
    BadInput(
        "options-serializer-the-workers-refuse",
        {"options": '{"serializer": "pickle"}'},
        "options.serializer",
        "accept_content ['json'], so workers would refuse its messages",
    ),
    BadInput(
        "options-unknown-compression",
        {"options": '{"compression": "rar"}'},
        "options.compression",
        "not a compression kombu knows",
    ),
    BadInput(
        "options-countdown-too-large",
        {"options": f'{{"countdown": {MAX_DELAY_SECONDS + 1}}}'},
        "options.countdown",
        "at most 2,678,400 seconds",
    ),
    BadInput(
        "options-expires-too-large",
        {"options": '{"expires": 1e9}'},
        "options.expires",
        "at most 2,678,400 seconds",
    ),
    *(
        BadInput(
            f"options-empty-{key.replace('_', '-')}",
            {"options": f'{{"{key}": ""}}'},
            f"options.{key}",
            "must not be empty",
        )
        for key in ("queue", "exchange", "routing_key")
    ),
    BadInput(
        "options-time-limit-absurd",
        {"options": '{"time_limit": 1e308}'},
        "options.time_limit",
        f"at most {MAX_TIME_LIMIT_SECONDS:,}",
    ),
    BadInput(
        "options-soft-time-limit-zero",
        {"options": '{"soft_time_limit": 0}'},
        "options.soft_time_limit",
        "above 0",
    ),
    BadInput(
        "options-soft-time-limit-not-below-the-hard-one",
        {"options": '{"time_limit": 60, "soft_time_limit": 60}'},
        "options.soft_time_limit",
        "must be below time_limit (60 s)",
    ),
    # JSON escapes, so that the character reaches every surface as typed: C0, C1 and bidi.
    *(
        BadInput(
            f"options-{key.replace('_', '-')}-with-a-control-character",
            {"options": f'{{"{key}": "io{escape}x"}}'},
            f"options.{key}",
            f"control character {code} ",
        )
        for key, escape, code in (
            ("queue", "\\n", "U+000A"),
            ("exchange", "\\u001b[2J", "U+001B"),
            ("routing_key", "\\u0085", "U+0085"),
            ("shadow", "\\u202e", "U+202E"),
        )
    ),
    BadInput(
        "options-header-name-with-a-control-character",
        {"options": '{"headers": {"X-Trace\\r\\nX-Admin": "1"}}'},
        "options.headers",
        "the header name contains the control character U+000D",
    ),
    BadInput(
        "options-header-value-with-a-control-character",
        {"options": '{"headers": {"X-Note": "ok\\u0007"}}'},
        "options.headers",
        "the value of header 'X-Note' contains the control character U+0007",
    ),
    BadInput(
        "name-with-a-control-character",
        {"name": "bad\x1b[31minput"},
        "name",
        "control character U+001B",
    ),
    BadInput(
        "name-with-a-zero-width-space",
        {"name": "bad\u200binput"},
        "name",
        "invisible character U+200B",
    ),
    BadInput(
        "catchup-limit-too-large",
        {"catchup_limit": str(MAX_CATCHUP_LIMIT + 1)},
        "catchup_limit",
        "from 0 to 10000",
    ),
    BadInput(
        "args-too-large",
        {"args": '["' + "x" * MAX_JSON_BYTES + '"]'},
        "args",
        "at most 65,535 are allowed",
    ),
    BadInput("interval-too-short", {"kind": "interval", "every": "0.5"}, "every", "at least 1"),
    BadInput("empty-task", {"task": ""}, "task", "non-empty"),
    BadInput("bad-misfire-policy", {"misfire_policy": "sometimes"}, "misfire_policy", "one of"),
    BadInput("bad-dst-gap", {"dst_gap": "later"}, "dst_gap", "one of"),
    BadInput("bad-overlap-policy", {"overlap_policy": "sometimes"}, "overlap_policy", "one of"),
    BadInput("max-run-time-negative", {"max_run_time": "-5"}, "max_run_time", "positive"),
    BadInput(
        "pause-after-no-failure",
        {"pause_after_failures": "0"},
        "pause_after_failures",
        "from 1 to 1000",
    ),
    BadInput("history-limit-not-whole", {"history_limit": "ten"}, "history_limit", "whole"),
    BadInput(
        "max-run-time-not-a-duration", {"max_run_time": "soon"}, "max_run_time", "expected seconds"
    ),
    # Slot arguments (issue 29)
    BadInput("slot-kwarg-not-a-name", {"slot_kwarg": "the slot"}, "slot_kwarg", "identifier"),
    BadInput(
        "slot-kwargs-the-same",
        {"slot_kwarg": "slot", "previous_slot_kwarg": "slot"},
        "previous_slot_kwarg",
        "same keyword as slot_kwarg",
    ),
    BadInput(
        "slot-kwarg-in-kwargs",
        {"kwargs": '{"when": 1}', "slot_kwarg": "when"},
        "slot_kwarg",
        "key of kwargs",
    ),
]


def bad_input_params() -> list[Any]:
    return [pytest.param(case, id=case.id) for case in BAD_INPUTS]


@dataclass(frozen=True)
class BadCalendarPost:
    """A post of an admin's calendar form that is refused on one field, storing nothing."""

    #: Overrides of a valid post: :data:`CALENDAR_POST`.
    fields: dict[str, str]
    #: The field the error is shown on, and a fragment of its message.
    error_field: str
    message: str
    #: Whether a calendar of the posted name exists already (added with the same fields).
    taken: bool = False

    @property
    def posted(self) -> dict[str, str]:
        return {**CALENDAR_POST, **self.fields}


CALENDAR_POST = {"name": "closures", "timezone": "UTC", "dates": "2026-12-25"}

#: The calendar posts both admins refuse.
BAD_CALENDAR_POSTS = [
    pytest.param(
        BadCalendarPost({"dates": "2026-12-25\n25/12/2026"}, "dates", "must be YYYY-MM-DD"),
        id="date",
    ),
    pytest.param(
        BadCalendarPost({"dates": "2026-12-31..2026-12-01"}, "dates", "ends before it starts"),
        id="range",
    ),
    pytest.param(
        BadCalendarPost({"timezone": "Mars/Olympus"}, "timezone", "Mars/Olympus"), id="zone"
    ),
    pytest.param(
        BadCalendarPost({"name": ""}, "name", "must be a non-empty calendar name"), id="name"
    ),
    pytest.param(
        BadCalendarPost(
            {"description": "closed\x1b]0;owned\x07"},
            "description",
            "contains the control character U+001B",
        ),
        id="description-with-a-terminal-escape",
    ),
    pytest.param(
        BadCalendarPost({}, "name", "a calendar named 'closures' exists already", taken=True),
        id="taken-name",
    ),
]
