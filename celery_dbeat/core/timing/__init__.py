"""Pure slot maths: when does a schedule fire? No I/O, no Celery.

A *spec* yields the schedule's slots (UTC instants) strictly after a given instant, in ascending
order. :class:`Timing` adds the ``start_at``/``end_at`` bounds every spec kind shares.
:func:`build_timing` is the one place where stored fields become a timing, so every surface
validates the same way.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from typing import Protocol

from ..errors import ValidationError, one_of
from .cron import CronSpec
from .dst import DstChange, DstFold, DstGap, DstNote
from .interval import IntervalSpec
from .once import OnceSpec
from .rrule import RruleSpec
from .solar import SolarSpec

__all__ = [
    "CronSpec",
    "DstChange",
    "DstFold",
    "DstGap",
    "DstNote",
    "IntervalSpec",
    "OnceSpec",
    "RruleSpec",
    "SolarSpec",
    "Spec",
    "SpecKind",
    "Timing",
    "build_timing",
    "require_aware",
]

_ONE_MICROSECOND = timedelta(microseconds=1)
_ONE_SECOND = timedelta(seconds=1)
_ONE_DAY = timedelta(days=1)


class SpecKind(str, enum.Enum):
    """The kinds of timing spec a schedule may have."""

    CRON = "cron"
    INTERVAL = "interval"
    ONCE = "once"
    SOLAR = "solar"
    RRULE = "rrule"


class Spec(Protocol):
    def slots_after(self, after: datetime) -> Iterator[datetime]:
        """Slots strictly after ``after`` (aware), ascending, as aware UTC datetimes."""

    def count(self, after: datetime, until: datetime) -> int:
        """How many slots lie in ``(after, until]``, without walking them one by one where the
        spec allows (a catch-up after a long outage counts slots it does not publish)."""

    def dst_notes(self, after: datetime, until: datetime) -> list[DstNote]:
        """The wall times the spec names that a DST change moved (a gap) or repeated (a fold),
        whose note (:attr:`DstNote.at`) lies in ``(after, until]``, each saying where it fires
        (:func:`.dst.notes`); empty for specs of elapsed time."""


@dataclass(frozen=True)
class Timing:
    """A spec within inclusive bounds ``start_at <= slot <= end_at``."""

    spec: Spec
    start_at: datetime | None = None
    end_at: datetime | None = None

    def slots_after(self, after: datetime) -> Iterator[datetime]:
        if self.start_at is not None and after < self.start_at:
            after = self.start_at - _ONE_MICROSECOND
        for slot in self.spec.slots_after(after):
            if self.end_at is not None and slot > self.end_at:
                return
            yield slot

    def first_after(self, after: datetime) -> datetime | None:
        return next(self.slots_after(after), None)

    def count(self, after: datetime, until: datetime) -> int:
        """How many slots lie in ``(after, until]`` (see :meth:`Spec.count`)."""
        if self.start_at is not None and after < self.start_at:
            after = self.start_at - _ONE_MICROSECOND
        if self.end_at is not None and until > self.end_at:
            until = self.end_at
        if until <= after:
            return 0
        return self.spec.count(after, until)

    def dst_notes(self, after: datetime, until: datetime) -> list[DstNote]:
        """The spec's DST notes (:meth:`Spec.dst_notes`) of ``(after, until]`` within the bounds."""
        return [
            note
            for note in self.spec.dst_notes(after, until)
            if (self.start_at is None or note.at >= self.start_at)
            and (self.end_at is None or note.at <= self.end_at)
        ]

    def dst_marks(self, slots: Sequence[datetime]) -> list[tuple[DstNote, ...]]:
        """For each of ``slots`` (ascending), the notes of the wall times that fire at it.

        Notes are looked for around the slots only (a yearly schedule's 10,000 slots span
        millennia): over runs of slots less than two days apart, from a day before each run (a
        fold fired at both copies is one note, placed at its first)."""
        runs: list[list[datetime]] = []
        for slot in slots:
            if runs and slot - runs[-1][-1] < 2 * _ONE_DAY:
                runs[-1].append(slot)
            else:
                runs.append([slot])
        notes = [note for run in runs for note in self.dst_notes(run[0] - _ONE_DAY, run[-1])]
        return [tuple(note for note in notes if slot in note.fires) for slot in slots]

    def is_slot(self, instant: datetime) -> bool:
        """Whether ``instant`` is one of the spec's slots (bounds aside)."""
        return next(self.spec.slots_after(instant - _ONE_MICROSECOND), None) == instant

    def last_before(self, before: datetime, floor: datetime) -> datetime | None:
        """The last slot in ``(floor, before)``, found by walking ever longer stretches back
        from ``before`` (a few slots each for any density of slots)."""
        span = _ONE_SECOND
        while True:
            start = floor if span >= before - floor else before - span
            last = None
            for slot in self.slots_after(start):
                if slot >= before:
                    break
                last = slot
            if last is not None or start == floor:
                return last
            span *= 2

    def preview(self, after: datetime, count: int) -> list[datetime]:
        """The next ``count`` slots after ``after`` (fewer if the schedule ends)."""
        slots: list[datetime] = []
        for slot in self.slots_after(after):
            if len(slots) >= count:
                break
            slots.append(slot)
        return slots


