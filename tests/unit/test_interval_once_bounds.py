"""Interval and once specs, and the start_at/end_at bounds every spec kind shares."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from itertools import islice, pairwise
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from celery_dbeat.core.errors import ValidationError
from celery_dbeat.core.timing import IntervalSpec, OnceSpec, build_timing
from tests.unit.conftest import utc, utcs

UTC = timezone.utc
NEW_YORK = ZoneInfo("America/New_York")


# Interval --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("every", "anchor", "after", "expected"),
    [
        pytest.param(
            60,
            utc("2024-01-01T00:00Z"),
            utc("2024-01-01T00:00Z"),
            ["2024-01-01T00:01Z", "2024-01-01T00:02Z", "2024-01-01T00:03Z"],
            id="first-slot-is-anchor-plus-every",
        ),
        pytest.param(
            60,
            utc("2024-01-01T00:00Z"),
            utc("2023-12-25T00:00Z"),
            ["2024-01-01T00:01Z", "2024-01-01T00:02Z"],
            id="before-the-anchor-the-anchor-itself-is-never-a-slot",
        ),
        pytest.param(
            60,
            utc("2024-01-01T00:00Z"),
            utc("2024-01-01T00:02Z"),
            ["2024-01-01T00:03Z", "2024-01-01T00:04Z"],
            id="starting-on-a-slot-excludes-it",
        ),
        pytest.param(
            60,
            utc("2024-01-01T00:00Z"),
            utc("2024-01-01T00:01:59.999999Z"),
            ["2024-01-01T00:02Z"],
            id="one-microsecond-before-a-slot-includes-it",
        ),
        pytest.param(
            2.5,
            utc("2024-01-01T00:00Z"),
            utc("2024-01-01T00:00:03Z"),
            ["2024-01-01T00:00:05Z", "2024-01-01T00:00:07.500000Z"],
            id="fractional-seconds",
        ),
        pytest.param(
            timedelta(seconds=1, microseconds=333_333),
            utc("2024-01-01T00:00Z"),
            utc("2024-01-01T00:00Z"),
            [
                "2024-01-01T00:00:01.333333Z",
                "2024-01-01T00:00:02.666666Z",
                "2024-01-01T00:00:03.999999Z",
            ],
            id="microsecond-exact",
        ),
        pytest.param(
            timedelta(days=1),
            datetime(2024, 3, 9, 0, 0, tzinfo=NEW_YORK),
            utc("2024-03-09T05:00Z"),
            ["2024-03-10T05:00Z", "2024-03-11T05:00Z"],
            id="daily-interval-ignores-spring-forward-24h-of-elapsed-time",
        ),
        pytest.param(
            3600,
            datetime(2024, 11, 3, 0, 0, tzinfo=NEW_YORK),
            utc("2024-11-03T04:00Z"),
            ["2024-11-03T05:00Z", "2024-11-03T06:00Z", "2024-11-03T07:00Z"],
            id="hourly-interval-ignores-fall-back",
        ),
    ],
)
def test_interval_slots_are_the_anchor_plus_n_times_every(
    every: float | timedelta, anchor: datetime, after: datetime, expected: list[str]
) -> None:
    timing = build_timing(kind="interval", every=every, anchor_at=anchor)
    slots = timing.preview(after, len(expected))
    assert slots == utcs(*expected)
    assert all(slot.tzinfo is UTC for slot in slots)


@pytest.mark.parametrize(
    "every",
    [
        pytest.param(timedelta(seconds=1, microseconds=1), id="1.000001s"),
        pytest.param(7.3, id="7.3s-float"),
        pytest.param(1 + 1 / 3, id="one-third-rounded-to-microseconds"),
        pytest.param(timedelta(hours=1), id="hourly"),
    ],
)
def test_interval_slots_never_drift_over_many_iterations(every: float | timedelta) -> None:
    anchor = utc("2024-01-01T00:00:00.000007Z")
    spec = IntervalSpec.parse(every, anchor)
    step = spec.every
    count = 50_000
    walked = list(islice(spec.slots_after(anchor), count))
    assert walked[-1] == anchor + count * step
    assert all(b - a == step for a, b in pairwise(walked))
    # A beat that starts late computes exactly the same instants as one that walked there.
    jumped = next(spec.slots_after(walked[-2] + timedelta(microseconds=1)))
    assert jumped == walked[-1]


@pytest.mark.parametrize(
    ("every", "fragment"),
    [
        pytest.param(0, "at least 1 s", id="zero"),
        pytest.param(0.5, "at least 1 s", id="sub-second"),
        pytest.param(-5, "at least 1 s", id="negative"),
        pytest.param(timedelta(milliseconds=999), "at least 1 s", id="timedelta-under-a-second"),
        pytest.param(True, "number of seconds", id="boolean"),
        pytest.param("10", "number of seconds", id="string"),
        pytest.param(
            float("nan"),
            "every",
            id="nan",
        ),
        pytest.param(
            float("inf"),
            "every",
            id="infinity",
        ),
        pytest.param(
            1e300,
            "every",
            id="too-large-for-a-timedelta",
        ),
    ],
)
def test_bad_intervals_are_rejected_naming_every(every: Any, fragment: str) -> None:
    with pytest.raises(ValidationError) as caught:
        build_timing(kind="interval", every=every, anchor_at=utc("2024-01-01T00:00Z"))
    assert caught.value.field == "every"
    assert fragment in str(caught.value)


def test_an_interval_is_anchored_at_start_at_rather_than_anchor_at() -> None:
    timing = build_timing(
        kind="interval",
        every=60,
        anchor_at=utc("2024-01-01T00:00:30Z"),
        start_at=utc("2024-01-01T00:10Z"),
    )
    assert timing.preview(utc("2024-01-01T00:00Z"), 2) == utcs(
        "2024-01-01T00:11Z", "2024-01-01T00:12Z"
    )


# Once -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("run_at", "after", "expected"),
    [
        pytest.param(
            utc("2024-01-01T12:00Z"), utc("2024-01-01T00:00Z"), ["2024-01-01T12:00Z"], id="ahead"
        ),
        pytest.param(utc("2024-01-01T12:00Z"), utc("2024-01-01T12:00Z"), [], id="starting-on-it"),
        pytest.param(utc("2024-01-01T12:00Z"), utc("2024-01-02T00:00Z"), [], id="in-the-past"),
        pytest.param(
            datetime(2024, 1, 1, 7, 0, tzinfo=NEW_YORK),
            utc("2024-01-01T00:00Z"),
            ["2024-01-01T12:00Z"],
            id="given-in-a-zone-returned-in-utc",
        ),
    ],
)
def test_a_once_spec_has_exactly_one_slot(
    run_at: datetime, after: datetime, expected: list[str]
) -> None:
    timing = build_timing(kind="once", run_at=run_at)
    slots = timing.preview(after, 5)
    assert slots == utcs(*expected)
    assert all(slot.tzinfo is UTC for slot in slots)


def test_a_once_spec_is_exhausted_after_its_slot() -> None:
    spec = OnceSpec(utc("2024-01-01T12:00Z"))
    assert list(spec.slots_after(utc("2024-01-01T00:00Z"))) == utcs("2024-01-01T12:00Z")
    assert build_timing(kind="once", run_at=spec.run_at).first_after(spec.run_at) is None


# Bounds ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "after", "expected"),
    [
        pytest.param(
            {"kind": "cron", "cron": "0 * * * *"},
            "2024-01-01T00:00Z",
            ["2024-01-01T01:00Z", "2024-01-01T02:00Z", "2024-01-01T03:00Z", "2024-01-01T04:00Z"],
            id="unbounded",
        ),
        pytest.param(
            {"kind": "cron", "cron": "0 * * * *", "start_at": utc("2024-01-01T02:00Z")},
            "2024-01-01T00:00Z",
            ["2024-01-01T02:00Z", "2024-01-01T03:00Z", "2024-01-01T04:00Z", "2024-01-01T05:00Z"],
            id="start-at-on-a-slot-includes-it",
        ),
        pytest.param(
            {"kind": "cron", "cron": "0 * * * *", "start_at": utc("2024-01-01T02:00:00.000001Z")},
            "2024-01-01T00:00Z",
            ["2024-01-01T03:00Z", "2024-01-01T04:00Z", "2024-01-01T05:00Z", "2024-01-01T06:00Z"],
            id="start-at-just-after-a-slot-excludes-it",
        ),
        pytest.param(
            {"kind": "cron", "cron": "0 * * * *", "end_at": utc("2024-01-01T03:00Z")},
            "2024-01-01T00:00Z",
            ["2024-01-01T01:00Z", "2024-01-01T02:00Z", "2024-01-01T03:00Z"],
            id="end-at-on-a-slot-includes-it",
        ),
        pytest.param(
            {"kind": "cron", "cron": "0 * * * *", "end_at": utc("2024-01-01T02:59:59.999999Z")},
            "2024-01-01T00:00Z",
            ["2024-01-01T01:00Z", "2024-01-01T02:00Z"],
            id="end-at-just-before-a-slot-excludes-it",
        ),
        pytest.param(
            {
                "kind": "cron",
                "cron": "0 * * * *",
                "start_at": utc("2024-01-01T02:00Z"),
                "end_at": utc("2024-01-01T02:00Z"),
            },
            "2024-01-01T00:00Z",
            ["2024-01-01T02:00Z"],
            id="start-equal-to-end-on-a-slot-has-one-slot",
        ),
        pytest.param(
            {
                "kind": "cron",
                "cron": "0 * * * *",
                "start_at": utc("2024-01-01T02:00Z"),
                "end_at": utc("2024-01-01T04:00Z"),
            },
            "2024-01-01T02:30Z",
            ["2024-01-01T03:00Z", "2024-01-01T04:00Z"],
            id="walk-starting-inside-the-bounds",
        ),
        pytest.param(
            {
                "kind": "interval",
                "every": 60,
                "start_at": utc("2024-01-01T00:00Z"),
                "end_at": utc("2024-01-01T00:03Z"),
            },
            "2023-12-31T00:00Z",
            ["2024-01-01T00:01Z", "2024-01-01T00:02Z", "2024-01-01T00:03Z"],
            id="interval-within-bounds",
        ),
        pytest.param(
            {
                "kind": "once",
                "run_at": utc("2024-01-01T00:00Z"),
                "start_at": utc("2024-01-01T00:00Z"),
                "end_at": utc("2024-01-01T00:00Z"),
            },
            "2023-12-31T00:00Z",
            ["2024-01-01T00:00Z"],
            id="once-on-both-bounds",
        ),
        pytest.param(
            {
                "kind": "once",
                "run_at": utc("2024-01-01T00:00Z"),
                "start_at": utc("2024-01-01T00:00:01Z"),
            },
            "2023-12-31T00:00Z",
            [],
            id="once-before-start-at",
        ),
        pytest.param(
            {
                "kind": "once",
                "run_at": utc("2024-01-01T00:00Z"),
                "end_at": utc("2023-12-31T23:59:59Z"),
            },
            "2023-12-31T00:00Z",
            [],
            id="once-after-end-at",
        ),
    ],
)
def test_bounds_are_inclusive(fields: dict[str, Any], after: str, expected: list[str]) -> None:
    timing = build_timing(**fields)
    assert timing.preview(utc(after), 4) == utcs(*expected)


def test_first_after_is_none_once_the_bounds_are_exhausted() -> None:
    timing = build_timing(kind="cron", cron="0 * * * *", end_at=utc("2024-01-01T03:00Z"))
    assert timing.first_after(utc("2024-01-01T02:30Z")) == utc("2024-01-01T03:00Z")
    assert timing.first_after(utc("2024-01-01T03:00Z")) is None


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        pytest.param(
            {
                "kind": "cron",
                "cron": "* * * * *",
                "start_at": utc("2024-01-02T00:00Z"),
                "end_at": utc("2024-01-01T00:00Z"),
            },
            "end_at",
            id="end-at-before-start-at",
        ),
        pytest.param(
            {
                "kind": "interval",
                "every": 60,
                "start_at": utc("2024-01-01T00:00Z"),
                "end_at": utc("2023-12-31T23:59:59.999999Z"),
            },
            "end_at",
            id="end-at-a-microsecond-before-start-at",
        ),
        pytest.param(
            {"kind": "cron", "cron": "* * * * *", "start_at": datetime(2024, 1, 1)},
            "start_at",
            id="naive-start-at",
        ),
        pytest.param(
            {"kind": "cron", "cron": "* * * * *", "end_at": datetime(2024, 1, 1)},
            "end_at",
            id="naive-end-at",
        ),
        pytest.param({"kind": "once", "run_at": datetime(2024, 1, 1)}, "run_at", id="naive-run-at"),
        pytest.param(
            {"kind": "interval", "every": 60, "anchor_at": datetime(2024, 1, 1)},
            "anchor_at",
            id="naive-anchor-at",
        ),
        pytest.param({"kind": "cron"}, "cron", id="cron-without-expression"),
        pytest.param(
            {"kind": "interval", "anchor_at": utc("2024-01-01T00:00Z")},
            "every",
            id="interval-without-every",
        ),
        pytest.param({"kind": "interval", "every": 60}, "anchor_at", id="interval-without-anchor"),
        pytest.param({"kind": "once"}, "run_at", id="once-without-run-at"),
        pytest.param({"kind": "weekly"}, "kind", id="unknown-kind"),
    ],
)
def test_bad_timing_fields_are_rejected_naming_the_field(
    fields: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        build_timing(**fields)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}=")


def test_preview_returns_fewer_slots_when_the_schedule_ends() -> None:
    timing = build_timing(
        kind="interval",
        every=60,
        start_at=utc("2024-01-01T00:00Z"),
        end_at=utc("2024-01-01T00:02Z"),
    )
    assert timing.preview(utc("2024-01-01T00:00Z"), 10) == utcs(
        "2024-01-01T00:01Z", "2024-01-01T00:02Z"
    )
    assert timing.preview(utc("2024-01-01T00:00Z"), 0) == []
