"""Spec descriptions users write: ``Cron``, ``Rrule``, ``Every``, ``Once`` and ``Solar``.

They can stand as the ``schedule`` of a ``beat_schedule`` entry or be passed to the API. Each
owns its stored fields both ways (:meth:`fields`, :func:`spec_from_fields`) and its one-line
text; validation happens in :func:`celery_dbeat.core.timing.build_timing`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar

from .durations import parse_duration
from .errors import ValidationError
from .formats import iso, seconds_text
from .timing.rruletext import zone_of

__all__ = [
    "DAYS_ALL",
    "KIND_CLASSES",
    "SPEC_CLASSES",
    "Cron",
    "Every",
    "Once",
    "Rrule",
    "Solar",
    "Spec",
    "SpecFields",
    "spec_from_fields",
]

SpecFields = dict[str, Any]

#: What ``days=all`` means, wherever it is shown (cron(8)'s default, ``any``, fires on a day
#: matching either field).
DAYS_ALL = "both day fields must match, as in Celery's crontab"


@dataclass(frozen=True)
class Cron:
    """A cron expression (5 fields, or 6 with seconds last) evaluated in an IANA zone."""

    expr: str
    timezone: str = "UTC"
    dst_gap: str | None = None
    dst_fold: str | None = None
    #: When both day fields are restricted: ``"any"`` fires on a day matching either (cron(8)),
    #: ``"all"`` only on days matching both (Celery's ``crontab``).
    days: str = "any"

    kind: ClassVar[str] = "cron"

    @classmethod
    def from_fields(cls, fields: Mapping[Any, Any]) -> Cron | None:
        return cls(
            fields.get("cron") or "",
            fields.get("timezone") or "UTC",
            fields.get("dst_gap"),
            fields.get("dst_fold"),
            fields.get("cron_days") or "any",
        )

    def text(self) -> str:
        """``cron '30 2 * * *' America/New_York`` (and its DST rules when set, and its day rule
        where it changes anything, explained: few people know cron(8)'s either-or)."""
        words = [f"cron '{self.expr}' {self.timezone}"]
        words += [
            f"{k}={v}" for k, v in (("dst_gap", self.dst_gap), ("dst_fold", self.dst_fold)) if v
        ]
        if self.days == "all" and self.both_days_restricted():
            words.append(f"days=all ({DAYS_ALL})")
        return " ".join(words)

    def both_days_restricted(self) -> bool:
        """Whether the day-of-month and day-of-week fields are both restricted (neither starts
        with ``*``): the only case where ``days`` (``any`` or ``all``) changes the slots."""
        fields = self.expr.split()
        return len(fields) in (5, 6) and not any(f.startswith(("*", "?")) for f in fields[2:5:2])

    def fields(self) -> SpecFields:
        return {
            "kind": "cron",
            "cron": self.expr,
            "timezone": self.timezone,
            "dst_gap": self.dst_gap,
            "dst_fold": self.dst_fold,
            "cron_days": None if self.days == "any" else self.days,
        }


@dataclass(frozen=True)
class Every:
    """Every ``seconds`` of elapsed time, anchored at ``start_at`` or at creation."""

    seconds: float | timedelta | str

    kind: ClassVar[str] = "interval"

    @classmethod
    def from_fields(cls, fields: Mapping[Any, Any]) -> Every | None:
        return None if fields.get("every") is None else cls(fields["every"])

    def text(self) -> str:
        """``every 1h30m``."""
        return f"every {seconds_text(self.fields()['every'])}"

    def fields(self) -> SpecFields:
        try:
            delta = parse_duration(self.seconds)
        except ValueError as exc:
            raise ValidationError("every", self.seconds, str(exc)) from None
        return {"kind": "interval", "every": delta.total_seconds()}


@dataclass(frozen=True)
class Once:
    """A single fire at ``at`` (an aware datetime)."""

    at: datetime

    kind: ClassVar[str] = "once"

    @classmethod
    def from_fields(cls, fields: Mapping[Any, Any]) -> Once | None:
        return None if fields.get("run_at") is None else cls(fields["run_at"])

    def text(self) -> str:
        """``once 2025-01-31T08:00:00Z``."""
        return f"once {iso(self.at)}"

    def fields(self) -> SpecFields:
        return {"kind": "once", "run_at": self.at}


@dataclass(frozen=True)
class Solar:
    """A solar ``event`` (``sunrise``, ``sunset``, ``solar_noon``, ``dawn_civil``, ...) at a place,
    as Celery's ``solar``. Needs the ``solar`` extra (``ephem``)."""

    event: str
    lat: float
    lon: float

    kind: ClassVar[str] = "solar"

    @classmethod
    def from_fields(cls, fields: Mapping[Any, Any]) -> Solar | None:
        event, lat, lon = fields.get("solar_event"), fields.get("latitude"), fields.get("longitude")
        return None if event is None or lat is None or lon is None else cls(event, lat, lon)

    def text(self) -> str:
        """``solar sunset at 48.85, 2.35``."""
        return f"solar {self.event} at {self.lat:g}, {self.lon:g}"

    def fields(self) -> SpecFields:
        return {
            "kind": "solar",
            "solar_event": self.event,
            "latitude": self.lat,
            "longitude": self.lon,
        }


@dataclass(frozen=True)
class Rrule:
    """An RFC 5545 recurrence set read in an IANA zone: a rule such as
    ``FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;BYHOUR=18;BYMINUTE=0``, or lines of
    ``DTSTART``, ``RRULE``, ``RDATE`` and ``EXDATE`` (:mod:`celery_dbeat.core.timing.rrule`).
    ``timezone`` ``None``: the zone of ``DTSTART;TZID=...``, else UTC. DST rules as a
    fixed-time cron expression's unless ``dst_gap``/``dst_fold`` say otherwise."""

    rule: str
    timezone: str | None = None
    dst_gap: str | None = None
    dst_fold: str | None = None

    kind: ClassVar[str] = "rrule"

    @classmethod
    def from_fields(cls, fields: Mapping[Any, Any]) -> Rrule | None:
        rule = fields.get("rrule")
        if rule is None:
            return None
        return cls(rule, fields.get("timezone"), fields.get("dst_gap"), fields.get("dst_fold"))

    def text(self) -> str:
        """``rrule 'FREQ=WEEKLY;BYDAY=2TU' Europe/London`` (lines joined by ``' / '``)."""
        rule = " / ".join(line.strip() for line in self.rule.strip().splitlines() if line.strip())
        words = [f"rrule '{rule}' {self.fields()['timezone']}"]
        words += [
            f"{k}={v}" for k, v in (("dst_gap", self.dst_gap), ("dst_fold", self.dst_fold)) if v
        ]
        return " ".join(words)

    def fields(self) -> SpecFields:
        return {
            "kind": "rrule",
            "rrule": self.rule,
            "timezone": zone_of(self.rule, self.timezone),
            "dst_gap": self.dst_gap,
            "dst_fold": self.dst_fold,
        }


Spec = Cron | Every | Once | Solar | Rrule
#: The spec classes (``isinstance(value, SPEC_CLASSES)``), and each by its kind.
SPEC_CLASSES = (Cron, Every, Once, Solar, Rrule)
KIND_CLASSES: dict[str, type[Spec]] = {kind.kind: kind for kind in SPEC_CLASSES}


def spec_from_fields(fields: Mapping[Any, Any]) -> Spec | None:
    """The spec of stored fields (``kind`` and its columns: a row, or a definition's ``spec``),
    not validated; ``None`` for an unknown kind or one whose required field is missing."""
    kind = KIND_CLASSES.get(str(fields.get("kind")))
    return None if kind is None else kind.from_fields(fields)