#: Instants outside these years are refused: slots computed from them must stay representable.
EARLIEST_YEAR, LATEST_YEAR = 1900, 9000


def require_aware(field: str, value: datetime | None) -> datetime | None:
    """Reject anything but an aware datetime between :data:`EARLIEST_YEAR` and
    :data:`LATEST_YEAR`: every instant celery-dbeat handles carries its offset."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise ValidationError(field, value, "must be a datetime with a time zone offset")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(
            field, value, "needs a time zone offset (naive datetimes are refused)"
        )
    try:
        year: int | None = value.astimezone(dt_timezone.utc).year
    except OverflowError:
        year = None
    if year is None or not EARLIEST_YEAR <= year < LATEST_YEAR:
        raise ValidationError(
            field, value, f"must lie between the years {EARLIEST_YEAR} and {LATEST_YEAR} (UTC)"
        )
    return value


def build_timing(
    *,
    kind: str,
    cron: str | None = None,
    timezone: str | None = None,
    every: float | timedelta | None = None,
    run_at: datetime | None = None,
    anchor_at: datetime | None = None,
    start_at: datetime | None = None,
    end_at: datetime | None = None,
    dst_gap: str | None = None,
    dst_fold: str | None = None,
    cron_days: str | None = None,
    solar_event: str | None = None,
    latitude: float | None = None,
    longitude: float | None = None,
    rrule: str | None = None,
) -> Timing:
    """Validate stored or user-supplied timing fields and build the :class:`Timing`.

    Raises :class:`~celery_dbeat.core.errors.ValidationError` naming the first bad field.
    """
    spec_kind = one_of("kind", kind, SpecKind)
    require_aware("start_at", start_at)
    require_aware("end_at", end_at)
    if start_at is not None and end_at is not None and end_at < start_at:
        raise ValidationError("end_at", end_at, f"is before start_at ({start_at.isoformat()})")

    spec: Spec
    if spec_kind is SpecKind.CRON:
        if cron is None:
            raise ValidationError("cron", cron, "is required for a cron schedule")
        spec = CronSpec.parse(
            cron, timezone or "UTC", dst_gap=dst_gap, dst_fold=dst_fold, days=cron_days
        )
    elif spec_kind is SpecKind.INTERVAL:
        if every is None:
            raise ValidationError("every", every, "is required for an interval schedule")
        anchor = require_aware("anchor_at", start_at or anchor_at)
        if anchor is None:
            raise ValidationError("anchor_at", anchor_at, "is required for an interval schedule")
        spec = IntervalSpec.parse(every, anchor)
    elif spec_kind is SpecKind.RRULE:
        if rrule is None:
            raise ValidationError("rrule", rrule, "is required for an rrule schedule")
        spec = RruleSpec.parse(rrule, timezone, dst_gap=dst_gap, dst_fold=dst_fold)
    elif spec_kind is SpecKind.SOLAR:
        for name, value in (
            ("solar_event", solar_event),
            ("latitude", latitude),
            ("longitude", longitude),
        ):
            if value is None:
                raise ValidationError(name, value, "is required for a solar schedule")
        spec = SolarSpec.parse(solar_event, latitude, longitude)
    else:
        if run_at is None:
            raise ValidationError("run_at", run_at, "is required for a once schedule")
        spec = OnceSpec(require_aware("run_at", run_at))  # type: ignore[arg-type]
    return Timing(spec, start_at, end_at)
