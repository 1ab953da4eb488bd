"""Misfire resolution: which overdue slots are published, skipped or dropped (SEMANTICS.md)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from itertools import count
from typing import Any

import pytest

from celery_dbeat.core.misfire import MisfirePolicy, MisfireRules, Resolution, SlotGroup, resolve
from tests.unit.conftest import at

UTC = timezone.utc
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
SKIP, LATEST, EARLIEST, ALL = (
    MisfirePolicy.SKIP,
    MisfirePolicy.LATEST,
    MisfirePolicy.EARLIEST,
    MisfirePolicy.ALL,
)


def every(step: timedelta, start: datetime) -> Iterator[datetime]:
    """An endless ascending slot series ``start, start + step, ...``."""
    for n in count():
        yield start + n * step


def group(resolved: SlotGroup[Any] | None) -> tuple[str, str, int] | None:
    if resolved is None:
        return None
    return (resolved.first.strftime("%H:%M"), resolved.last.strftime("%H:%M"), resolved.count)


def hhmm(slots: list[datetime]) -> list[str]:
    return [s.strftime("%H:%M") for s in slots]


def test_default_rules_are_latest_with_5s_tolerance_unbounded_grace_and_limit_100() -> None:
    assert MisfireRules() == MisfireRules(LATEST, timedelta(seconds=5), None, 100)


# SEMANTICS.md canonical check: hourly, all beats down from 09:59:30 to 13:10:00 --------------


@pytest.mark.parametrize(
    ("policy", "grace", "send", "skipped", "dropped"),
    [
        pytest.param(SKIP, None, [], ("10:00", "13:00", 4), None, id="skip"),
        pytest.param(LATEST, None, ["13:00"], ("10:00", "12:00", 3), None, id="latest"),
        pytest.param(EARLIEST, None, ["10:00"], ("11:00", "13:00", 3), None, id="earliest"),
        pytest.param(ALL, None, ["10:00", "11:00", "12:00", "13:00"], None, None, id="all"),
        pytest.param(
            SKIP, 90 * MINUTE, [], ("12:00", "13:00", 2), ("10:00", "11:00", 2), id="skip-w90"
        ),
        pytest.param(
            LATEST,
            90 * MINUTE,
            ["13:00"],
            ("12:00", "12:00", 1),
            ("10:00", "11:00", 2),
            id="latest-w90",
        ),
        pytest.param(
            EARLIEST,
            90 * MINUTE,
            ["12:00"],
            ("13:00", "13:00", 1),
            ("10:00", "11:00", 2),
            id="earliest-w90",
        ),
        pytest.param(
            ALL, 90 * MINUTE, ["12:00", "13:00"], None, ("10:00", "11:00", 2), id="all-w90"
        ),
    ],
)
def test_the_canonical_misfire_check(
    policy: MisfirePolicy,
    grace: timedelta | None,
    send: list[str],
    skipped: tuple[str, str, int] | None,
    dropped: tuple[str, str, int] | None,
) -> None:
    # The 09:00 slot fired before the outage; the first unrecorded slot is 10:00.
    result = resolve(every(HOUR, at("10:00")), at("13:10"), MisfireRules(policy, grace=grace))
    assert hhmm(result.send) == send
    assert group(result.skipped) == skipped
    assert group(result.dropped) == dropped
    assert result.next_slot == at("14:00")


# How many slots were missed --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "now", "send", "skipped", "next_slot"),
    [
        pytest.param(LATEST, "09:30", [], None, "10:00", id="none-due"),
        pytest.param(SKIP, "10:00", ["10:00"], None, "11:00", id="due-exactly-now-fires"),
        pytest.param(SKIP, "10:00:04", ["10:00"], None, "11:00", id="late-within-eps-fires"),
        pytest.param(SKIP, "10:30", [], ("10:00", "10:00", 1), "11:00", id="one-missed-skip"),
        pytest.param(LATEST, "10:30", ["10:00"], None, "11:00", id="one-missed-latest"),
        pytest.param(EARLIEST, "10:30", ["10:00"], None, "11:00", id="one-missed-earliest"),
        pytest.param(ALL, "10:30", ["10:00"], None, "11:00", id="one-missed-all"),
    ],
)
def test_zero_or_one_missed_slot(
    policy: MisfirePolicy,
    now: str,
    send: list[str],
    skipped: tuple[str, str, int] | None,
    next_slot: str,
) -> None:
    result = resolve(every(HOUR, at("10:00")), at(now), MisfireRules(policy))
    assert hhmm(result.send) == send
    assert group(result.skipped) == skipped
    assert result.dropped is None
    assert result.next_slot == at(next_slot)


# 150 slots every 5 minutes from 00:00 to 12:25, all missed; now 12:27:30; next slot 12:30.
_MANY_NOW = at("12:27:30")


@pytest.mark.parametrize(
    ("rules", "sent", "first_sent", "last_sent", "skipped", "dropped"),
    [
        pytest.param(MisfireRules(SKIP), 0, None, None, ("00:00", "12:25", 150), None, id="skip"),
        pytest.param(
            MisfireRules(LATEST), 1, "12:25", "12:25", ("00:00", "12:20", 149), None, id="latest"
        ),
        pytest.param(
            MisfireRules(EARLIEST),
            1,
            "00:00",
            "00:00",
            ("00:05", "12:25", 149),
            None,
            id="earliest",
        ),
        pytest.param(
            MisfireRules(ALL),
            100,
            "04:10",
            "12:25",
            ("00:00", "04:05", 50),
            None,
            id="all-keeps-the-newest-100",
        ),
        pytest.param(
            MisfireRules(ALL, catchup_limit=1000),
            150,
            "00:00",
            "12:25",
            None,
            None,
            id="all-with-a-limit-above-the-count",
        ),
        pytest.param(
            MisfireRules(ALL, grace=HOUR),
            12,
            "11:30",
            "12:25",
            None,
            ("00:00", "11:25", 138),
            id="all-with-one-hour-grace",
        ),
        pytest.param(
            MisfireRules(LATEST, grace=HOUR),
            1,
            "12:25",
            "12:25",
            ("11:30", "12:20", 11),
            ("00:00", "11:25", 138),
            id="latest-with-one-hour-grace",
        ),
    ],
)
def test_more_than_a_hundred_missed_slots(
    rules: MisfireRules,
    sent: int,
    first_sent: str | None,
    last_sent: str | None,
    skipped: tuple[str, str, int] | None,
    dropped: tuple[str, str, int] | None,
) -> None:
    result = resolve(every(5 * MINUTE, at("00:00")), _MANY_NOW, rules)
    assert len(result.send) == sent
    assert result.send == sorted(result.send)
    if sent:
        assert (hhmm(result.send[:1])[0], hhmm(result.send[-1:])[0]) == (first_sent, last_sent)
    assert group(result.skipped) == skipped
    assert group(result.dropped) == dropped
    assert result.next_slot == at("12:30")
    # Every overdue slot is accounted for exactly once.
    assert result.missed == 150


# catchup_limit (policy all): newest kept, the rest counted as skipped ---------------------------


@pytest.mark.parametrize(
    ("limit", "now", "send", "skipped"),
    [
        pytest.param(0, "09:30", [], ("00:00", "09:00", 10), id="zero-sends-nothing"),
        pytest.param(1, "09:30", ["09:00"], ("00:00", "08:00", 9), id="one-keeps-the-newest"),
        pytest.param(3, "09:30", ["07:00", "08:00", "09:00"], ("00:00", "06:00", 7), id="three"),
        pytest.param(10, "09:30", [f"{h:02d}:00" for h in range(10)], None, id="exactly-ten"),
        pytest.param(100, "09:30", [f"{h:02d}:00" for h in range(10)], None, id="above-count"),
        pytest.param(
            3,
            "09:00:03",
            ["06:00", "07:00", "08:00", "09:00"],
            ("00:00", "05:00", 6),
            id="late-slot-is-not-counted-against-the-limit",
        ),
    ],
)
def test_catchup_limit_keeps_the_newest_slots(
    limit: int, now: str, send: list[str], skipped: tuple[str, str, int] | None
) -> None:
    result = resolve(every(HOUR, at("00:00")), at(now), MisfireRules(ALL, catchup_limit=limit))
    assert hhmm(result.send) == send
    assert group(result.skipped) == skipped
    assert result.dropped is None
    assert result.next_slot == at("10:00")


# The on-time tolerance and the grace window ----------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "tolerance", "now", "send", "skipped"),
    [
        pytest.param(SKIP, 60, "10:00:59.999999", ["10:00"], None, id="skip-late-under-eps"),
        pytest.param(SKIP, 60, "10:01:00", ["10:00"], None, id="skip-late-exactly-eps"),
        pytest.param(SKIP, 60, "10:01:00.000001", [], 1, id="skip-past-eps-is-missed"),
        pytest.param(EARLIEST, 60, "10:01:00", ["10:00"], None, id="earliest-late-exactly-eps"),
        pytest.param(ALL, 60, "10:01:00", ["10:00"], None, id="all-late-exactly-eps"),
        pytest.param(LATEST, 60, "10:01:00", ["10:00"], None, id="latest-late-exactly-eps"),
        pytest.param(SKIP, 0, "10:00", ["10:00"], None, id="zero-tolerance-on-time-fires"),
        pytest.param(SKIP, 0, "10:00:00.000001", [], 1, id="zero-tolerance-one-us-late-missed"),
        pytest.param(SKIP, 600, "10:09", ["10:00"], None, id="wider-tolerance"),
    ],
)
def test_a_slot_late_by_at_most_the_tolerance_fires_whatever_the_policy(
    policy: MisfirePolicy, tolerance: int, now: str, send: list[str], skipped: int | None
) -> None:
    rules = MisfireRules(policy, tolerance=timedelta(seconds=tolerance))
    result = resolve(every(HOUR, at("10:00")), at(now), rules)
    assert hhmm(result.send) == send
    assert (result.skipped.count if result.skipped else None) == skipped
    assert result.next_slot == at("11:00")


def test_late_slots_fire_alongside_the_policys_choice() -> None:
    # 10:00 and 11:00 are missed; 12:00 is 3 s late and fires normally.
    result = resolve(every(HOUR, at("10:00")), at("12:00:03"), MisfireRules(LATEST))
    assert hhmm(result.send) == ["11:00", "12:00"]
    assert group(result.skipped) == ("10:00", "10:00", 1)


@pytest.mark.parametrize(
    ("grace", "send", "dropped"),
    [
        pytest.param(90 * MINUTE, ["10:00"], None, id="slot-exactly-w-old-is-eligible"),
        pytest.param(
            90 * MINUTE - timedelta(microseconds=1),
            ["11:00"],
            ("10:00", "10:00", 1),
            id="slot-a-microsecond-older-than-w-is-dropped",
        ),
    ],
)
def test_the_grace_window_is_inclusive(
    grace: timedelta, send: list[str], dropped: tuple[str, str, int] | None
) -> None:
    result = resolve(every(HOUR, at("10:00")), at("11:30"), MisfireRules(EARLIEST, grace=grace))
    assert hhmm(result.send) == send
    assert group(result.dropped) == dropped


# Finite slot series ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slots", "policy", "send", "skipped"),
    [
        pytest.param([], LATEST, [], None, id="no-slots-at-all"),
        pytest.param(["10:00"], LATEST, ["10:00"], None, id="once-overdue-latest"),
        pytest.param(["10:00"], SKIP, [], ("10:00", "10:00", 1), id="once-overdue-skip"),
        pytest.param(
            ["09:00", "10:00", "11:00"], ALL, ["09:00", "10:00", "11:00"], None, id="ends-all"
        ),
        pytest.param(
            ["09:00", "10:00", "11:00"], LATEST, ["11:00"], ("09:00", "10:00", 2), id="ends-latest"
        ),
    ],
)
def test_an_exhausted_slot_series_has_no_next_slot(
    slots: list[str], policy: MisfirePolicy, send: list[str], skipped: tuple[str, str, int] | None
) -> None:
    result = resolve(iter([at(s) for s in slots]), at("12:00"), MisfireRules(policy))
    assert hhmm(result.send) == send
    assert group(result.skipped) == skipped
    assert result.next_slot is None


def test_resolve_consumes_slots_only_up_to_the_first_after_now() -> None:
    slots = every(HOUR, at("10:00"))
    result = resolve(slots, at("12:30"), MisfireRules(ALL))
    assert result.next_slot == at("13:00")
    assert next(slots) == at("14:00")


def test_an_empty_resolution_sends_nothing() -> None:
    assert Resolution().send == []
    assert Resolution().missed == 0
