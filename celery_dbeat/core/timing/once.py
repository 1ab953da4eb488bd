"""``once`` specs: a single slot."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone

from .dst import DstNote

__all__ = ["OnceSpec"]


@dataclass(frozen=True)
class OnceSpec:
    run_at: datetime

    def slots_after(self, after: datetime) -> Iterator[datetime]:
        if self.run_at > after:
            yield self.run_at.astimezone(timezone.utc)

    def dst_notes(self, after: datetime, until: datetime) -> list[DstNote]:
        """None: elapsed time has no wall times for a DST change to move."""
        return []

    def count(self, after: datetime, until: datetime) -> int:
        return int(after < self.run_at <= until)
