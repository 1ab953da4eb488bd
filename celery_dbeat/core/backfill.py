"""Backfill, the pure part: which slots of a schedule a backfill of ``[start, end]`` asks for.

SEMANTICS: "Backfill of [a, b] publishes the slots of F(S) in [a, b] that have no fire record
yet, each with its usual task id, so backfilling a range twice sends nothing the second time."
The store decides which of these slots already have a record; the beats publish the rest as
queued fires, with the capacity on-time fires leave (see :mod:`celery_dbeat.beat.ticker`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from .errors import ValidationError
from .timing import Timing, require_aware

__all__ = ["MAX_BACKFILL", "backfill_slots"]

#: Most slots one backfill may ask for. A larger range is refused (say what it holds, and how to
#: ask for it in parts): a backfill is paced, but it is still work for the workers.
MAX_BACKFILL = 100_000

_ONE_MICROSECOND = timedelta(microseconds=1)
_ONE_SECOND = timedelta(seconds=1)


def backfill_slots(
    timing: Timing, start: datetime, end: datetime, now: datetime, limit: int = MAX_BACKFILL
) -> list[datetime]:
    """The slots of ``timing`` in ``[start, end]``, both inclusive; refused (a
    :class:`ValidationError` naming the field) when the range is empty or backwards, reaches
    past ``now`` (those slots fire on their own) or holds more than ``limit`` slots (found by
    counting little more than ``limit`` of them, however many the range holds)."""
    require_aware("start", start)
    require_aware("end", end)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_BACKFILL:
        raise ValidationError("limit", limit, f"must be a whole number from 1 to {MAX_BACKFILL}")
    if end < start:
        raise ValidationError("end", end, f"is before start ({start.isoformat()})")
    if end > now:
        raise ValidationError(
            "end",
            end,
            f"is after now ({now.isoformat()}): only slots that have passed can be backfilled;"
            " the others fire on their own",
        )
    if _more_than(timing, start, end, limit):
        raise _too_many(start, end, limit)
    slots: list[datetime] = []
    for slot in timing.slots_after(start - _ONE_MICROSECOND):
        if slot > end:
            break
        if len(slots) == limit:  # bounded, whatever the count said
            raise _too_many(start, end, limit)
        slots.append(slot)
    return slots


def _too_many(start: datetime, end: datetime, limit: int) -> ValidationError:
    return ValidationError(
        "end",
        end,
        f"the range from {start.isoformat()} holds more than {limit} slots (the limit);"
        f" backfill it in parts, or raise the limit (at most {MAX_BACKFILL})",
    )


def _more_than(timing: Timing, start: datetime, end: datetime, limit: int) -> bool:
    """Whether ``[start, end]`` holds more than ``limit`` slots, counted over stretches that
    double from ``start``, so that the count stops soon after the limit: ten years of seconds
    are refused having counted a day of them, not all of them."""
    low, span, counted = start - _ONE_MICROSECOND, _ONE_SECOND, 0
    while low < end:
        high = min(low + span, end)
        counted += timing.count(low, high)
        if counted > limit:
            return True
        low, span = high, span * 2
    return False
