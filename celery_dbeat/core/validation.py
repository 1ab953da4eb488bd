"""Validation of what a schedule sends: args, kwargs and Celery options, all plain JSON; the
names it is routed by and its headers' names and text values hold no control characters.

Nothing stored is ever unpickled or evaluated; every surface and the beat itself parse through
these functions, so a row that passes here is a row beat can publish.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

from kombu import compression
from kombu.exceptions import SerializerNotInstalled
from kombu.serialization import dumps as kombu_dumps
from kombu.serialization import prepare_accept_content
from kombu.serialization import registry as kombu_serializers  # type: ignore[attr-defined]

from .errors import ValidationError
from .text import refuse_control_characters

__all__ = [
    "ALLOWED_OPTIONS",
    "CELERY_ACCEPT_CONTENT",
    "MAX_CATCHUP_LIMIT",
    "MAX_DELAY_SECONDS",
    "MAX_JSON_BYTES",
    "MAX_TIME_LIMIT_SECONDS",
    "RESERVED_HEADERS",
    "check_accepted",
    "check_payload",
    "dump_json",
    "parse_args",
    "parse_kwargs",
    "parse_options",
]

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


#: Celery's default ``accept_content``: the only content its workers take unless the app says
#: otherwise, so the only serializer a schedule may choose when no app is known.
CELERY_ACCEPT_CONTENT = ("json",)

#: Deepest nesting of lists and objects accepted in args, kwargs and options.
MAX_DEPTH = 100

#: Largest ``countdown`` and ``expires`` accepted, in seconds (31 days): a longer delay is a
#: typo or a second scheduler hidden in the broker, and holds a message there for a month.
MAX_DELAY_SECONDS = 31 * 24 * 3600

#: Largest ``time_limit`` and ``soft_time_limit`` accepted, in seconds (7 days): a limit is a
#: guard against a stuck task, and a longer one guards nothing (leave it out for no limit);
#: an absurd one (``1e308``) overflows the worker's timers.
MAX_TIME_LIMIT_SECONDS = 7 * 24 * 3600

#: Largest args, kwargs or options, in bytes of the JSON text as stored: the most a ``TEXT``
#: column holds on MySQL and MariaDB, so the limit is the same on every backend.
MAX_JSON_BYTES = 65_535

#: Most fires the ``all`` misfire policy may send for one outage, per schedule and in the
#: ``dbeat_catchup_limit`` setting: every one of them is published inside one tick.
MAX_CATCHUP_LIMIT = 10_000

#: Message headers Celery sets itself (protocol 2, ``celery.app.amqp.AMQP.as_task_v2``) and
#: ``celery_beat_task``, which beat sets. A custom header of the same name replaces Celery's
#: (the task name, the id that makes a fire exactly-once, the eta...), so it is refused, in any
#: case (``ID``, ``Task``): AMQP compares header names exactly, but transports and brokers that
#: fold case would let it replace Celery's all the same. So is ``dbeat_*``.
RESERVED_HEADERS = frozenset(
    {
        "lang",
        "task",
        "id",
        "shadow",
        "eta",
        "expires",
        "group",
        "group_index",
        "retries",
        "timelimit",
        "root_id",
        "parent_id",
        "argsrepr",
        "kwargsrepr",
        "origin",
        "ignore_result",
        "replaced_task_nesting",
        "stamped_headers",
        "stamps",
        "celery_beat_task",
    }
)


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
    """The canonical JSON text stored for ``value``, at most :data:`MAX_JSON_BYTES` long."""
    _plain(field, value)
    try:
        text = json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(field, value, f"must be JSON-serialisable ({exc})") from None
    size = len(text.encode())
    if size > MAX_JSON_BYTES:
        raise ValidationError(
            field, value, f"is {size:,} bytes as JSON; at most {MAX_JSON_BYTES:,} are allowed"
        )
    return text


def _serializers() -> Sequence[str]:
    """Serializers kombu can encode with in this process (``msgpack`` and ``yaml`` are listed
    by kombu even when their library is missing, and fail only when a message is sent)."""
    return _usable(frozenset(kombu_serializers.name_to_type))


@functools.lru_cache(maxsize=8)
def _usable(names: frozenset[str]) -> tuple[str, ...]:
    # Tried once per set of registered names: beat checks the options of every fire it plans.
    usable = []
    for name in sorted(names):
        try:
            kombu_dumps(((), {}, {}), name)
        except SerializerNotInstalled:
            continue
        except Exception:  # the codec exists; a real body is the app's business
            pass
        usable.append(name)
    return tuple(usable)


def _compressions() -> Sequence[str]:
    """Compression names kombu knows: its aliases (``gzip``, ``bzip2``...) and content types."""
    types = set(compression.encoders())
    aliases = getattr(compression, "_aliases", {})
    return sorted(types | {alias for alias, target in aliases.items() if target in types})


def _headers(headers: dict[str, Any]) -> None:
    for key, value in headers.items():
        if not isinstance(key, str):
            continue  # dump_json refuses it with the message about keys
        if key.lower() in RESERVED_HEADERS or key.lower().startswith("dbeat_"):
            raise ValidationError(
                "options.headers",
                key,
                "is a header Celery or celery-dbeat sets itself; a custom header may not be "
                "named dbeat_* or any of " + ", ".join(sorted(RESERVED_HEADERS)),
            )
        refuse_control_characters("options.headers", key, "the header name")
        if isinstance(value, str):
            refuse_control_characters("options.headers", value, f"the value of header {key!r}")


def _time_limits(options: dict[str, Any]) -> None:
    """``time_limit`` and ``soft_time_limit``: finite, positive, at most
    :data:`MAX_TIME_LIMIT_SECONDS`, and a soft limit below the hard one (else it never fires)."""
    for key in ("time_limit", "soft_time_limit"):
        number = options.get(key)
        if number is None:
            continue
        if not 0 < number <= MAX_TIME_LIMIT_SECONDS:  # NaN compares false: refused too
            raise ValidationError(
                f"options.{key}",
                number,
                f"must be a number of seconds above 0 and at most {MAX_TIME_LIMIT_SECONDS:,} "
                "(7 days); leave it out for no limit",
            )
    hard, soft = options.get("time_limit"), options.get("soft_time_limit")
    if hard is not None and soft is not None and soft >= hard:
        raise ValidationError(
            "options.soft_time_limit",
            soft,
            f"must be below time_limit ({hard:g} s): the hard limit would end the task before "
            "the soft one warns it",
        )


def check_accepted(options: Mapping[str, Any], accept_content: Collection[str] | None) -> None:
    """Refuse a ``serializer`` option the workers would not take: its content type is not in
    ``accept_content`` (names or content types, as the app's setting; ``None``: no app is known,
    so Celery's default, :data:`CELERY_ACCEPT_CONTENT`). The worker would reject every message
    of the schedule (``ContentDisallowed``) after beat sent it. Without a ``serializer`` option
    the app's own ``task_serializer`` is used, which is the app's business."""
    name = options.get("serializer")
    if not isinstance(name, str):
        return  # absent, or refused by parse_options
    whose = "Celery's default" if accept_content is None else "the app's"
    listed = list(CELERY_ACCEPT_CONTENT if accept_content is None else accept_content)
    accepted = prepare_accept_content(listed) or set()
    types = kombu_serializers.name_to_type
    if types.get(name, name) in accepted:
        return
    usable = [n for n in _serializers() if types.get(n, n) in accepted]
    instead = f"use {' or '.join(repr(n) for n in usable)}, or " if usable else ""
    where = (
        "the app's accept_content and manage schedules with Schedules.from_app(app)"
        if accept_content is None
        else "accept_content (CELERY_ACCEPT_CONTENT in Django settings)"
    )
    raise ValidationError(
        "options.serializer",
        name,
        f"is not in {whose} accept_content {listed}, so workers would refuse its messages; "
        f"{instead}add {name!r} to {where}",
    )


_Parsed = TypeVar("_Parsed")

#: Stored texts each parser accepted lately, by field. A beat parses a schedule's args, kwargs
#: and options when it plans a fire and again when it publishes it, and a schedule's texts
#: rarely change: a text accepted once is only loaded again (fresh objects: callers change
#: them), not checked. Bounded: emptied when full; longer texts are checked every time, and so
#: are options naming a serializer or a compression (kombu's registries may change).
_ACCEPTED: dict[tuple[str, str], None] = {}
_ACCEPTED_MOST = 4096
_ACCEPTED_LONGEST = 1024


def _parsed(field: str, value: Any, check: Callable[[Any], _Parsed]) -> _Parsed:
    """``check(value)``, or for a text it accepted lately, the text loaded."""
    text = isinstance(value, str) and len(value) <= _ACCEPTED_LONGEST
    if text and (field, value) in _ACCEPTED:
        loaded: _Parsed = json.loads(value)
        return loaded
    data = check(value)
    if text and not (isinstance(data, dict) and {"serializer", "compression"} & data.keys()):
        if len(_ACCEPTED) >= _ACCEPTED_MOST:
            _ACCEPTED.clear()
        _ACCEPTED[field, value] = None
    return data


def check_payload(args: Any, kwargs: Any, options: Any) -> None:
    """Raise :class:`ValidationError` unless ``args``, ``kwargs`` and ``options`` parse (what
    the beat checks when it plans a fire; it parses them when it publishes it). A text accepted
    lately is not even loaded again."""
    for field, value, parse in (
        ("args", args, parse_args),
        ("kwargs", kwargs, parse_kwargs),
        ("options", options, parse_options),
    ):
        if not (isinstance(value, str) and (field, value) in _ACCEPTED):
            parse(value)


def parse_args(value: Any) -> list[Any]:
    return _parsed("args", value, _parse_args)


def parse_kwargs(value: Any) -> dict[str, Any]:
    return _parsed("kwargs", value, _parse_kwargs)


def parse_options(value: Any) -> dict[str, Any]:
    return _parsed("options", value, _parse_options)


def _parse_args(value: Any) -> list[Any]:
    data = _load("args", value)
    if isinstance(data, tuple):
        data = list(data)
    if not isinstance(data, list):
        raise ValidationError("args", value, "must be a JSON array")
    dump_json("args", data)
    return data


def _parse_kwargs(value: Any) -> dict[str, Any]:
    data = _load("kwargs", value)
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ValidationError("kwargs", value, "must be a JSON object with string keys")
    dump_json("kwargs", data)
    return data


def _parse_options(value: Any) -> dict[str, Any]:
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
            isinstance(number, bool)
            or not isinstance(number, (int, float))
            or (number < 0 and key in ("expires", "countdown"))
        ):
            raise ValidationError(f"options.{key}", number, "must be a number of seconds >= 0")
    for key in ("expires", "countdown"):
        number = data.get(key)
        if number is not None and not number <= MAX_DELAY_SECONDS:
            raise ValidationError(
                f"options.{key}",
                number,
                f"must be at most {MAX_DELAY_SECONDS:,} seconds (31 days)",
            )
    _time_limits(data)
    headers = data.get("headers")
    if headers is not None and not isinstance(headers, dict):
        raise ValidationError("options.headers", headers, "must be a JSON object")
    for key in ("queue", "exchange", "routing_key", "serializer", "compression", "shadow"):
        text = data.get(key)
        if text is not None and not isinstance(text, str):
            raise ValidationError(f"options.{key}", text, "must be a string")
    for key in ("queue", "exchange", "routing_key"):
        text = data.get(key)
        if text is not None and not text.strip():
            # Not "the default": kombu would publish to an exchange or queue named "".
            raise ValidationError(
                f"options.{key}", text, "must not be empty; leave it out to route as the app does"
            )
    for key in ("queue", "exchange", "routing_key", "shadow"):
        text = data.get(key)
        if text is not None:
            refuse_control_characters(f"options.{key}", text)
    if headers:
        _headers(headers)
    for key, names_of, what in (
        ("serializer", _serializers, "a serializer kombu can encode with here"),
        ("compression", _compressions, "a compression kombu knows"),
    ):
        name = data.get(key)
        if name is not None and name not in (names := names_of()):
            raise ValidationError(
                f"options.{key}", name, f"is not {what}; one of: {', '.join(names)}"
            )
    dump_json("options", data)
    return data
