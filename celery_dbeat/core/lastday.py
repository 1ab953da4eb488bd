"""The last day of the load picture (:mod:`celery_dbeat.core.load`): per hour, the fires sent
(those a backfill sent apart), the lag (``sent_at - slot``) p50 and p99 of beat's own fires (a
backfill sends old slots on purpose: its delay is not lag), and the failed runs. Pure: the
store counts the fires and reads the lags (:mod:`celery_dbeat.store.load`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from .window import HORIZON

__all__ = ["Hour", "PastDay", "past_day"]

_HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class Hour:
    """One hour of the last day: fires sent, their lag (``sent_at - slot``, seconds), failed
    runs (run tracking)."""

    start: datetime
    sent: int
    lag_p50: float | None
    lag_p99: float | None
    failed: int
    #: Of ``sent``, the fires a backfill sent (not in the lag).
    backfilled: int = 0


@dataclass(frozen=True)
class PastDay:
    start: datetime
    hours: tuple[Hour, ...]
    sent: int
    lag_p50: float | None
    lag_p99: float | None
    failed: int
    #: The figures are estimates from an even sample of the day's fires (it held more than the
    #: store reads): each count is the sample's scaled up, the lags are the sample's.
    sampled: bool = False
    #: Of ``sent``, the fires a backfill sent (not in the lag).
    backfilled: int = 0
    #: Schedules with a ``history_limit``: their fires beyond the newest it keeps are pruned,
    #: and only those kept are counted.
    history_limited: int = 0


def past_day(
    end: datetime,
    lags: Iterable[tuple[datetime, float]],
    sent: Sequence[int],
    failed: Sequence[int],
    *,
    sampled: bool = False,
    backfilled: Sequence[int] | None = None,
    history_limited: int = 0,
) -> PastDay:
    """The day before ``end``, hour by hour: ``sent`` and ``failed`` count each hour's fires
    sent and failed runs (by slot, 24 of each); ``lags`` are ``(slot, seconds)`` of the fires
    sent, all of them or (``sampled``) those of a sample; ``backfilled``: each hour's fires of
    ``sent`` a backfill sent (their lags left out of ``lags``)."""
    by_backfill = list(backfilled) if backfilled is not None else [0] * 24
    start = end - HORIZON
    by_hour: list[list[float]] = [[] for _ in range(24)]
    for slot, lag in lags:
        if start <= slot < end:
            by_hour[min(int((slot - start) // _HOUR), 23)].append(lag)
    for hour in by_hour:
        hour.sort()
    hours = tuple(
        Hour(
            start + h * _HOUR,
            sent[h],
            _percentile(by_hour[h], 50),
            _percentile(by_hour[h], 99),
            failed[h],
            by_backfill[h],
        )
        for h in range(24)
    )
    every = sorted(lag for hour in by_hour for lag in hour)
    return PastDay(
        start,
        hours,
        sum(sent),
        _percentile(every, 50),
        _percentile(every, 99),
        sum(failed),
        sampled,
        sum(by_backfill),
        history_limited,
    )


def _percentile(ordered: Sequence[float], p: int) -> float | None:
    """Nearest rank: the smallest value with at least ``p`` percent of the values at or below."""
    if not ordered:
        return None
    return ordered[max(math.ceil(p / 100 * len(ordered)) - 1, 0)]
