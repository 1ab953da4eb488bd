"""Validation of what a schedule sends: args, kwargs and Celery options, all plain JSON.

Nothing stored is ever unpickled or evaluated; every surface and the beat itself parse through
these functions, so a row that passes here is a row beat can publish.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import ValidationError

__all__ = ["ALLOWED_OPTIONS", "dump_json", "parse_args", "parse_kwargs", "parse_options"]

#: Options passed through to ``apply_async``. ``task_id`` is ours (deterministic per fire), and
#: ``eta`` would be a second scheduler; both are refused.
ALLOWED_OPTIONS = frozenset(
    {
        "queue",
        "exchange",
        "routing_key",
        "priority",
        "expires",
        "headers",
        "countdown",
        "time_limit",
        "soft_time_limit",
        "serializer",
        "compression",
        "ignore_result",
        "shadow",
    }
)


#: Deepest nesting of lists and objects accepted in args, kwargs and options.
MAX_DEPTH = 100


def _load(field: str, value: Any) -> Any:
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except RecursionError:
            raise ValidationError(field, value, f"is nested deeper than {MAX_DEPTH}") from None
        except ValueError as exc:
            raise ValidationError(field, value, f"is not valid JSON ({exc})") from None
    return value


def _plain(field: str, value: Any, depth: int = 0) -> None:
    """Refuse what JSON would silently change (object keys that are not strings) and nesting
    deeper than :data:`MAX_DEPTH`."""
    if depth > MAX_DEPTH:
        raise ValidationError(field, value, f"is nested deeper than {MAX_DEPTH}")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(field, key, "JSON object keys must be strings")
            _plain(field, item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _plain(field, item, depth + 1)


def dump_json(field: str, value: Any) -> str:
    _plain(field, value)
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(field, value, f"must be JSON-serialisable ({exc})") from None


def parse_args(value: Any) -> list[Any]:
    data = _load("args", value)
    if isinstance(data, tuple):
        data = list(data)
    if not isinstance(data, list):
        raise ValidationError("args", value, "must be a JSON array")
    dump_json("args", data)
    return data


def parse_kwargs(value: Any) -> dict[str, Any]:
    data = _load("kwargs", value)
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ValidationError("kwargs", value, "must be a JSON object with string keys")
    dump_json("kwargs", data)
    return data


def parse_options(value: Any) -> dict[str, Any]:
    data = _load("options", value)
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ValidationError("options", value, "must be a JSON object with string keys")
    unknown = sorted(set(data) - ALLOWED_OPTIONS)
    if unknown:
        raise ValidationError(
            "options",
            value,
            f"unsupported option {unknown[0]!r}; allowed: {', '.join(sorted(ALLOWED_OPTIONS))}",
        )
    priority = data.get("priority")
    if priority is not None and (
        isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 255
    ):
        raise ValidationError("options.priority", priority, "must be a whole number 0..255")
    for key in ("expires", "countdown", "time_limit", "soft_time_limit"):
        number = data.get(key)
        if number is not None and (
            isinstance(number, bool) or not isinstance(number, (int, float)) or number < 0
        ):
            raise ValidationError(f"options.{key}", number, "must be a number of seconds >= 0")
    headers = data.get("headers")
    if headers is not None and not isinstance(headers, dict):
        raise ValidationError("options.headers", headers, "must be a JSON object")
    for key in ("queue", "exchange", "routing_key", "serializer", "compression", "shadow"):
        text = data.get(key)
        if text is not None and not isinstance(text, str):
            raise ValidationError(f"options.{key}", text, "must be a string")
    dump_json("options", data)
    return data
