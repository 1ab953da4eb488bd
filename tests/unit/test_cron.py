"""Cron slots: zones, DST rules (SEMANTICS.md "Time zones and DST"), aliases, seconds, errors."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from itertools import islice, pairwise
from typing import Any
from zoneinfo import ZoneInfo

import cronsim
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from celery_dbeat.core.errors import ValidationError
from celery_dbeat.core.timing import CronSpec
from tests.unit.conftest import utc, utcs

UTC = timezone.utc


def first(spec: CronSpec, after: str, count: int) -> list[datetime]:
    return list(islice(spec.slots_after(utc(after)), count))


def between(spec: CronSpec, start: str, end: str) -> list[datetime]:
    """Every slot in ``(start, end]``."""
    stop = utc(end)
    slots = []
    for slot in spec.slots_after(utc(start)):
        if slot > stop:
            break
        slots.append(slot)
    return slots


# SEMANTICS.md "Time zones and DST", examples -------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "zone", "start", "end", "expected"),
    [
        pytest.param(
            "30 2 * * *",
            "America/New_York",
            "2024-03-09T12:00Z",
            "2024-03-11T12:00Z",
            ["2024-03-10T07:00Z", "2024-03-11T06:30Z"],
            id="new-york-02:30-spring-forward-fires-at-gap-end-then-06:30Z",
        ),
        pytest.param(
            "30 2 * * *",
            "America/New_York",
            "2024-11-03T04:00Z",
            "2024-11-04T05:00Z",
            ["2024-11-03T07:30Z"],
            id="new-york-02:30-on-fall-back-day-once-at-07:30Z",
        ),
        pytest.param(
            "30 1 * * *",
            "America/New_York",
            "2024-11-03T04:00Z",
            "2024-11-04T05:00Z",
            ["2024-11-03T05:30Z"],
            id="new-york-01:30-on-fall-back-day-only-first-copy-05:30Z",
        ),
        pytest.param(
            "0 * * * *",
            "America/New_York",
            "2024-11-03T04:30Z",
            "2024-11-03T07:30Z",
            ["2024-11-03T05:00Z", "2024-11-03T06:00Z", "2024-11-03T07:00Z"],
            id="new-york-hourly-on-fall-back-fires-both-01:00s",
        ),
        pytest.param(
            "30 1 * * *",
            "Europe/London",
            "2024-03-31T00:00Z",
            "2024-03-31T23:00Z",
            ["2024-03-31T01:00Z"],
            id="london-01:30-spring-forward-fires-at-01:00Z",
        ),
        pytest.param(
            "30 1 * * *",
            "Europe/London",
            "2024-10-26T23:00Z",
            "2024-10-28T00:00Z",
            ["2024-10-27T00:30Z"],
            id="london-01:30-fall-back-only-00:30Z",
        ),
    ],
)
def test_cron_slots_match_the_documented_dst_examples(
    expr: str, zone: str, start: str, end: str, expected: list[str]
) -> None:
    assert between(CronSpec.parse(expr, zone), start, end) == utcs(*expected)


@pytest.mark.parametrize(
    ("expr", "zone", "start", "end", "expected"),
    [
        pytest.param(
            "*/15 * * * *",
            "America/New_York",
            "2024-03-10T06:30Z",
            "2024-03-10T07:30Z",
            ["2024-03-10T06:45Z", "2024-03-10T07:00Z", "2024-03-10T07:15Z", "2024-03-10T07:30Z"],
            id="every-15-minutes-skips-the-gap-minutes-02:00-to-02:45",
        ),
        pytest.param(
            "*/30 2 * * *",
            "America/New_York",
            "2024-03-10T05:00Z",
            "2024-03-10T12:00Z",
            [],
            id="minute-wildcard-in-hour-2-has-no-slot-on-spring-forward-day",
        ),
        pytest.param(
            "*/30 * * * *",
            "America/New_York",
            "2024-11-03T04:50Z",
            "2024-11-03T07:00Z",
            [
                "2024-11-03T05:00Z",
                "2024-11-03T05:30Z",
                "2024-11-03T06:00Z",
                "2024-11-03T06:30Z",
                "2024-11-03T07:00Z",
            ],
            id="every-30-minutes-fires-in-both-copies-of-the-repeated-hour",
        ),
        pytest.param(
            "@hourly",
            "America/New_York",
            "2024-11-03T04:30Z",
            "2024-11-03T07:30Z",
            ["2024-11-03T05:00Z", "2024-11-03T06:00Z", "2024-11-03T07:00Z"],
            id="hourly-alias-is-a-wildcard-expression",
        ),
        pytest.param(
            "0 * * * *",
            "Australia/Sydney",
            "2024-04-06T14:30Z",
            "2024-04-06T16:30Z",
            ["2024-04-06T15:00Z", "2024-04-06T16:00Z"],
            id="sydney-hourly-fires-both-02:00s-on-fall-back",
        ),
    ],
)
def test_wildcard_cron_expressions_follow_the_real_clock(
    expr: str, zone: str, start: str, end: str, expected: list[str]
) -> None:
    assert between(CronSpec.parse(expr, zone), start, end) == utcs(*expected)


@pytest.mark.parametrize(
    ("expr", "zone", "overrides", "start", "end", "expected"),
    [
        pytest.param(
            "0,30 2 * * *",
            "America/New_York",
            {},
            "2024-03-10T05:00Z",
            "2024-03-10T12:00Z",
            ["2024-03-10T07:00Z"],
            id="02:00-and-02:30-in-the-gap-both-resolve-to-gap-end-and-fire-once",
        ),
        pytest.param(
            "*/15 * * * *",
            "America/New_York",
            {"dst_gap": "gap_end"},
            "2024-03-10T06:40Z",
            "2024-03-10T07:20Z",
            ["2024-03-10T06:45Z", "2024-03-10T07:00Z", "2024-03-10T07:15Z"],
            id="four-gap-minutes-and-03:00-collapse-onto-07:00Z",
        ),
        pytest.param(
            "*/15 * * * *",
            "America/New_York",
            {"dst_gap": "shift"},
            "2024-03-10T06:40Z",
            "2024-03-10T07:20Z",
            ["2024-03-10T06:45Z", "2024-03-10T07:00Z", "2024-03-10T07:15Z"],
            id="shifted-gap-minutes-collapse-onto-the-real-03:xx-slots",
        ),
        pytest.param(
            "0 0 * * *",
            "Pacific/Apia",
            {},
            "2011-12-29T00:00Z",
            "2011-12-31T12:00Z",
            ["2011-12-29T10:00Z", "2011-12-30T10:00Z", "2011-12-31T10:00Z"],
            id="apia-skipped-day-midnight-and-next-midnight-fire-once",
        ),
    ],
)
def test_local_slots_that_collapse_onto_one_instant_fire_once(
    expr: str, zone: str, overrides: dict[str, str], start: str, end: str, expected: list[str]
) -> None:
    slots = between(CronSpec.parse(expr, zone, **overrides), start, end)
    assert slots == utcs(*expected)
    assert len(set(slots)) == len(slots)


@pytest.mark.parametrize(
    ("expr", "zone", "overrides", "start", "end", "expected"),
    [
        pytest.param(
            "30 2 * * *",
            "America/New_York",
            {"dst_gap": "gap_end"},
            "2024-03-09T12:00Z",
            "2024-03-11T12:00Z",
            ["2024-03-10T07:00Z", "2024-03-11T06:30Z"],
            id="gap-end-explicit",
        ),
        pytest.param(
            "30 2 * * *",
            "America/New_York",
            {"dst_gap": "shift"},
            "2024-03-09T12:00Z",
            "2024-03-11T12:00Z",
            ["2024-03-10T07:30Z", "2024-03-11T06:30Z"],
            id="gap-shift-02:30-becomes-03:30-edt",
        ),
        pytest.param(
            "30 2 * * *",
            "America/New_York",
            {"dst_gap": "skip"},
            "2024-03-09T12:00Z",
            "2024-03-11T12:00Z",
            ["2024-03-11T06:30Z"],
            id="gap-skip-has-no-slot-on-spring-forward-day",
        ),
        pytest.param(
            "*/30 2 * * *",
            "America/New_York",
            {"dst_gap": "gap_end"},
            "2024-03-10T05:00Z",
            "2024-03-10T12:00Z",
            ["2024-03-10T07:00Z"],
            id="wildcard-with-gap-end-fires-once-at-gap-end",
        ),
        pytest.param(
            "*/30 2 * * *",
            "America/New_York",
            {"dst_gap": "shift"},
            "2024-03-10T05:00Z",
            "2024-03-10T12:00Z",
            ["2024-03-10T07:00Z", "2024-03-10T07:30Z"],
            id="wildcard-with-shift-moves-both-gap-minutes-an-hour-on",
        ),
        pytest.param(
            "30 1 * * *",
            "America/New_York",
            {"dst_fold": "first"},
            "2024-11-02T12:00Z",
            "2024-11-04T12:00Z",
            ["2024-11-03T05:30Z", "2024-11-04T06:30Z"],
            id="fold-first-explicit",
        ),
        pytest.param(
            "30 1 * * *",
            "America/New_York",
            {"dst_fold": "second"},
            "2024-11-02T12:00Z",
            "2024-11-04T12:00Z",
            ["2024-11-03T06:30Z", "2024-11-04T06:30Z"],
            id="fold-second-fires-at-the-est-copy",
        ),
        pytest.param(
            "30 1 * * *",
            "America/New_York",
            {"dst_fold": "both"},
            "2024-11-02T12:00Z",
            "2024-11-04T12:00Z",
            ["2024-11-03T05:30Z", "2024-11-03T06:30Z", "2024-11-04T06:30Z"],
            id="fold-both-fires-at-both-copies",
        ),
        pytest.param(
            "0 * * * *",
            "America/New_York",
            {"dst_fold": "first"},
            "2024-11-03T04:30Z",
            "2024-11-03T07:30Z",
            ["2024-11-03T05:00Z", "2024-11-03T07:00Z"],
            id="wildcard-with-fold-first-fires-the-repeated-01:00-once",
        ),
        pytest.param(
            "0 * * * *",
            "America/New_York",
            {"dst_fold": "second"},
            "2024-11-03T04:30Z",
            "2024-11-03T07:30Z",
            ["2024-11-03T06:00Z", "2024-11-03T07:00Z"],
            id="wildcard-with-fold-second-fires-only-the-est-01:00",
        ),
    ],
)
def test_dst_gap_and_dst_fold_override_the_defaults(
    expr: str,
    zone: str,
    overrides: dict[str, str],
    start: str,
    end: str,
    expected: list[str],
) -> None:
    assert between(CronSpec.parse(expr, zone, **overrides), start, end) == utcs(*expected)


# Other zones -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "zone", "overrides", "start", "end", "expected"),
    [
        pytest.param(
            "15 2 * * *",
            "Australia/Lord_Howe",
            {},
            "2024-10-05T13:30Z",
            "2024-10-06T13:00Z",
            ["2024-10-05T15:30Z"],
            id="lord-howe-30-minute-gap-02:15-fires-at-gap-end",
        ),
        pytest.param(
            "15 2 * * *",
            "Australia/Lord_Howe",
            {"dst_gap": "shift"},
            "2024-10-05T13:30Z",
            "2024-10-06T13:00Z",
            ["2024-10-05T15:45Z"],
            id="lord-howe-gap-shift-moves-02:15-by-30-minutes",
        ),
        pytest.param(
            "15 2 * * *",
            "Australia/Lord_Howe",
            {},
            "2024-10-06T13:00Z",
            "2024-10-07T13:00Z",
            ["2024-10-06T15:15Z"],
            id="lord-howe-day-after-spring-forward-uses-plus-11",
        ),
        pytest.param(
            "45 1 * * *",
            "Australia/Lord_Howe",
            {},
            "2024-04-06T13:00Z",
            "2024-04-07T13:30Z",
            ["2024-04-06T14:45Z"],
            id="lord-howe-repeated-half-hour-fires-first-copy",
        ),
        pytest.param(
            "45 1 * * *",
            "Australia/Lord_Howe",
            {"dst_fold": "both"},
            "2024-04-06T13:00Z",
            "2024-04-07T13:30Z",
            ["2024-04-06T14:45Z", "2024-04-06T15:15Z"],
            id="lord-howe-repeated-half-hour-fold-both",
        ),
        pytest.param(
            "15 1 * * *",
            "Australia/Lord_Howe",
            {},
            "2024-04-06T13:00Z",
            "2024-04-07T13:30Z",
            ["2024-04-06T14:15Z"],
            id="lord-howe-01:15-is-not-repeated",
        ),
        pytest.param(
            "*/10 1 * * *",
            "Australia/Lord_Howe",
            {},
            "2024-04-06T13:00Z",
            "2024-04-06T16:00Z",
            [
                "2024-04-06T14:00Z",
                "2024-04-06T14:10Z",
                "2024-04-06T14:20Z",
                "2024-04-06T14:30Z",
                "2024-04-06T14:40Z",
                "2024-04-06T14:50Z",
                "2024-04-06T15:00Z",
                "2024-04-06T15:10Z",
                "2024-04-06T15:20Z",
            ],
            id="lord-howe-wildcard-repeats-only-01:30-to-01:50",
        ),
        pytest.param(
            "0 0 * * *",
            "Africa/Cairo",
            {},
            "2024-04-24T12:00Z",
            "2024-04-27T12:00Z",
            ["2024-04-24T22:00Z", "2024-04-25T22:00Z", "2024-04-26T21:00Z"],
            id="cairo-missing-midnight-fires-at-gap-end",
        ),
        pytest.param(
            "30 0 * * *",
            "Africa/Cairo",
            {},
            "2024-04-25T12:00Z",
            "2024-04-26T12:00Z",
            ["2024-04-25T22:00Z"],
            id="cairo-00:30-in-the-gap-fires-at-gap-end",
        ),
        pytest.param(
            "0 0 * * *",
            "Africa/Cairo",
            {"dst_gap": "skip"},
            "2024-04-24T12:00Z",
            "2024-04-27T12:00Z",
            ["2024-04-24T22:00Z", "2024-04-26T21:00Z"],
            id="cairo-missing-midnight-skipped-on-request",
        ),
        pytest.param(
            "30 23 * * *",
            "Africa/Cairo",
            {},
            "2024-10-31T12:00Z",
            "2024-11-01T12:00Z",
            ["2024-10-31T20:30Z"],
            id="cairo-repeated-23:30-fires-first-copy",
        ),
        pytest.param(
            "30 2 * * *",
            "Australia/Sydney",
            {},
            "2024-04-06T13:00Z",
            "2024-04-07T14:00Z",
            ["2024-04-06T15:30Z"],
            id="sydney-april-fall-back-fires-first-copy",
        ),
        pytest.param(
            "30 2 * * *",
            "Australia/Sydney",
            {},
            "2024-10-05T14:00Z",
            "2024-10-06T13:00Z",
            ["2024-10-05T16:00Z"],
            id="sydney-october-spring-forward-fires-at-gap-end",
        ),
        pytest.param(
            "0 0 * * *",
            "America/Sao_Paulo",
            {},
            "2018-11-02T12:00Z",
            "2018-11-05T12:00Z",
            ["2018-11-03T03:00Z", "2018-11-04T03:00Z", "2018-11-05T02:00Z"],
            id="sao-paulo-2018-missing-midnight-fires-at-gap-end",
        ),
        pytest.param(
            "0 9 * * *",
            "Asia/Kolkata",
            {},
            "2024-06-01T00:00Z",
            "2024-06-02T12:00Z",
            ["2024-06-01T03:30Z", "2024-06-02T03:30Z"],
            id="kolkata-half-hour-offset",
        ),
    ],
)
def test_cron_slots_in_other_zones(
    expr: str, zone: str, overrides: dict[str, str], start: str, end: str, expected: list[str]
) -> None:
    assert between(CronSpec.parse(expr, zone, **overrides), start, end) == utcs(*expected)


# Aliases, seconds, where a walk starts ----------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        pytest.param("@yearly", ["2025-01-01T00:00Z", "2026-01-01T00:00Z"], id="yearly"),
        pytest.param("@annually", ["2025-01-01T00:00Z", "2026-01-01T00:00Z"], id="annually"),
        pytest.param("@monthly", ["2024-06-01T00:00Z", "2024-07-01T00:00Z"], id="monthly"),
        pytest.param("@weekly", ["2024-05-19T00:00Z", "2024-05-26T00:00Z"], id="weekly-sunday"),
        pytest.param("@daily", ["2024-05-16T00:00Z", "2024-05-17T00:00Z"], id="daily"),
        pytest.param("@midnight", ["2024-05-16T00:00Z", "2024-05-17T00:00Z"], id="midnight"),
        pytest.param("@hourly", ["2024-05-15T11:00Z", "2024-05-15T12:00Z"], id="hourly"),
        pytest.param("@Daily", ["2024-05-16T00:00Z", "2024-05-17T00:00Z"], id="case-insensitive"),
        pytest.param(" @hourly ", ["2024-05-15T11:00Z", "2024-05-15T12:00Z"], id="whitespace"),
    ],
)
def test_cron_aliases_expand_to_their_five_field_forms(expr: str, expected: list[str]) -> None:
    assert first(CronSpec.parse(expr, "UTC"), "2024-05-15T10:20Z", 2) == utcs(*expected)


@pytest.mark.parametrize(
    ("expr", "zone", "after", "expected"),
    [
        pytest.param(
            "0 0 * * * 30",
            "UTC",
            "2024-01-01T00:00Z",
            ["2024-01-01T00:00:30Z", "2024-01-02T00:00:30Z"],
            id="sixth-field-is-seconds",
        ),
        pytest.param(
            "* * * * * */20",
            "UTC",
            "2024-01-01T00:00Z",
            ["2024-01-01T00:00:20Z", "2024-01-01T00:00:40Z", "2024-01-01T00:01:00Z"],
            id="every-20-seconds",
        ),
        pytest.param(
            "0 12 * * * 0",
            "UTC",
            "2024-01-01T00:00Z",
            ["2024-01-01T12:00Z", "2024-01-02T12:00Z"],
            id="zero-seconds-equals-five-fields",
        ),
        pytest.param(
            "30 2 * * * 15",
            "America/New_York",
            "2024-03-09T12:00Z",
            ["2024-03-10T07:00Z", "2024-03-11T06:30:15Z"],
            id="seconds-in-the-gap-fire-at-gap-end",
        ),
    ],
)
def test_the_sixth_cron_field_is_seconds(
    expr: str, zone: str, after: str, expected: list[str]
) -> None:
    assert first(CronSpec.parse(expr, zone), after, len(expected)) == utcs(*expected)


@pytest.mark.parametrize(
    ("expr", "zone", "after", "expected"),
    [
        pytest.param("0 * * * *", "UTC", "2024-01-01T05:00Z", "2024-01-01T06:00Z", id="on-slot"),
        pytest.param(
            "0 * * * *",
            "UTC",
            "2024-01-01T04:59:59.999999Z",
            "2024-01-01T05:00Z",
            id="one-microsecond-before-the-slot",
        ),
        pytest.param(
            "30 2 * * *",
            "America/New_York",
            "2024-03-10T07:00Z",
            "2024-03-11T06:30Z",
            id="on-a-gap-end-slot",
        ),
        pytest.param(
            "30 1 * * *",
            "America/New_York",
            "2024-11-03T05:30Z",
            "2024-11-04T06:30Z",
            id="on-the-first-copy-of-a-repeated-slot",
        ),
        pytest.param(
            "0 0 * * * 30", "UTC", "2024-01-01T00:00:30Z", "2024-01-02T00:00:30Z", id="seconds"
        ),
    ],
)
def test_slots_after_excludes_the_slot_it_starts_on(
    expr: str, zone: str, after: str, expected: str
) -> None:
    assert first(CronSpec.parse(expr, zone), after, 1) == [utc(expected)]


@pytest.mark.parametrize(
    ("expr", "overrides", "after", "expected"),
    [
        pytest.param(
            "0 * * * *",
            {},
            "2024-11-03T05:30Z",
            ["2024-11-03T06:00Z", "2024-11-03T07:00Z"],
            id="hourly-from-first-copy-01:30-edt-fires-the-second-01:00",
        ),
        pytest.param(
            "*/30 * * * *",
            {},
            "2024-11-03T06:10Z",
            ["2024-11-03T06:30Z", "2024-11-03T07:00Z"],
            id="from-second-copy-01:10-est-continues-on-the-est-clock",
        ),
        pytest.param(
            "30 1 * * *",
            {},
            "2024-11-03T05:45Z",
            ["2024-11-04T06:30Z"],
            id="fixed-time-never-fires-the-second-copy-after-the-first",
        ),
        pytest.param(
            "30 1 * * *",
            {"dst_fold": "second"},
            "2024-11-03T05:45Z",
            ["2024-11-03T06:30Z", "2024-11-04T06:30Z"],
            id="fold-second-from-inside-the-first-copy",
        ),
        pytest.param(
            "30 1 * * *",
            {"dst_fold": "both"},
            "2024-11-03T05:45Z",
            ["2024-11-03T06:30Z", "2024-11-04T06:30Z"],
            id="fold-both-from-between-the-copies",
        ),
        pytest.param(
            "30 1 * * *",
            {"dst_fold": "both"},
            "2024-11-03T06:30Z",
            ["2024-11-04T06:30Z"],
            id="fold-both-starting-on-the-second-copy",
        ),
        pytest.param(
            "30 2 * * *",
            {"dst_gap": "shift"},
            "2024-03-10T07:10Z",
            ["2024-03-10T07:30Z", "2024-03-11T06:30Z"],
            id="shifted-gap-slot-after-the-gap-is-still-found",
        ),
    ],
)
def test_slots_after_a_start_inside_a_dst_change(
    expr: str, overrides: dict[str, str], after: str, expected: list[str]
) -> None:
    spec = CronSpec.parse(expr, "America/New_York", **overrides)
    assert first(spec, after, len(expected)) == utcs(*expected)


@pytest.mark.parametrize(
    ("expr", "zone"),
    [
        pytest.param("*/7 * * * *", "America/New_York", id="wildcard-new-york"),
        pytest.param("30 2 * * *", "Europe/London", id="fixed-london"),
        pytest.param("0 0 * * * 30", "Australia/Lord_Howe", id="seconds-lord-howe"),
    ],
)
def test_slots_are_aware_utc_and_ascending(expr: str, zone: str) -> None:
    slots = first(CronSpec.parse(expr, zone), "2024-03-01T00:00Z", 200)
    assert len(slots) == 200
    assert all(slot.tzinfo is UTC for slot in slots)
    assert slots == sorted(set(slots))


def test_the_start_instant_may_be_given_in_any_zone() -> None:
    spec = CronSpec.parse("0 * * * *", "America/New_York")
    local = utc("2024-11-03T05:30Z").astimezone(ZoneInfo("America/New_York"))
    assert list(islice(spec.slots_after(local), 2)) == utcs(
        "2024-11-03T06:00Z", "2024-11-03T07:00Z"
    )


# Rejected expressions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "zone", "overrides", "field", "fragment"),
    [
        pytest.param("61 * * * *", "UTC", {}, "cron", "minute field", id="minute-61"),
        pytest.param("abc * * * *", "UTC", {}, "cron", "minute field", id="minute-word"),
        pytest.param("*/0 * * * *", "UTC", {}, "cron", "minute field", id="minute-step-0"),
        pytest.param("* 24 * * *", "UTC", {}, "cron", "hour field", id="hour-24"),
        pytest.param("* * 32 * *", "UTC", {}, "cron", "day of month field", id="dom-32"),
        pytest.param("* * * 13 *", "UTC", {}, "cron", "month field", id="month-13"),
        pytest.param("* * * * 8", "UTC", {}, "cron", "day of week field", id="dow-8"),
        pytest.param("* * * * * 61", "UTC", {}, "cron", "second field", id="second-61"),
        pytest.param("H * * * *", "UTC", {}, "cron", "minute field 'H'", id="hashed-minute"),
        pytest.param("h * * * *", "UTC", {}, "cron", "minute field 'h'", id="hashed-lowercase"),
        pytest.param("R * * * *", "UTC", {}, "cron", "random (R)", id="random-minute"),
        pytest.param("0 H(0-5) * * *", "UTC", {}, "cron", "hour field", id="hashed-range"),
        pytest.param("1,H * * * *", "UTC", {}, "cron", "minute field", id="hashed-in-list"),
        pytest.param("0 0 * * * H", "UTC", {}, "cron", "second field", id="hashed-seconds"),
        pytest.param("* * * * * * *", "UTC", {}, "cron", "7 fields", id="seven-fields"),
        pytest.param("* * * *", "UTC", {}, "cron", "4 fields", id="four-fields"),
        pytest.param("", "UTC", {}, "cron", "cron expression", id="empty"),
        pytest.param("   ", "UTC", {}, "cron", "cron expression", id="blank"),
        pytest.param("@fortnightly", "UTC", {}, "cron", "unknown alias", id="unknown-alias"),
        pytest.param("0 0 30 2 *", "UTC", {}, "cron", "never matches", id="february-30"),
        pytest.param("0 0 31 4 *", "UTC", {}, "cron", "never matches", id="april-31"),
        pytest.param(
            "0 0 * * *", "Mars/Olympus", {}, "timezone", "IANA time zone", id="unknown-zone"
        ),
        pytest.param("0 0 * * *", "", {}, "timezone", "IANA time zone", id="empty-zone"),
        pytest.param(
            "0 0 * * *", "../../etc/passwd", {}, "timezone", "IANA time zone", id="path-as-zone"
        ),
        pytest.param(
            "0 0 * * *", "UTC", {"dst_gap": "later"}, "dst_gap", "gap_end", id="bad-dst-gap"
        ),
        pytest.param(
            "0 0 * * *", "UTC", {"dst_fold": "twice"}, "dst_fold", "both", id="bad-dst-fold"
        ),
        # Unhashable values, which the parse cache must not see.
        pytest.param(["0 0 * * *"], "UTC", {}, "cron", "cron expression", id="list-as-cron"),
        pytest.param("0 0 * * *", {"zone": "UTC"}, {}, "timezone", "IANA", id="dict-as-zone"),
        pytest.param("0 0 * * *", "UTC", {"dst_gap": ["skip"]}, "dst_gap", "gap", id="list-gap"),
        # cron(8)'s grammar, read by celery-dbeat: the message says what is wrong and where.
        pytest.param("60 * * * *", "UTC", {}, "cron", "60 is outside 0-59", id="minute-60"),
        pytest.param("5-1 * * * *", "UTC", {}, "cron", "runs backwards", id="backwards-range"),
        pytest.param(
            "0 0 * * fri-sun", "UTC", {}, "cron", "Sunday at the end of a range is 7", id="fri-sun"
        ),
        pytest.param(
            "jan * * * *", "UTC", {}, "cron", "'jan' is not a number", id="name-in-minute"
        ),
        pytest.param("0 0 * * fry", "UTC", {}, "cron", "or a name (sun,", id="unknown-day-name"),
        pytest.param("5/ * * * *", "UTC", {}, "cron", "a step of 1 or more", id="empty-step"),
        pytest.param(
            "1-2-3 * * * *", "UTC", {}, "cron", "is not a value, a range", id="two-dashes"
        ),
        pytest.param("\u0665 * * * *", "UTC", {}, "cron", "ASCII", id="arabic-indic-digit"),
        pytest.param("0\u00a00 * * *", "UTC", {}, "cron", "ASCII", id="no-break-space"),
        # Found by the fuzzer: a '?' in the month field reached the day-of-month check.
        pytest.param(
            "* * 1 ? 0", "UTC", {}, "cron", "belong to the day fields", id="question-in-month"
        ),
        pytest.param("* L * * *", "UTC", {}, "cron", "belong to the day fields", id="l-in-hour"),
    ],
)
def test_bad_cron_specs_are_rejected_naming_the_field_and_value(
    expr: Any, zone: Any, overrides: dict[str, Any], field: str, fragment: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        CronSpec.parse(expr, zone, **overrides)
    bad_value: Any = {"cron": expr, "timezone": zone, **overrides}[field]
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}={bad_value!r}: ")
    assert fragment in str(caught.value)


@pytest.mark.parametrize(
    "expr",
    [
        pytest.param("0 0 29 2 *", id="february-29-leap-years-only"),
        pytest.param("0 0 * * 7", id="sunday-as-7"),
        pytest.param("0 0 * * MON", id="day-name"),
        pytest.param("0 0 1 jan *", id="month-name"),
        pytest.param("0 0 L * *", id="last-day-of-month"),
        pytest.param("0 0 * * 5L", id="last-friday-as-quartz-writes-it"),
    ],
)
def test_unusual_but_valid_cron_expressions_are_accepted(expr: str) -> None:
    assert CronSpec.parse(expr, "UTC").first_slot_after(utc("2024-01-01T00:00Z")) is not None


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        pytest.param(
            "5-5 0 * * *",
            ["2024-01-01T00:05Z", "2024-01-02T00:05Z"],
            id="minute-range-5-5-is-minute-5",
        ),
        pytest.param(
            "0 0 * * 2-2",
            ["2024-01-02T00:00Z", "2024-01-09T00:00Z"],
            id="weekday-range-2-2-is-tuesday",
        ),
        pytest.param(
            "0 0 5-5 * *",
            ["2024-01-05T00:00Z", "2024-02-05T00:00Z"],
            id="day-range-5-5-is-the-fifth",
        ),
    ],
)
def test_a_single_value_range_matches_only_that_value(expr: str, expected: list[str]) -> None:
    assert first(CronSpec.parse(expr, "UTC"), "2024-01-01T00:00Z", 2) == utcs(*expected)


# Against an independent implementation -------------------------------------------------------

# (zone, earliest start, latest start): the five slots drawn stay at least five weeks clear of any
# offset change, where cronsim and cron(8)'s rules may legitimately differ.
_QUIET_WINDOWS = [
    ("UTC", datetime(2023, 1, 1), datetime(2025, 12, 1)),
    ("Asia/Tokyo", datetime(2024, 1, 1), datetime(2024, 12, 1)),
    ("Asia/Kolkata", datetime(2024, 1, 1), datetime(2024, 12, 1)),
    ("America/New_York", datetime(2023, 11, 10), datetime(2024, 1, 31)),
    ("Europe/Berlin", datetime(2024, 4, 5), datetime(2024, 8, 15)),
    ("Australia/Sydney", datetime(2024, 4, 15), datetime(2024, 8, 15)),
]


def _values(low: int, high: int) -> st.SearchStrategy[str]:
    single = st.integers(low, high).map(str)
    pair = st.lists(st.integers(low, high), min_size=2, max_size=3, unique=True).map(
        lambda xs: ",".join(map(str, sorted(xs)))
    )
    # Single-value ranges ("5-5") are left to their own test: croniter mis-expands them.
    span = st.lists(st.integers(low, high), min_size=2, max_size=2, unique=True).map(
        lambda ab: f"{min(ab)}-{max(ab)}"
    )
    return st.one_of(single, pair, span)


@st.composite
def _daily_case(draw: st.DrawFn) -> tuple[str, str, datetime]:
    minute = draw(st.one_of(st.integers(0, 59).map(str), _values(0, 59)))
    hour = draw(_values(0, 23))
    dow = draw(st.one_of(st.just("*"), _values(0, 6)))
    zone, low, high = draw(st.sampled_from(_QUIET_WINDOWS))
    offset = draw(st.integers(0, int((high - low).total_seconds())))
    start = (low + timedelta(seconds=offset)).replace(tzinfo=ZoneInfo(zone))
    return f"{minute} {hour} * * {dow}", zone, start


@settings(max_examples=100, deadline=None)
@given(_daily_case())
def test_fixed_time_slots_agree_with_cronsim_away_from_dst(case: tuple[str, str, datetime]) -> None:
    expr, zone, start = case
    ours = list(islice(CronSpec.parse(expr, zone).slots_after(start), 5))
    reference = [t.astimezone(UTC) for t in islice(cronsim.CronSim(expr, start), 5)]
    assert ours == reference


# Resuming a walk: every beat, whenever it starts, computes the same slots ----------------------

_TRANSITIONS = [
    ("America/New_York", datetime(2024, 3, 10, 7, tzinfo=UTC)),
    ("America/New_York", datetime(2024, 11, 3, 6, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2024, 4, 6, 15, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2024, 10, 5, 15, 30, tzinfo=UTC)),
    ("Africa/Cairo", datetime(2024, 4, 25, 22, tzinfo=UTC)),
    ("Africa/Cairo", datetime(2024, 10, 31, 21, tzinfo=UTC)),
    ("Europe/London", datetime(2024, 10, 27, 1, tzinfo=UTC)),
    ("Pacific/Apia", datetime(2011, 12, 30, 10, tzinfo=UTC)),
]
_DST_EXPRESSIONS = [
    "30 2 * * *",
    "0,30 0-3 * * *",
    "45 1 * * *",
    "30 23 * * *",
    "0 * * * *",
    "*/15 * * * *",
    "*/7 1,2 * * *",
    "* 2 * * *",
    "0 0 * * * 30",
]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(_DST_EXPRESSIONS),
    st.sampled_from(_TRANSITIONS),
    st.integers(-9 * 3600, -3 * 3600),
    st.sampled_from([None, "gap_end", "shift", "skip"]),
    st.sampled_from([None, "first", "second", "both"]),
)
def test_a_walk_resumed_from_any_slot_continues_with_the_same_slots(
    expr: str,
    transition: tuple[str, datetime],
    offset: int,
    dst_gap: str | None,
    dst_fold: str | None,
) -> None:
    zone, instant = transition
    spec = CronSpec.parse(expr, zone, dst_gap=dst_gap, dst_fold=dst_fold)
    slots = list(islice(spec.slots_after(instant + timedelta(seconds=offset)), 24))
    assert len(slots) == 24
    assert slots == sorted(set(slots))
    for slot, following in pairwise(slots):
        assert next(spec.slots_after(slot)) == following
        assert next(spec.slots_after(slot - timedelta(microseconds=1))) == slot


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        pytest.param("59/15 * * * *", ["00:59:00", "01:59:00", "02:59:00"], id="59-step-15-is-59"),
        pytest.param("10/15 * * * *", ["00:10:00", "00:25:00", "00:40:00"], id="10-step-15"),
        pytest.param("0 20/6 * * *", ["20:00:00", "20:00:00", "20:00:00"], id="hour-20-step-6"),
        pytest.param("* * * * * 50/20", ["00:00:50", "00:01:50", "00:02:50"], id="second-50-step"),
        pytest.param("5-5/15 * * * *", ["00:05:00", "01:05:00", "02:05:00"], id="5-5-step-is-5"),
    ],
)
def test_a_step_from_a_single_value_runs_to_the_end_of_the_field(
    expr: str, expected: list[str]
) -> None:
    slots = CronSpec.parse(expr, "UTC").slots_after(datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert [next(slots).strftime("%H:%M:%S") for _ in expected] == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        pytest.param("0 0 * * 6/1", ["Sat 04", "Sun 05", "Sat 11"], id="saturday-to-sunday-7"),
        pytest.param("0 0 * * fri/2", ["Fri 03", "Sun 05", "Fri 10"], id="friday-step-2"),
        pytest.param("0 0 * * MON/2", ["Fri 03", "Sun 05", "Mon 06"], id="monday-step-2"),
        pytest.param("0 0 * * 7/1", ["Sun 05", "Sun 12", "Sun 19"], id="sunday-as-7"),
        pytest.param("0 0 * * sat-7", ["Sat 04", "Sun 05", "Sat 11"], id="range-to-7"),
        pytest.param("0 0 * * */7", ["Sun 05", "Sun 12", "Sun 19"], id="star-step-7"),
        pytest.param("0 0 * * 7 0", ["Sun 05", "Sun 12", "Sun 19"], id="seven-with-seconds"),
    ],
)
def test_the_day_of_week_field_ends_at_7_which_is_sunday(expr: str, expected: list[str]) -> None:
    slots = CronSpec.parse(expr, "UTC").slots_after(datetime(2025, 1, 1, tzinfo=timezone.utc))
    assert [next(slots).strftime("%a %d") for _ in expected] == expected


def test_a_day_no_chosen_month_has_leaves_the_day_of_week_field_alone() -> None:
    # cron(8) ORs the two day fields; the 30th of February is no day, so Mondays in February.
    slots = CronSpec.parse("0 0 30 feb mon", "UTC").slots_after(datetime(2025, 1, 1, tzinfo=UTC))
    assert [next(slots).strftime("%b %d %a") for _ in range(5)] == [
        "Feb 03 Mon",
        "Feb 10 Mon",
        "Feb 17 Mon",
        "Feb 24 Mon",
        "Feb 02 Mon",
    ]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        pytest.param("0 0 13 * 5", ["Fri 03", "Fri 10", "Mon 13"], id="both-restricted-either"),
        pytest.param("0 0 */2 * 1", ["Mon 13", "Mon 27", "Mon 03"], id="star-step-dom-means-and"),
        pytest.param("0 0 1 * */3", ["Sat 01", "Sat 01", "Sun 01"], id="star-step-dow-means-and"),
    ],
)
def test_day_fields_combine_as_in_cron8(expr: str, expected: list[str]) -> None:
    slots = CronSpec.parse(expr, "UTC").slots_after(datetime(2025, 1, 1, tzinfo=timezone.utc))
    assert [next(slots).strftime("%a %d") for _ in expected] == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        pytest.param("0 0 L * *", ["2025-01-31", "2025-02-28", "2025-03-31"], id="L-last-day"),
        pytest.param("0 0 15W * *", ["2025-01-15", "2025-02-14", "2025-03-14"], id="W-weekday"),
        pytest.param("0 0 * * 5#3", ["2025-01-17", "2025-02-21", "2025-03-21"], id="hash-third"),
        pytest.param("0 0 * * L5", ["2025-01-31", "2025-02-28", "2025-03-28"], id="L-last-friday"),
    ],
)
def test_last_nearest_weekday_and_nth_weekday_fields(expr: str, expected: list[str]) -> None:
    slots = CronSpec.parse(expr, "UTC").slots_after(datetime(2025, 1, 1, tzinfo=timezone.utc))
    assert [next(slots).strftime("%Y-%m-%d") for _ in expected] == expected


@pytest.mark.parametrize(
    "zone",
    [
        pytest.param("localtime", id="localtime"),
        pytest.param("posixrules", id="posixrules"),
        pytest.param("Factory", id="factory"),
        pytest.param("posix/Europe/Paris", id="posix-tree"),
        pytest.param("right/Europe/Paris", id="right-tree-leap-seconds"),
    ],
)
def test_zones_whose_meaning_depends_on_the_host_are_refused(zone: str) -> None:
    with pytest.raises(ValidationError, match="depends on the host's tz files") as caught:
        CronSpec.parse("0 * * * *", zone)
    assert caught.value.field == "timezone"
