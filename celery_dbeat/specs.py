"""Spec descriptions users write: ``Cron``, ``Every``, ``Once`` and ``Solar``.

They can stand as the ``schedule`` of a ``beat_schedule`` entry or be passed to the API. Each
knows the stored fields it becomes; validation happens in :func:`celery_dbeat.timing.build_timing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .durations import parse_duration
from .errors import ValidationError

__all__ = ["Cron", "Every", "Once", "Solar", "SpecFields"]

SpecFields = dict[str, Any]


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

    def fields(self) -> SpecFields:
        return {"kind": "once", "run_at": self.at}


@dataclass(frozen=True)
class Solar:
    """A solar ``event`` (``sunrise``, ``sunset``, ``solar_noon``, ``dawn_civil``, ...) at a place,
    as Celery's ``solar``. Needs the ``solar`` extra (``ephem``)."""

    event: str
    lat: float
    lon: float

    def fields(self) -> SpecFields:
        return {
            "kind": "solar",
            "solar_event": self.event,
            "latitude": self.lat,
            "longitude": self.lon,
        }
