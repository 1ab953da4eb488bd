"""The load picture's shape: what :class:`~celery_dbeat.core.load.LoadCounter` returns (a
:class:`Load`: fires per minute, the herds among them) and how the herds are found in its counts
(a minute far above the day's mean, led by a spec; one herd per leading spec, however many hours
it comes back) with the jitter that would spread each. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from .errors import ValidationError
from .formats import seconds_text
from .lastday import PastDay
from .window import BUCKETS, MINUTE, Group

__all__ = ["SAMPLE_NAMES", "Herd", "HerdMaker", "Load", "find_herds", "herd_threshold"]

#: A minute is a herd when it holds at least this many fires and :data:`HERD_FACTOR` times the
#: day's mean per minute.
HERD_MIN = 10
HERD_FACTOR = 2.0
#: Names kept per spec to show who makes a herd.
SAMPLE_NAMES = 3
#: Busiest herd minutes looked at to find the ``top`` herds (:func:`find_herds`).
HERD_SCAN = 200


@dataclass(frozen=True)
class HerdMaker:
    """Schedules of one spec (and one jitter) that fire in a herd's minute."""

    spec: str
    jitter: float | None
    #: Their fires in the herd's minute.
    fires: float
    #: How many schedules have this spec and jitter.
    schedules: int
    names: tuple[str, ...]


@dataclass(frozen=True)
class Herd:
    """A minute with far more fires than the day's mean."""

    at: datetime
    fires: float
    makers: tuple[HerdMaker, ...]
    hint: str
    #: The other herd minutes led by the same spec (the next hours of an hourly herd), in order.
    again: tuple[datetime, ...] = ()


@dataclass(frozen=True)
class Load:
    """Fires per minute from ``start`` (``per_minute[i]``: the minute ``start + i``), the herds
    among them, and the past day."""

    start: datetime
    per_minute: tuple[float, ...]
    schedules: int
    #: Rows beat sets aside, not counted: a spec that cannot be read, a calendar that does not
    #: exist or cannot be read.
    unreadable: int
    #: ``False`` when there was more jitter to hash than ``load.JITTER_BUDGET``: jittered fires
    #: are then spread evenly over their window.
    jitter_exact: bool
    herd_threshold: float
    herds: tuple[Herd, ...]
    past: PastDay | None = None
    #: Slots in the window on days their schedule's calendar excludes: not sent (recorded as
    #: skipped when they pass), not counted in ``per_minute``.
    excluded: float = 0.0

    @property
    def total(self) -> float:
        return sum(self.per_minute)

    @property
    def peak(self) -> float:
        return max(self.per_minute, default=0.0)

    def per(self, minutes: int) -> list[float]:
        """Fires per ``minutes``-long bucket (60: per hour)."""
        if minutes < 1:
            raise ValidationError("minutes", minutes, "must be at least 1")
        return [
            sum(self.per_minute[i : i + minutes]) for i in range(0, len(self.per_minute), minutes)
        ]


def herd_threshold(totals: Sequence[float], herd_at: float | None) -> float:
    """The fires a minute needs to be a herd: ``herd_at`` when given, else :data:`HERD_MIN` and
    :data:`HERD_FACTOR` times the mean per minute of ``totals``."""
    if herd_at is not None:
        return herd_at
    return max(HERD_MIN, HERD_FACTOR * sum(totals) / BUCKETS)


def find_herds(
    start: datetime, totals: Sequence[float], groups: Sequence[Group], threshold: float, top: int
) -> tuple[Herd, ...]:
    """The ``top`` herds in ``totals`` (fires per minute from ``start``, made by ``groups``,
    whose ``fires`` are counted), busiest first."""
    busiest = sorted(
        (i for i, count in enumerate(totals) if count >= threshold and count > 0),
        key=lambda i: (-totals[i], i),
    )[:HERD_SCAN]
    # One herd per leading spec: an hourly herd is one herd that comes back each hour.
    led: dict[tuple[str, float | None], tuple[Herd, list[datetime]]] = {}
    for i in busiest:
        herd = _herd(start, groups, i, totals[i], threshold)
        lead = (herd.makers[0].spec, herd.makers[0].jitter)
        if lead in led:
            led[lead][1].append(herd.at)
        elif len(led) < top:
            led[lead] = (herd, [])
    return tuple(replace(h, again=tuple(sorted(again))) for h, again in led.values())


def _herd(
    start: datetime, groups: Sequence[Group], bucket: int, fires: float, threshold: float
) -> Herd:
    makers: dict[tuple[str, float | None], list[Any]] = {}
    for group in groups:
        count = group.fires.get(bucket)
        if not count:
            continue
        entry = makers.setdefault((group.spec.label, group.jitter), [0.0, 0, [], None])
        entry[0] += count
        entry[1] += group.members
        entry[2].extend(group.names[: SAMPLE_NAMES - len(entry[2])])
        gap = group.spec.gap
        entry[3] = gap if entry[3] is None or (gap and gap < entry[3]) else entry[3]
    ranked = sorted(makers.items(), key=lambda item: (-item[1][0], item[0][0]))
    out = tuple(
        HerdMaker(label, jitter, count, members, tuple(names))
        for (label, jitter), (count, members, names, _) in ranked
    )
    return Herd(start + bucket * MINUTE, fires, out, _hint(ranked, fires, threshold))


def _hint(ranked: Sequence[Any], fires: float, threshold: float) -> str:
    """What would spread the herd: jitter on its biggest maker."""
    (label, jitter), (count, members, _, gap) = ranked[0]
    minutes = max(2, math.ceil(fires / max(threshold / 2, 1)))
    seconds = minutes * 60
    if gap is not None:
        seconds = min(seconds, int(gap.total_seconds()))
    spread = seconds_text(seconds)
    if not jitter:
        return (
            f"give the {members} schedule(s) on {label} a jitter (jitter={spread}) to spread"
            f" their {count:.0f} fires over {spread}"
        )
    return (
        f"the {members} schedule(s) on {label} have jitter={seconds_text(jitter)}; widen it"
        f" (jitter={spread}) to spread their fires further"
    )
