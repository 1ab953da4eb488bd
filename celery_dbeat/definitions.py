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
from .specs import Cron, Every, Once, SpecFields
from .timing import Timing, build_timing
from .validation import dump_json, parse_args, parse_kwargs, parse_options

__all__ = ["PAYLOAD_COLUMNS", "TIMING_COLUMNS", "Definition"]

#: Columns whose change moves ``next_run_at`` (recomputed from the edit time).
TIMING_COLUMNS = (
    "kind",
    "cron",
    "timezone",
    "every",
    "run_at",
    "dst_gap",
    "dst_fold",
    "cron_days",
    "start_at",
    "end_at",
)
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
)

# Any aware instant will do to validate an interval before its real anchor is known.
_SOME_ANCHOR = datetime(2000, 1, 1, tzinfo=timezone.utc)
_SPEC_KEYS = ("kind", "cron", "timezone", "every", "run_at", "dst_gap", "dst_fold", "cron_days")


def _text(field_name: str, value: Any, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field_name, value, "must be a non-empty string")
    if len(value) > limit:
        raise ValidationError(field_name, value, f"is longer than {limit} characters")
    return value


def _spec_fields(schedule: Cron | Every | Once | Mapping[str, Any]) -> SpecFields:
    if isinstance(schedule, (Cron, Every, Once)):
        return schedule.fields()
    if isinstance(schedule, Mapping) and "kind" in schedule:
        unknown = sorted(set(schedule) - set(_SPEC_KEYS))
        if unknown:
            raise ValidationError("schedule", dict(schedule), f"unknown spec field {unknown[0]!r}")
        return dict(schedule)
    raise ValidationError(
        "schedule", schedule, "must be celery_dbeat.Cron(...), Every(...) or Once(...)"
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

    @classmethod
    def create(
        cls,
        *,
        name: str,
        task: str,
        schedule: Cron | Every | Once | Mapping[str, Any],
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
    ) -> Definition:
        """Validate every field; raise :class:`ValidationError` naming the first bad one."""
        _text("name", name, 200)
        _text("task", task, 255)
        if not isinstance(enabled, bool):
            raise ValidationError("enabled", enabled, "must be true or false")
        if max_runs is not None and (
            isinstance(max_runs, bool) or not isinstance(max_runs, int) or max_runs < 1
        ):
            raise ValidationError("max_runs", max_runs, "must be a whole number >= 1")
        if catchup_limit is not None and (
            isinstance(catchup_limit, bool)
            or not isinstance(catchup_limit, int)
            or catchup_limit < 0
        ):
            raise ValidationError("catchup_limit", catchup_limit, "must be a whole number >= 0")
        policy = None
        if misfire_policy is not None:
            try:
                policy = MisfirePolicy(misfire_policy).value
            except ValueError:
                choices = ", ".join(p.value for p in MisfirePolicy)
                raise ValidationError(
                    "misfire_policy", misfire_policy, f"must be one of {choices}"
                ) from None
        grace = None
        if misfire_grace is not None:
            try:
                grace = parse_duration(misfire_grace).total_seconds()
            except ValueError as exc:
                raise ValidationError("misfire_grace", misfire_grace, str(exc)) from None
            if grace <= 0:
                raise ValidationError("misfire_grace", misfire_grace, "must be a positive duration")
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
        )

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
            "start_at": self.start_at,
            "end_at": self.end_at,
            "max_runs": self.max_runs,
            "misfire_policy": self.misfire_policy,
            "misfire_grace": self.misfire_grace,
            "catchup_limit": self.catchup_limit,
        }
