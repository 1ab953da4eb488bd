"""Reads that ``dbeat status`` needs and :class:`~celery_dbeat.api.Schedules` does not offer yet.

TEMPORARY: each function stands in for a requested API method (``Schedules.beats()``,
``due()``, ``upcoming()``, ``failing()``); delete this module once they exist. The schedule reads
filter the result of ``Schedules.list()`` (every row: fine for now, not for 100k schedules);
:func:`beats` holds the one query of the CLI, on the heartbeat table ``store/queries.py`` writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from ..api import ScheduleInfo, Schedules
from ..store.queries import B

__all__ = ["BeatInfo", "beats", "due", "failing", "upcoming"]


@dataclass(frozen=True)
class BeatInfo:
    """A running beat's heartbeat row."""

    name: str
    hostname: str
    pid: int
    version: str
    started_at: datetime
    last_seen_at: datetime


def beats(schedules: Schedules) -> list[BeatInfo]:
    """Every heartbeat row, by name (stand-in for ``Schedules.beats()``)."""
    with schedules.store.engine.connect() as conn:
        rows = conn.execute(sa.select(B).order_by(B.c.name)).all()
    return [BeatInfo(**row._asdict()) for row in rows]


def due(infos: Sequence[ScheduleInfo], now: datetime) -> list[ScheduleInfo]:
    """Enabled schedules with ``next_run_at <= now``, oldest first (stand-in for
    ``Schedules.due(now=...)``)."""
    found = [i for i in infos if i.enabled and i.next_run_at is not None and i.next_run_at <= now]
    return sorted(found, key=lambda i: (i.next_run_at, i.name))


def upcoming(infos: Sequence[ScheduleInfo], now: datetime, count: int) -> list[ScheduleInfo]:
    """The next ``count`` enabled schedules to fire after ``now`` (stand-in for
    ``Schedules.upcoming(count, now=...)``)."""
    found = [i for i in infos if i.enabled and i.next_run_at is not None and i.next_run_at > now]
    return sorted(found, key=lambda i: (i.next_run_at, i.name))[:count]


def failing(infos: Sequence[ScheduleInfo]) -> list[ScheduleInfo]:
    """Schedules marked with an error, by name (stand-in for ``Schedules.failing()``)."""
    return [i for i in infos if i.last_error is not None]
