"""An ad-hoc spec's slots and DST notes, for a spec no schedule stores yet (``dbeat preview
--cron ...``): validated as a schedule of it would be, read with no database."""

from __future__ import annotations

from datetime import datetime

from ..core.calendars import PreviewSlot
from ..core.counts import require_count
from ..core.definitions import Definition
from ..core.specs import Spec
from ..core.timing import DstNote, Timing, require_aware

__all__ = ["preview_spec", "preview_spec_slots", "spec_dst_notes"]


def preview_spec(
    schedule: Spec,
    *,
    count: int = 5,
    after: datetime,
    start_at: datetime | None = None,
    end_at: datetime | None = None,
) -> list[datetime]:
    """The next ``count`` slots of an ad-hoc spec after ``after``; an interval is anchored at
    ``start_at`` or else at ``after``."""
    return _timing(schedule, after, start_at, end_at).preview(after, require_count(count))


def preview_spec_slots(
    schedule: Spec,
    *,
    count: int = 5,
    after: datetime,
    start_at: datetime | None = None,
    end_at: datetime | None = None,
) -> list[PreviewSlot]:
    """:func:`preview_spec`'s slots, each with the DST changes that moved it or repeated its
    wall time (:attr:`PreviewSlot.dst`)."""
    timing = _timing(schedule, after, start_at, end_at)
    slots = timing.preview(after, require_count(count))
    return [
        PreviewSlot(slot, dst=dst) for slot, dst in zip(slots, timing.dst_marks(slots), strict=True)
    ]


def spec_dst_notes(
    schedule: Spec,
    *,
    after: datetime,
    until: datetime,
    start_at: datetime | None = None,
    end_at: datetime | None = None,
) -> list[DstNote]:
    """The wall times of an ad-hoc spec that a DST change moves or repeats in ``(after,
    until]`` (:meth:`Reads.dst_notes <celery_dbeat.api.Schedules.dst_notes>` of a stored
    schedule)."""
    timing = _timing(schedule, after, start_at, end_at)
    require_aware("until", until)
    return timing.dst_notes(after, until)


def _timing(
    schedule: Spec, after: datetime, start_at: datetime | None, end_at: datetime | None
) -> Timing:
    """The timing of a schedule of ``schedule``, validated as one (an interval anchored at
    ``start_at`` or else at ``after``)."""
    require_aware("after", after)
    definition = Definition.create(
        name="preview", task="preview", schedule=schedule, start_at=start_at, end_at=end_at
    )
    return definition.timing(start_at or after)
