"""A schedule definition as users give it, validated once and turned into stored columns.

Every write path (config sync, the Python API, the CLI, the admin integrations) goes through
:meth:`Definition.create`, so no surface can store something beat cannot fire.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .durations import parse_duration
from .errors import ValidationError
from .misfire import MisfirePolicy
from .overlap import OverlapPolicy
from .specs import Cron, Every, Once, Solar, Spec, SpecFields
from .timing import Timing, build_timing
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
]

#: The keyword arguments of :meth:`Definition.create` besides ``name``: what ``beat_schedule``
#: entries and API calls may set.
CREATE_ARGUMENTS = (
    "task",
    "schedule",
    "args",
    "kwargs",
    "options",
    "enabled",
    "start_at",
    "end_at",
    "max_runs",
    "misfire_policy",
    "misfire_grace",
    "catchup_limit",
    "jitter",
    "overlap_policy",
    "max_run_time",
)


def create_arguments(row: Any) -> dict[str, Any]:
    """The :meth:`Definition.create` arguments of a stored row (a mapping of its columns)."""
    arguments = {key: row[key] for key in CREATE_ARGUMENTS if key != "schedule"}
    return dict(arguments, name=row["name"], schedule={key: row[key] for key in SPEC_COLUMNS})


#: Columns of the spec itself: a change starts an interval's grid afresh at the edit time.
SPEC_COLUMNS = (
    "kind",
    "cron",
    "timezone",
    "every",
    "run_at",
    "dst_gap",
    "dst_fold",
    "cron_days",
    "solar_event",
    "latitude",
    "longitude",
)
#: Columns whose change moves ``next_run_at`` (recomputed from the edit time). Bounds and jitter
#: keep an interval on its grid.
TIMING_COLUMNS = (*SPEC_COLUMNS, "start_at", "end_at", "jitter")
#: Columns whose change keeps ``next_run_at``.
PAYLOAD_COLUMNS = (
    "task",
    "args",
    "kwargs",
    "options",
    "max_runs",
    "misfire_policy",
    "misfire_grace",
    "catchup_limit",
    "overlap_policy",
    "max_run_time",
)

# Any aware instant will do to validate an interval before its real anchor is known.
_SOME_ANCHOR = datetime(2000, 1, 1, tzinfo=timezone.utc)
_SPEC_KEYS = SPEC_COLUMNS


def _text(field_name: str, value: Any, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field_name, value, "must be a non-empty string")
    if len(value) > limit:
        raise ValidationError(field_name, value, f"is longer than {limit} characters")
    if "\x00" in value:
        raise ValidationError(field_name, value, "must not contain NUL characters")
    return value


def _seconds(field_name: str, value: Any, rule: str, *, zero: bool) -> float | None:
    """A duration field in seconds (``None`` stays ``None``); negative, or zero unless allowed,
    is refused with ``rule``."""
    if value is None:
        return None
    try:
        seconds = parse_duration(value).total_seconds()
    except ValueError as exc:
        raise ValidationError(field_name, value, str(exc)) from None
    if seconds < 0 or (seconds == 0 and not zero):
        raise ValidationError(field_name, value, rule)
    return seconds


#: Largest whole number a schedule field may hold (a 32-bit column on every database).
MAX_WHOLE = 2**31 - 1


def _bounded_whole(field_name: str, value: Any, least: int, most: int = MAX_WHOLE) -> None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most
    ):
        raise ValidationError(field_name, value, f"must be a whole number from {least} to {most}")


def _choice(
    field_name: str, value: Any, choices: type[MisfirePolicy] | type[OverlapPolicy]
) -> str | None:
    if value is None:
        return None
    try:
        return str(choices(value).value)
    except ValueError:
        allowed = ", ".join(c.value for c in choices)
        raise ValidationError(field_name, value, f"must be one of {allowed}") from None


def _spec_fields(schedule: Spec | Mapping[str, Any]) -> SpecFields:
    if isinstance(schedule, (Cron, Every, Once, Solar)):
        return schedule.fields()
    if isinstance(schedule, Mapping) and "kind" in schedule:
        unknown = sorted(set(schedule) - set(_SPEC_KEYS))
        if unknown:
            raise ValidationError("schedule", dict(schedule), f"unknown spec field {unknown[0]!r}")
        return dict(schedule)
    raise ValidationError(
        "schedule", schedule, "must be celery_dbeat.Cron(...), Every(...), Once(...) or Solar(...)"
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

    @classmethod
    def create(
        cls,
        *,
        name: str,
        task: str,
        schedule: Spec | Mapping[str, Any],
        args: Sequence[Any] | str = (),
        kwargs: Mapping[str, Any] | str | None = None,
        options: Mapping[str, Any] | str | None = None,
        enabled: bool = True,
        start_at: datetime | None = None,
        end_at: datetime | None = None,
        max_runs: int | None = None,
        misfire_policy: str | MisfirePolicy | None = None,
        misfire_grace: Any = None,
        catchup_limit: int | None = None,
        jitter: Any = None,
        overlap_policy: str | OverlapPolicy | None = None,
        max_run_time: Any = None,
    ) -> Definition:
        """Validate every field; raise :class:`ValidationError` naming the first bad one."""
        _text("name", name, 200)
        _text("task", task, 255)
        if not isinstance(enabled, bool):
            raise ValidationError("enabled", enabled, "must be true or false")
        _bounded_whole("max_runs", max_runs, 1)
        _bounded_whole("catchup_limit", catchup_limit, 0, MAX_CATCHUP_LIMIT)
        policy = _choice("misfire_policy", misfire_policy, MisfirePolicy)
        grace = _seconds("misfire_grace", misfire_grace, "must be a positive duration", zero=False)
        overlap = _choice("overlap_policy", overlap_policy, OverlapPolicy)
        run_limit = _seconds(
            "max_run_time", max_run_time, "must be a positive duration", zero=False
        )
        spread = _seconds("jitter", jitter, "must be a duration >= 0", zero=True)
        definition = cls(
            name=name,
            task=task,
            spec=_spec_fields(schedule),
            args=parse_args(list(args) if isinstance(args, tuple) else args),
            kwargs=parse_kwargs({} if kwargs is None else kwargs),
            options=parse_options({} if options is None else options),
            enabled=enabled,
            start_at=start_at,
            end_at=end_at,
            max_runs=max_runs,
            misfire_policy=policy,
            misfire_grace=grace,
            catchup_limit=catchup_limit,
            jitter=spread or None,
            overlap_policy=overlap,
            max_run_time=run_limit,
        )
        definition.timing(anchor_at=start_at or _SOME_ANCHOR)
        return definition

    def timing(self, anchor_at: datetime) -> Timing:
        spec = self.spec
        return build_timing(
            kind=spec.get("kind", ""),
            cron=spec.get("cron"),
            timezone=spec.get("timezone"),
            every=spec.get("every"),
            run_at=spec.get("run_at"),
            anchor_at=anchor_at,
            start_at=self.start_at,
            end_at=self.end_at,
            dst_gap=spec.get("dst_gap"),
            dst_fold=spec.get("dst_fold"),
            cron_days=spec.get("cron_days"),
            solar_event=spec.get("solar_event"),
            latitude=spec.get("latitude"),
            longitude=spec.get("longitude"),
        )

    @classmethod
    def from_columns(cls, row: Any) -> Definition:
        """The definition of a stored row, a mapping of its columns (validated again, so a
        broken row raises)."""
        return cls.create(**create_arguments(row))

    def columns(self) -> dict[str, Any]:
        """The stored column values of this definition (timing and payload, not state)."""
        spec = self.spec
        return {
            "task": self.task,
            "args": dump_json("args", self.args),
            "kwargs": dump_json("kwargs", self.kwargs),
            "options": dump_json("options", self.options),
            "kind": spec["kind"],
            "cron": spec.get("cron"),
            "timezone": spec.get("timezone") if spec["kind"] == "cron" else None,
            "every": spec.get("every"),
            "run_at": spec.get("run_at"),
            "dst_gap": spec.get("dst_gap"),
            "dst_fold": spec.get("dst_fold"),
            "cron_days": spec.get("cron_days"),
            "solar_event": spec.get("solar_event"),
            "latitude": spec.get("latitude"),
            "longitude": spec.get("longitude"),
            "start_at": self.start_at,
            "end_at": self.end_at,
            "max_runs": self.max_runs,
            "misfire_policy": self.misfire_policy,
            "misfire_grace": self.misfire_grace,
            "catchup_limit": self.catchup_limit,
            "jitter": self.jitter,
            "overlap_policy": self.overlap_policy,
            "max_run_time": self.max_run_time,
        }


# Plain-data forms: what the CLI, admin forms and export/import exchange --------------------

#: Every field of the plain form, in display order: the spec's fields, then the rest of what
#: ``Definition.create`` takes.
FORM_FIELDS = (
    "name",
    "task",
    "kind",
    "cron",
    "timezone",
    "dst_gap",
    "dst_fold",
    "cron_days",
    "every",
    "run_at",
    "solar_event",
    "latitude",
    "longitude",
    *(argument for argument in CREATE_ARGUMENTS if argument not in ("task", "schedule")),
)


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


def _whole(field_name: str, value: Any) -> int | None:
    if _blank(value):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValidationError(field_name, value, "must be a whole number") from None


def _number(field_name: str, value: Any) -> float | None:
    if _blank(value):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        raise ValidationError(field_name, value, "must be a number") from None


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


def definition_from_form(data: Mapping[str, Any]) -> Definition:
    """Build a definition from plain values (strings as typed in a form or on a command line,
    or the JSON values of an export). Blank strings mean "not set"."""
    unknown = sorted(set(data) - set(FORM_FIELDS))
    if unknown:
        raise ValidationError(unknown[0], data[unknown[0]], "is not a schedule field")
    kind = (
        (data.get("kind") or "").strip() if isinstance(data.get("kind"), str) else data.get("kind")
    )
    spec: dict[str, Any] = {"kind": kind}
    if kind == "cron":
        spec.update(
            cron=data.get("cron"),
            timezone=None if _blank(data.get("timezone")) else data.get("timezone"),
            dst_gap=None if _blank(data.get("dst_gap")) else data.get("dst_gap"),
            dst_fold=None if _blank(data.get("dst_fold")) else data.get("dst_fold"),
            cron_days=None if _blank(data.get("cron_days")) else data.get("cron_days"),
        )
        if spec["timezone"] is None:
            spec["timezone"] = "UTC"
        if spec["cron_days"] == "any":
            spec["cron_days"] = None
    elif kind == "interval":
        every = data.get("every")
        if _blank(every):
            raise ValidationError("every", every, "is required for an interval schedule")
        try:
            spec["every"] = parse_duration(every).total_seconds()
        except ValueError as exc:
            raise ValidationError("every", every, str(exc)) from None
    elif kind == "once":
        spec["run_at"] = _instant("run_at", data.get("run_at"))
    elif kind == "solar":
        spec.update(
            solar_event=None if _blank(data.get("solar_event")) else data.get("solar_event"),
            latitude=_number("latitude", data.get("latitude")),
            longitude=_number("longitude", data.get("longitude")),
        )
    args: Any = data.get("args")
    kwargs: Any = data.get("kwargs")
    options: Any = data.get("options")
    return Definition.create(
        name=data.get("name"),  # type: ignore[arg-type]
        task=data.get("task"),  # type: ignore[arg-type]
        schedule=spec,
        args="[]" if _blank(args) else args,
        kwargs="{}" if _blank(kwargs) else kwargs,
        options="{}" if _blank(options) else options,
        enabled=_flag("enabled", data.get("enabled")),
        start_at=_instant("start_at", data.get("start_at")),
        end_at=_instant("end_at", data.get("end_at")),
        max_runs=_whole("max_runs", data.get("max_runs")),
        misfire_policy=None if _blank(data.get("misfire_policy")) else data.get("misfire_policy"),
        misfire_grace=None if _blank(data.get("misfire_grace")) else data.get("misfire_grace"),
        catchup_limit=_whole("catchup_limit", data.get("catchup_limit")),
        jitter=None if _blank(data.get("jitter")) else data.get("jitter"),
        overlap_policy=None if _blank(data.get("overlap_policy")) else data.get("overlap_policy"),
        max_run_time=None if _blank(data.get("max_run_time")) else data.get("max_run_time"),
    )


def definition_to_form(definition: Definition) -> dict[str, Any]:
    """The JSON-able plain form of a definition; ``definition_from_form`` reads it back exactly."""
    spec = definition.spec

    def instant(value: datetime | None) -> str | None:
        return None if value is None else value.isoformat()

    return {
        "name": definition.name,
        "task": definition.task,
        "kind": spec["kind"],
        "cron": spec.get("cron"),
        "timezone": spec.get("timezone") if spec["kind"] == "cron" else None,
        "dst_gap": spec.get("dst_gap"),
        "dst_fold": spec.get("dst_fold"),
        "cron_days": spec.get("cron_days"),
        "every": spec.get("every"),
        "run_at": instant(spec.get("run_at")),
        "solar_event": spec.get("solar_event"),
        "latitude": spec.get("latitude"),
        "longitude": spec.get("longitude"),
        "args": definition.args,
        "kwargs": definition.kwargs,
        "options": definition.options,
        "enabled": definition.enabled,
        "start_at": instant(definition.start_at),
        "end_at": instant(definition.end_at),
        "max_runs": definition.max_runs,
        "misfire_policy": definition.misfire_policy,
        "misfire_grace": definition.misfire_grace,
        "catchup_limit": definition.catchup_limit,
        "jitter": definition.jitter,
        "overlap_policy": definition.overlap_policy,
        "max_run_time": definition.max_run_time,
    }
