"""``interval`` specs: ``anchor + n * every`` (n >= 1) in elapsed time, never drifting.

Arithmetic is done in whole microseconds so that slots computed on different beats, before and
after restarts, are identical to the bit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ..errors import ValidationError
from .dst import DstNote

__all__ = ["MIN_EVERY", "IntervalSpec"]

#: Shortest supported interval. Shorter ones would make the late-fire tolerance window hold
#: more fires than a tick can sensibly publish.
MIN_EVERY = timedelta(seconds=1)


def _micros(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@dataclass(frozen=True)
class IntervalSpec:
    every: timedelta
    anchor: datetime

    @classmethod
    def parse(cls, every: float | timedelta, anchor: datetime) -> IntervalSpec:
        if isinstance(every, bool) or not isinstance(every, (int, float, timedelta)):
            raise ValidationError("every", every, "must be a number of seconds or a timedelta")
        try:
            delta = every if isinstance(every, timedelta) else timedelta(seconds=every)
        except (ValueError, OverflowError):  # NaN, infinity, or beyond what a timedelta holds
            raise ValidationError("every", every, "must be a finite number of seconds") from None
        if delta < MIN_EVERY:
            raise ValidationError(
                "every", every, f"must be at least {MIN_EVERY.total_seconds():g} s"
            )
        return cls(delta, anchor.astimezone(timezone.utc))

    def _index_after(self, after: datetime) -> int:
        """``n`` of the first slot after ``after``."""
        return max(_micros(after - self.anchor) // _micros(self.every) + 1, 1)

    def dst_notes(self, after: datetime, until: datetime) -> list[DstNote]:
        """None: elapsed time has no wall times for a DST change to move."""
        return []

    def count(self, after: datetime, until: datetime) -> int:
        """How many slots lie in ``(after, until]``."""
        return max(0, self._index_after(until) - self._index_after(after))

    def slots_after(self, after: datetime) -> Iterator[datetime]:
        step = _micros(self.every)
        n = self._index_after(after)
        while True:
            yield self.anchor + timedelta(microseconds=n * step)
            n += 1
