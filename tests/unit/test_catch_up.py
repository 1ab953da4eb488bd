"""Catch-up after a long outage: counting slots instead of walking them changes no decision.

:func:`catch_up_slots` hands :func:`resolve` runs of slots no policy can choose as one
:class:`Bulk`; the resolution must be exactly the one a slot-by-slot walk gives (the same slots
sent, the same skipped and dropped groups with the same counts, the same next slot).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from itertools import chain, takewhile
from typing import Any

import pytest

from celery_dbeat.core import planning
from celery_dbeat.core.misfire import Bulk, MisfirePolicy, MisfireRules, Resolution, resolve
from celery_dbeat.core.planning import catch_up_slots, due_times
from celery_dbeat.core.timing import Timing, build_timing
from celery_dbeat.core.timing.cron import CronSpec

UTC = timezone.utc
ANCHOR = datetime(2026, 1, 1, tzinfo=UTC)


def _walked(timing: Timing, first: datetime) -> list[datetime]:
    return [first]


def _summary(result: Resolution[tuple[datetime, datetime]]) -> tuple[object, ...]:
    def group(g: object) -> object:
        return None if g is None else (g.first[0], g.last[0], g.count)  # type: ignore[attr-defined]

    return (
        [slot for slot, _ in result.send],
        group(result.skipped),
        group(result.dropped),
        None if result.next_slot is None else result.next_slot[0],
    )


def _resolve(
    timing: Timing, first: datetime, now: datetime, rules: MisfireRules, jitter: timedelta | None
) -> tuple[object, ...]:
    slots = catch_up_slots(timing, first, now, rules, jitter)
    return _summary(resolve(due_times("s", slots, jitter), now, rules, when=planning._due))


def _walk(
    timing: Timing, first: datetime, now: datetime, rules: MisfireRules, jitter: timedelta | None
) -> tuple[object, ...]:
    slots = chain([first], timing.slots_after(first))
    return _summary(resolve(due_times("s", slots, jitter), now, rules, when=planning._due))


def _cases(seed: int, n: int) -> list[Any]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        if rng.random() < 0.6:
            timing = build_timing(
                kind="cron",
                cron=rng.choice(["* * * * *", "*/7 * * * * *", "0 */2 * * *", "*/5 9-17 * * *"]),
                timezone=rng.choice(["UTC", "Europe/Paris", "America/New_York"]),
            )
        else:
            timing = build_timing(
                kind="interval",
                every=rng.choice([1, 7, 60, 3600]),
                anchor_at=ANCHOR,
                start_at=rng.choice([None, ANCHOR + timedelta(hours=5)]),
                end_at=rng.choice([None, ANCHOR + timedelta(days=2)]),
            )
        first = timing.first_after(ANCHOR + timedelta(seconds=rng.randrange(86400 * 3)))
        if first is None:
            continue
        now = first + timedelta(seconds=rng.randrange(86400 * 2))
        rules = MisfireRules(
            rng.choice(list(MisfirePolicy)),
            timedelta(seconds=rng.choice([0, 5, 60])),
            rng.choice([None, timedelta(seconds=rng.choice([30, 3600, 40000]))]),
            rng.choice([0, 1, 3, 100]),
        )
        jitter = rng.choice([None, timedelta(seconds=rng.choice([1, 30, 600]))])
        cases.append(pytest.param(timing, first, now, rules, jitter, id=f"{seed}-{i}"))
    return cases


@pytest.mark.parametrize(("timing", "first", "now", "rules", "jitter"), _cases(3, 150))
def test_counting_missed_slots_decides_what_walking_them_decides(
    timing: Timing, first: datetime, now: datetime, rules: MisfireRules, jitter: timedelta | None
) -> None:
    assert _resolve(timing, first, now, rules, jitter) == _walk(timing, first, now, rules, jitter)


def test_thirty_days_of_a_per_second_schedule_are_counted_not_walked() -> None:
    timing = build_timing(kind="cron", cron="* * * * * *", timezone="UTC")
    first = ANCHOR
    now = ANCHOR + timedelta(days=30)
    rules = MisfireRules(MisfirePolicy.SKIP, timedelta(seconds=5), None, 100)
    items = list(
        takewhile(
            lambda item: isinstance(item, Bulk) or item <= now,
            catch_up_slots(timing, first, now, rules, None),
        )
    )
    assert len(items) < 100  # two heads, one bulk, the kept tail (the next slot ends it)
    assert sum(isinstance(item, Bulk) for item in items) == 1
    sent, skipped, dropped, following = _resolve(timing, first, now, rules, None)
    # Slots ANCHOR .. now - 6 s are missed and skipped; the last 5 s and now itself are late.
    assert skipped == (ANCHOR, now - timedelta(seconds=6), 30 * 86400 - 5)
    assert sent == [now - timedelta(seconds=s) for s in range(5, -1, -1)]
    assert dropped is None
    assert following == now + timedelta(seconds=1)


@pytest.mark.parametrize(
    ("expr", "zone", "start", "days"),
    [
        pytest.param("*/7 * * * * *", "UTC", datetime(2026, 1, 1, tzinfo=UTC), 3, id="seconds-utc"),
        pytest.param(
            "30 2 * * *",
            "America/New_York",
            datetime(2024, 3, 1, tzinfo=UTC),
            300,
            id="fixed-time-dst",
        ),
        pytest.param(
            "0 * * * *",
            "America/New_York",
            datetime(2024, 10, 30, tzinfo=UTC),
            10,
            id="wildcard-fall-back",
        ),
        pytest.param(
            "*/10 * * * * 30",
            "Europe/London",
            datetime(2024, 3, 29, tzinfo=UTC),
            4,
            id="seconds-spring-forward",
        ),
        pytest.param("0 0 L * *", "Asia/Tokyo", datetime(2024, 1, 1, tzinfo=UTC), 400, id="L"),
        pytest.param(
            "15 1,2,3 * * sun",
            "Australia/Lord_Howe",
            datetime(2024, 3, 1, tzinfo=UTC),
            300,
            id="half-hour-dst",
        ),
    ],
)
def test_cron_count_equals_the_slots_walked(
    expr: str, zone: str, start: datetime, days: int
) -> None:
    for gap in (None, "shift", "skip"):
        spec = CronSpec.parse(expr, zone, dst_gap=gap)
        end = start + timedelta(days=days)
        walked = 0
        for slot in spec.slots_after(start):
            if slot > end:
                break
            walked += 1
        assert spec.count(start, end) == walked
