"""Cron slots found by arithmetic away from the zone's offset changes are the ones croniter's walk
finds, in every zone: random expressions across the whole grammar, starts anywhere within two
years and on the hours around each change (spring forward, fall back, Lord Howe's half hour,
Nepal's 45-minute offset, a zone that moved across the date line), every DST rule."""

from __future__ import annotations

import functools
from datetime import datetime, timedelta, timezone
from itertools import islice
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from celery_dbeat.core.errors import ValidationError
from celery_dbeat.core.timing import CronSpec, dst
from tests.unit.test_cron_vs_cronsim import _case

UTC = timezone.utc
ZONES = [
    "UTC",
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "America/St_Johns",
    "Pacific/Apia",
]
SLOTS = 40


def _changes(zone: str) -> list[datetime]:
    """The zone's offset changes in 2025-2026, to the hour."""
    tz, found = ZoneInfo(zone), []
    probe = datetime(2025, 1, 1, tzinfo=UTC)
    while probe < datetime(2027, 1, 1, tzinfo=UTC):
        if (probe + timedelta(hours=1)).astimezone(tz).utcoffset() != probe.astimezone(
            tz
        ).utcoffset():
            found.append(probe)
        probe += timedelta(hours=1)
    return found or [probe]


@settings(max_examples=400, deadline=None)
@given(
    case=_case(),
    zone=st.sampled_from(ZONES),
    near=st.booleans(),
    shift=st.integers(-36 * 3600, 36 * 3600),
    pick=st.integers(0, 10),
    micro=st.sampled_from([0, 0, 1, 500_000]),
    gap=st.sampled_from([None, "gap_end", "shift", "skip"]),
    fold=st.sampled_from([None, "first", "second", "both"]),
)
@example(
    case=("30 2 * * *", "", datetime(2024, 3, 9, tzinfo=UTC)),
    zone="America/New_York",
    near=False,
    shift=0,
    pick=0,
    micro=0,
    gap=None,
    fold=None,
).via("a fixed time in the spring gap")
@example(
    case=("*/15 * * * *", "", datetime(2024, 11, 3, 4, tzinfo=UTC)),
    zone="America/New_York",
    near=False,
    shift=0,
    pick=0,
    micro=0,
    gap=None,
    fold="second",
).via("every quarter hour through the repeated hour, its second copy only")
def test_slots_found_by_arithmetic_are_the_slots_the_walk_finds(
    case: tuple[str, str, datetime],
    zone: str,
    near: bool,
    shift: int,
    pick: int,
    micro: int,
    gap: str | None,
    fold: str | None,
) -> None:
    expr, _, start = case
    if near:
        changes = _changes(zone)
        start = changes[pick % len(changes)] + timedelta(seconds=shift)
    start += timedelta(microseconds=micro)
    try:
        spec = CronSpec.parse(expr, zone, dst_gap=gap, dst_fold=fold)
    except ValidationError:
        return
    assert list(islice(spec.slots_after(start), SLOTS)) == list(islice(spec._walk(start), SLOTS)), (
        expr,
        zone,
        start,
    )


@pytest.mark.parametrize("zone", ZONES)
def test_an_every_second_cron_is_found_by_arithmetic_across_a_whole_year_of_changes(
    zone: str,
) -> None:
    spec = CronSpec.parse("* * * * * */7", zone)
    for change in _changes(zone):
        start = change - timedelta(hours=2)
        assert list(islice(spec.slots_after(start), 2000)) == list(islice(spec._walk(start), 2000))


@functools.cache
def _exact_changes(zone: str) -> list[tuple[datetime, timedelta]]:
    """The zone's offset changes in 2025-2026 to the second, hour by hour and then second by
    second (the slow way)."""
    tz, found = ZoneInfo(zone), []
    for hour in _changes(zone):
        before = hour.astimezone(tz).utcoffset()
        assert before is not None
        for second in range(1, 3601):
            instant = hour + timedelta(seconds=second)
            after = instant.astimezone(tz).utcoffset()
            assert after is not None
            if after != before:
                found.append((instant, after - before))
                break
    return found


@settings(max_examples=300, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    pick=st.integers(0, 10),
    shift=st.integers(-40 * 86400, 40 * 86400),
    micro=st.sampled_from([0, 0, 1, 999_999]),
    span=st.integers(0, 60 * 86400),
    to_change=st.booleans(),
)
def test_offset_changes_are_each_change_in_the_window_once(
    zone: str, pick: int, shift: int, micro: int, span: int, to_change: bool
) -> None:
    """Remembered a month at a time, the changes of any window ``(start, end]`` are the zone's
    changes in it, to the second: windows across month ends, starting or ending on a change."""
    exact = _exact_changes(zone)
    anchor = exact[pick % len(exact)][0] if exact else datetime(2025, 6, 1, tzinfo=UTC)
    start = anchor + timedelta(seconds=shift, microseconds=micro)
    end = anchor if to_change and anchor > start else start + timedelta(seconds=span)
    inside = datetime(2025, 1, 2, tzinfo=UTC) <= start and end < datetime(2026, 12, 31, tzinfo=UTC)
    if not inside:
        return
    expected = [(at, size) for at, size in exact if start < at <= end]
    assert list(dst.offset_changes(ZoneInfo(zone), start, end)) == expected


def test_a_change_at_the_start_of_a_window_is_not_in_it() -> None:
    zone = ZoneInfo("Europe/London")
    change = datetime(2025, 3, 30, 1, tzinfo=UTC)
    assert list(dst.offset_changes(zone, change, change + timedelta(days=1))) == []
    assert list(dst.offset_changes(zone, change - timedelta(days=40), change)) == [
        (change, timedelta(hours=1))
    ]
