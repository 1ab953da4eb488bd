"""``solar`` specs: sunrise, sunset, dawn, dusk or solar noon at a place, as Celery's ``solar``.

Instants are computed with :mod:`ephem` exactly as ``celery.schedules.solar`` does (same horizon,
``use_center`` and method per event, no refraction), searched from the local mean midnight before
them (see :meth:`SolarSpec.day_start`) and rounded down to the whole second, so every beat derives
the same slots. Where an event does not happen on a day (polar day or night) the search moves on a
day at a time, for at most :data:`MAX_SEARCH_DAYS` days without one, then the spec ends.
``ephem`` is an optional dependency: ``pip install "celery-dbeat[solar]"``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ..errors import ValidationError
from .dst import DstNote

__all__ = ["EVENTS", "MAX_SEARCH_DAYS", "SolarSpec"]

#: event -> (horizon, ephem observer method, use_center), as in ``celery.schedules.solar``.
EVENTS: dict[str, tuple[str, str, bool]] = {
    "dawn_astronomical": ("-18", "next_rising", True),
    "dawn_nautical": ("-12", "next_rising", True),
    "dawn_civil": ("-6", "next_rising", True),
    "sunrise": ("-0:34", "next_rising", False),
    "solar_noon": ("0", "next_transit", False),
    "sunset": ("-0:34", "next_setting", False),
    "dusk_civil": ("-6", "next_setting", True),
    "dusk_nautical": ("-12", "next_setting", True),
    "dusk_astronomical": ("-18", "next_setting", True),
}
#: Days searched for an event that does not happen every day before the spec is taken to end.
MAX_SEARCH_DAYS = 731
#: After an event, the next search of the same day starts this much later: ephem finds the event
#: it starts on again when the start is a fraction of a second before it.
_MARGIN = timedelta(minutes=1)
_DAY = timedelta(days=1)
_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)


def _ephem() -> Any:
    try:
        import ephem
    except ImportError:
        raise ValidationError(
            "kind", "solar", "needs the 'solar' extra: pip install 'celery-dbeat[solar]'"
        ) from None
    return ephem


def _degrees(field: str, value: Any, bound: int) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(field, value, "must be a number of degrees")
    if not math.isfinite(value) or not -bound <= value <= bound:
        raise ValidationError(field, value, f"must be between -{bound} and {bound}")
    return value


@dataclass(frozen=True)
class SolarSpec:
    event: str
    latitude: float
    longitude: float

    @classmethod
    def parse(cls, event: Any, latitude: Any, longitude: Any) -> SolarSpec:
        if event not in EVENTS:
            raise ValidationError("solar_event", event, f"must be one of {', '.join(EVENTS)}")
        spec = cls(event, _degrees("latitude", latitude, 90), _degrees("longitude", longitude, 180))
        _ephem()
        return spec

    def day_start(self, instant: datetime) -> datetime:
        """Local mean midnight at the spec's longitude, on or before ``instant``.

        Every search starts at one of these, never at ``after``: ephem stops within 0.1 s of the
        event, at a point that depends on where the search started, so only a fixed start gives
        every beat the same second (and so the same slot and task id).
        """
        base = _EPOCH - timedelta(seconds=round(self.longitude * 240))
        return base + (instant - base) // _DAY * _DAY

    def dst_notes(self, after: datetime, until: datetime) -> list[DstNote]:
        """None: elapsed time has no wall times for a DST change to move."""
        return []

    def count(self, after: datetime, until: datetime) -> int:
        """How many events lie in ``(after, until]``: walked, since there is at most one a day."""
        total = 0
        for slot in self.slots_after(after):
            if slot > until:
                break
            total += 1
        return total

    def slots_after(self, after: datetime) -> Iterator[datetime]:
        ephem = _ephem()
        horizon, method, use_center = EVENTS[self.event]
        observer = ephem.Observer()
        # Strings, as Celery passes them: ephem reads a float as radians, a string as degrees.
        observer.lat = str(self.latitude)
        observer.lon = str(self.longitude)
        observer.elev = 0
        observer.horizon = horizon
        observer.pressure = 0
        sun = ephem.Sun()
        options = {"use_center": True} if use_center else {}
        after = after.astimezone(timezone.utc)
        day = self.day_start(after)
        empty_days = 0
        while empty_days < MAX_SEARCH_DAYS:
            # The events of the day [day, day + 1 day), each searched from a fixed instant.
            end = day + _DAY
            start = day
            found = False
            while True:
                observer.date = ephem.Date(start.replace(tzinfo=None))
                try:
                    event = getattr(observer, method)(sun, start=observer.date, **options)
                except ephem.CircumpolarError:  # polar day or night: not today
                    break
                instant = event.datetime().replace(tzinfo=timezone.utc)
                if not day <= instant < end:
                    break
                found = True
                slot = instant.replace(microsecond=0)
                if slot > after:
                    yield slot
                start = instant + _MARGIN
            empty_days = 0 if found else empty_days + 1
            day = end
