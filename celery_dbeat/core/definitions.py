"""A schedule definition as users give it, validated once and turned into stored columns.

Every write path (config sync, the Python API, the CLI, the admin integrations) goes through
:meth:`Definition.create`, so no surface can store something beat cannot fire.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

from typing_extensions import Unpack

from .calendars import check_calendar_name
from .durations import parse_duration
from .errors import ValidationError, one_of
from .fields import BY_NAME, FIELDS, KIND_FIELDS, ZONED, Field, Form, Role, ScheduleFields, names
from .misfire import MisfirePolicy
from .overlap import OverlapPolicy
from .slot_arguments import check_slot_kwargs
from .specs import SPEC_CLASSES, Spec, SpecFields
from .text import refuse_control_characters, unprintable
from .timing import Timing, build_timing
from .timing.rruletext import zone_of
from .validation import MAX_CATCHUP_LIMIT, dump_json, parse_args, parse_kwargs, parse_options

__all__ = [
    "CREATE_ARGUMENTS",
    "FORM_FIELDS",
    "PAYLOAD_COLUMNS",
    "SPEC_COLUMNS",
    "TIMING_COLUMNS",
    "Definition",
    "create_arguments",
    "definition_from_form",
    "definition_to_form",
    "failure_note",
    "form_field_of",
    "form_text",
    "pause_note",
]

#: The keyword arguments of :meth:`Definition.create` besides ``name``: what ``beat_schedule``
#: entries and API calls may set (the spec's fields come as one ``schedule``).
CREATE_ARGUMENTS = (
    "task",
    "schedule",
    *(name for name in names(Role.PAYLOAD, Role.SWITCH, Role.BOUNDS) if name != "task"),
)
#: Columns of the spec itself: a change starts an interval's grid afresh at the edit time.
SPEC_COLUMNS = names(Role.SPEC)
#: Columns whose change moves ``next_run_at`` (recomputed from the edit time). Bounds and jitter
#: keep an interval on its grid.
TIMING_COLUMNS = names(Role.SPEC, Role.BOUNDS)
#: Columns whose change keeps ``next_run_at``.
PAYLOAD_COLUMNS = names(Role.PAYLOAD)


def create_arguments(row: Any) -> dict[str, Any]:
    """The :meth:`Definition.create` arguments of a stored row (a mapping of its columns)."""
    arguments = {key: row[key] for key in CREATE_ARGUMENTS if key != "schedule"}
    return dict(arguments, name=row["name"], schedule={key: row[key] for key in SPEC_COLUMNS})


# Any aware instant will do to validate an interval before its real anchor is known.
_SOME_ANCHOR = datetime(2000, 1, 1, tzinfo=timezone.utc)


def _text(field_name: str, value: Any, limit: int, *, name: bool = False) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field_name, value, "must be a non-empty string")
    if len(value) > limit:
        raise ValidationError(field_name, value, f"is longer than {limit} characters")
    refuse_control_characters(field_name, value, name=name)
    return value


def _seconds(fields: Mapping[str, Any], key: str, *, zero: bool) -> float | None:
    """Duration field ``key`` in seconds (``None`` stays ``None``); negative, or zero unless
    allowed, is refused."""
    value = fields.get(key)
    if value is None:
        return None
    try:
        seconds = parse_duration(value).total_seconds()
    except ValueError as exc:
        raise ValidationError(key, value, str(exc)) from None
    if seconds < 0 or (seconds == 0 and not zero):
        rule = "must be a duration >= 0" if zero else "must be a positive duration"
        raise ValidationError(key, value, rule)
    return seconds


#: Largest whole number a schedule field may hold (a 32-bit column on every database).
MAX_WHOLE = 2**31 - 1
#: Bounds of the options a prune or a run's outcome reads that many fires for.
MAX_PAUSE_AFTER_FAILURES = 1000
MAX_HISTORY_LIMIT = 100_000
#: Longest pause note, in characters (the column holds 500).
MAX_PAUSE_NOTE = 500


def pause_note(value: Any) -> str | None:
    """A pause's note (who paused and why) as stored: ``None`` for none, else non-empty text of
    at most :data:`MAX_PAUSE_NOTE` characters without control characters."""
    return None if value is None else _text("note", value, MAX_PAUSE_NOTE)


def failure_note(failures: int, last_error: str | None) -> str:
    """The note of a pause made by ``pause_after_failures``: the count and the last error's
    first line, shortened and cleaned so that it is always a valid :func:`pause_note`."""
    head = f"paused after {failures} consecutive failed runs"
    if not last_error or not last_error.strip():
        return head
    line = next(line for line in last_error.splitlines() if line.strip()).strip()
    line = "".join(" " if unprintable(c) else c for c in line)
    room = MAX_PAUSE_NOTE - len(head) - len("; last: ")
    if len(line) > room:
        line = line[: room - 3] + "..."
    return f"{head}; last: {line}"


def _optional_text(fields: Mapping[str, Any], key: str, limit: int) -> str | None:
    """Text field ``key``: ``None`` or blank (a form's) is not set."""
    value = fields.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return _text(key, value, limit).strip()


#: Longest webhook URL (the column holds 1000).
MAX_WEBHOOK = 1000


def check_webhook(value: Any, key: str) -> str | None:
    """An alert webhook as stored: ``None`` (blank: not set), or an absolute ``http`` or
    ``https`` URL with a host, of at most :data:`MAX_WEBHOOK` characters."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    url = _text(key, value, MAX_WEBHOOK).strip()
    parsed = urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValidationError(key, value, "must be an http:// or https:// URL with a host")
    return url


def _bounded_whole(fields: Mapping[str, Any], key: str, least: int, most: int = MAX_WHOLE) -> None:
    value = fields.get(key)
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most
    ):
        raise ValidationError(key, value, f"must be a whole number from {least} to {most}")


def _choice(
    fields: Mapping[str, Any], key: str, choices: type[MisfirePolicy] | type[OverlapPolicy]
) -> str | None:
    value = fields.get(key)
    return None if value is None else str(one_of(key, value, choices).value)


def _spec_fields(schedule: Spec | Mapping[str, Any]) -> SpecFields:
    if isinstance(schedule, SPEC_CLASSES):
        return schedule.fields()
    if isinstance(schedule, Mapping) and "kind" in schedule:
        unknown = sorted(set(schedule) - set(SPEC_COLUMNS))
        if unknown:
            raise ValidationError("schedule", dict(schedule), f"unknown spec field {unknown[0]!r}")
        fields = dict(schedule)
        if fields["kind"] == "rrule":  # the zone its DTSTART names, stored as the schedule's
            fields["timezone"] = zone_of(fields.get("rrule"), fields.get("timezone"))
        return fields
    raise ValidationError(
        "schedule",
        schedule,
        "must be celery_dbeat.Cron(...), Rrule(...), Every(...), Once(...) or Solar(...)",
    )


@dataclass(frozen=True)
class Definition:
    name: str
    task: str
    spec: SpecFields
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    enabled: bool = True
    start_at: datetime | None = None
    end_at: datetime | None = None
    max_runs: int | None = None
    misfire_policy: str | None = None
    misfire_grace: float | None = None
    catchup_limit: int | None = None
    #: Deterministic jitter window in seconds.
    jitter: float | None = None
    #: What to do with a slot whose previous run is still going (``None``: ``allow``).
    overlap_policy: str | None = None
    #: Seconds after which an unfinished run counts as lost (``None``: ``dbeat_max_run_time``).
    max_run_time: float | None = None
    #: The exclusion calendar's name (:mod:`celery_dbeat.core.calendars`); the store checks it
    #: exists.
    calendar: str | None = None
    #: Consecutive failed runs after which the schedule pauses itself (``None``: never).
    pause_after_failures: int | None = None
    #: Most fires kept in the history, besides ``dbeat_history_retention`` (``None``: no limit).
    history_limit: int | None = None
    #: The keywords each fire passes its slot and the previous slot under (``None``: not
    #: passed; :mod:`celery_dbeat.core.slot_arguments`).
    slot_kwarg: str | None = None
    previous_slot_kwarg: str | None = None
    #: Alerts (:mod:`celery_dbeat.core.alerts`): after how many failed runs in a row, how long
    #: after its slot a run must have succeeded, and where they go (``None``: the settings').
    alert_after_failures: int | None = None
    alert_deadline: float | None = None
    alert_task: str | None = None
    alert_webhook: str | None = None

    @classmethod
    def create(
        cls,
        *,
        name: str,
        task: str,
        schedule: Spec | Mapping[str, Any],
        **fields: Unpack[ScheduleFields],
    ) -> Definition:
        """Validate every field; raise :class:`ValidationError` naming the first bad one.
        ``fields``: :class:`~celery_dbeat.core.fields.ScheduleFields`."""
        _text("name", name, 200, name=True)
        _text("task", task, 255)
        if not isinstance(fields.get("enabled", True), bool):
            raise ValidationError("enabled", fields["enabled"], "must be true or false")
        _bounded_whole(fields, "max_runs", 1)
        _bounded_whole(fields, "catchup_limit", 0, MAX_CATCHUP_LIMIT)
        _bounded_whole(fields, "pause_after_failures", 1, MAX_PAUSE_AFTER_FAILURES)
        _bounded_whole(fields, "history_limit", 1, MAX_HISTORY_LIMIT)
        _bounded_whole(fields, "alert_after_failures", 1, MAX_PAUSE_AFTER_FAILURES)
        calendar = fields.get("calendar")
        kwargs, options = fields.get("kwargs"), fields.get("options")
        checked: dict[str, Any] = {
            **fields,
            "misfire_policy": _choice(fields, "misfire_policy", MisfirePolicy),
            "misfire_grace": _seconds(fields, "misfire_grace", zero=False),
            "overlap_policy": _choice(fields, "overlap_policy", OverlapPolicy),
            "max_run_time": _seconds(fields, "max_run_time", zero=False),
            "jitter": _seconds(fields, "jitter", zero=True) or None,
            "alert_deadline": _seconds(fields, "alert_deadline", zero=False),
            "alert_task": _optional_text(fields, "alert_task", 255),
            "alert_webhook": check_webhook(fields.get("alert_webhook"), "alert_webhook"),
            # blank in a form: none
            "calendar": None
            if calendar in (None, "")
            else check_calendar_name(calendar, "calendar"),
            "spec": _spec_fields(schedule),
            "args": parse_args(fields.get("args", [])),
            "kwargs": parse_kwargs({} if kwargs is None else kwargs),
            "options": parse_options({} if options is None else options),
        }
        checked["slot_kwarg"], checked["previous_slot_kwarg"] = check_slot_kwargs(
            fields.get("slot_kwarg"), fields.get("previous_slot_kwarg"), checked["kwargs"]
        )
        definition = cls(name=name, task=task, **checked)
        definition.timing(anchor_at=definition.start_at or _SOME_ANCHOR)
        return definition

    def timing(self, anchor_at: datetime) -> Timing:
        spec: dict[str, Any] = {name: self.spec.get(name) for name in SPEC_COLUMNS}
        return build_timing(**spec, anchor_at=anchor_at, start_at=self.start_at, end_at=self.end_at)

    @classmethod
    def from_columns(cls, row: Any) -> Definition:
        """The definition of a stored row, a mapping of its columns (validated again, so a
        broken row raises)."""
        return cls.create(**create_arguments(row))

    def columns(self) -> dict[str, Any]:
        """The stored column values of this definition (timing and payload, not state)."""
        columns = {name: self.spec.get(name) for name in SPEC_COLUMNS}
        if columns["kind"] not in ZONED:
            columns["timezone"] = None
        for name in names(Role.BOUNDS, Role.PAYLOAD):
            value = getattr(self, name)
            columns[name] = dump_json(name, value) if BY_NAME[name].form is Form.JSON else value
        return columns


# Plain-data forms: what the CLI, admin forms and export/import exchange --------------------

#: Every field of the plain form, in display order (:data:`celery_dbeat.core.fields.FIELDS`).
FORM_FIELDS = tuple(f.name for f in FIELDS)


def form_field_of(error: ValidationError) -> str | None:
    """The form field a validation error belongs on (``options.priority`` -> ``options``)."""
    name = error.field.split(".")[0].split("[")[0]
    if name == "schedule":
        return "kind"
    return name if name in FORM_FIELDS else None


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _instant(field_name: str, value: Any) -> datetime | None:
    if _blank(value):
        return None
    if isinstance(value, datetime):
        parsed = value
    else:
        try:
            parsed = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(
                field_name, value, "must be an ISO-8601 instant such as 2025-01-31T09:00:00+01:00"
            ) from None
    if parsed.tzinfo is None:
        raise ValidationError(field_name, value, "needs a time zone offset, e.g. +00:00 or Z")
    return parsed


def _number(field_name: str, value: Any, whole: bool) -> float | None:
    """A number field's plain value: a whole number (``whole``) or any number."""
    if _blank(value):
        return None
    cast, what = (int, "a whole number") if whole else (float, "a number")
    if isinstance(value, (int,) if whole else (int, float)) and not isinstance(value, bool):
        return cast(value)
    try:
        return cast(str(value).strip())
    except ValueError:
        raise ValidationError(field_name, value, f"must be {what}") from None


def _flag(field_name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if _blank(value):
        return True
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on", "y"):
        return True
    if text in ("0", "false", "no", "off", "n"):
        return False
    raise ValidationError(field_name, value, "must be true or false")


def _plain(f: Field, value: Any) -> Any:
    """A plain value of ``f`` as :meth:`Definition.create` takes it. Text stays as typed (its
    checks belong to the definition); blank means "not set"."""
    if f.form is Form.FLAG:
        return _flag(f.name, value)
    if f.form is Form.JSON:
        return f.default if _blank(value) else value
    if f.form is Form.TEXT:
        return f.default if f.default and _blank(value) else value
    if _blank(value) or (f.null is not None and value == f.null):
        return None
    if f.form is Form.INSTANT:
        return _instant(f.name, value)
    if f.form in (Form.WHOLE, Form.NUMBER):
        return _number(f.name, value, whole=f.form is Form.WHOLE)
    return value


def _spec_value(f: Field, value: Any) -> Any:
    """A plain value of spec field ``f``: specs hold durations as seconds."""
    if f.required and _blank(value):
        raise ValidationError(f.name, value, f"is required for an {' or '.join(f.kinds)} schedule")
    plain = _plain(f, value)
    if f.form is not Form.DURATION or plain is None:
        return plain
    try:
        return parse_duration(plain).total_seconds()
    except ValueError as exc:
        raise ValidationError(f.name, value, str(exc)) from None


def definition_from_form(data: Mapping[str, Any]) -> Definition:
    """Build a definition from plain values (strings as typed in a form or on a command line,
    or the JSON values of an export). Blank strings mean "not set"; of the spec fields only
    those of the chosen kind are read."""
    unknown = sorted(set(data) - set(FORM_FIELDS))
    if unknown:
        raise ValidationError(unknown[0], data[unknown[0]], "is not a schedule field")
    kind = data.get("kind")
    kind = kind.strip() if isinstance(kind, str) else kind
    spec: dict[str, Any] = {"kind": kind}
    for name in KIND_FIELDS.get(kind, ()) if isinstance(kind, str) else ():
        spec[name] = _spec_value(BY_NAME[name], data.get(name))
    arguments = {f.name: _plain(f, data.get(f.name)) for f in FIELDS if f.role is not Role.SPEC}
    return Definition.create(schedule=spec, **arguments)


def definition_to_form(definition: Definition) -> dict[str, Any]:
    """The JSON-able plain form of a definition; ``definition_from_form`` reads it back exactly."""
    values = {"name": definition.name, **definition.spec, **definition.columns()}
    values["enabled"] = definition.enabled
    form: dict[str, Any] = {}
    for f in FIELDS:
        value = values.get(f.name)
        if f.form is Form.JSON:
            value = getattr(definition, f.name)
        elif f.form is Form.INSTANT and value is not None:
            value = value.isoformat()
        form[f.name] = value
    return form


def _typed(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        # 30 rather than 30.0, and every digit of 1.23456789
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def form_text(row: Any) -> dict[str, Any]:
    """A stored row (its columns as attributes) as a form shows it: the text that stores it,
    flags as ``bool``. Read from the columns, not from a validated definition, so that a row
    beat marked broken can still be opened and fixed. Submitted unchanged it stores the same
    columns, so a payload-only edit keeps ``next_run_at``."""
    values = {name: _typed(getattr(row, name, None)) for name in FORM_FIELDS}
    if values["kind"] in ZONED and not values["timezone"]:
        values["timezone"] = BY_NAME["timezone"].default
    return values
