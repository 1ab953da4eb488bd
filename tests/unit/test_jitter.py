"""Deterministic jitter (SEMANTICS.md "Jitter").

``fire_at = slot + (H(schedule, slot) mod J)``, capped so it never reaches the next slot. Every
beat computes the same instant; the fire key stays (schedule, slot).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from celery_dbeat.core.fires import FireStatus, NewFire, fire_task_id
from celery_dbeat.core.misfire import MisfireRules
from celery_dbeat.core.planning import plan
from celery_dbeat.core.timing.jitter import fire_at
from tests.unit.conftest import at
from tests.unit.test_planning import row

UTC = timezone.utc
PENDING, SKIPPED = FireStatus.PENDING, FireStatus.SKIPPED
DEFAULTS = MisfireRules()
HOUR = timedelta(hours=1)
TEN_MINUTES = timedelta(minutes=10)
#: The on-time tolerance ``eps`` of the default rules.
EPS = DEFAULTS.tolerance


def hourly(jitter: float = 600.0, **fields: Any) -> Any:
    """The hourly cron row ``s`` of ``test_planning`` with a jitter (default 10 min)."""
    return row(jitter=jitter, **fields)


def jittered(slot: datetime, jitter: timedelta = TEN_MINUTES, name: str = "s") -> datetime:
    """``fire_at`` of an hourly slot of schedule ``name``."""
    return fire_at(name, slot, jitter, slot + HOUR)


# fire_at -----------------------------------------------------------------------------------------

GOLDEN_SLOT = datetime(2024, 1, 1, 10, 0, tzinfo=UTC)
GOLDEN = datetime(2024, 1, 1, 10, 0, 46, 470173, tzinfo=UTC)


def test_fire_at_is_pinned_so_every_beat_and_version_computes_the_same_instant() -> None:
    assert fire_at("nightly-report", GOLDEN_SLOT, TEN_MINUTES, GOLDEN_SLOT + HOUR) == GOLDEN


def test_fire_at_is_the_same_in_another_process_with_another_hash_seed() -> None:
    code = (
        "from datetime import datetime, timedelta, timezone\n"
        "from celery_dbeat.core.timing.jitter import fire_at\n"
        "slot = datetime(2024, 1, 1, 10, tzinfo=timezone.utc)\n"
        "print(fire_at('nightly-report', slot, timedelta(minutes=10),"
        " slot + timedelta(hours=1)).isoformat())\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert outputs == {GOLDEN.isoformat()}


@pytest.mark.parametrize(
    "same_slot",
    [
        pytest.param(GOLDEN_SLOT, id="utc"),
        pytest.param(GOLDEN_SLOT.astimezone(ZoneInfo("Asia/Kathmandu")), id="kathmandu"),
        pytest.param(GOLDEN_SLOT.astimezone(ZoneInfo("America/St_Johns")), id="st-johns"),
    ],
)
def test_fire_at_depends_on_the_slot_instant_not_on_the_zone_it_is_written_in(
    same_slot: datetime,
) -> None:
    assert fire_at("nightly-report", same_slot, TEN_MINUTES, same_slot + HOUR) == GOLDEN


def test_fire_at_repeated_calls_agree() -> None:
    slots = [GOLDEN_SLOT + n * HOUR for n in range(50)]
    first = [fire_at("s", slot, TEN_MINUTES, slot + HOUR) for slot in slots]
    again = [fire_at("s", slot, TEN_MINUTES, slot + HOUR) for slot in reversed(slots)]
    assert first == list(reversed(again))


def test_fire_at_differs_between_schedules_sharing_a_slot() -> None:
    instants = {fire_at(f"s{n}", GOLDEN_SLOT, TEN_MINUTES, GOLDEN_SLOT + HOUR) for n in range(100)}
    assert len(instants) == 100


def test_a_thousand_slots_spread_over_the_whole_jitter_window() -> None:
    jitter = timedelta(seconds=30)
    slots = [GOLDEN_SLOT + n * timedelta(minutes=1) for n in range(1000)]
    offsets = [
        fire_at("minutely", slot, jitter, slot + timedelta(minutes=1)) - slot for slot in slots
    ]

    assert all(timedelta(0) <= offset < jitter for offset in offsets)
    assert len(set(offsets)) > 990
    # Ten 3-second buckets of about 100 each: no bucket empty or crowded.
    buckets = Counter(int(offset / timedelta(seconds=3)) for offset in offsets)
    assert sorted(buckets) == list(range(10))
    assert all(60 <= n <= 140 for n in buckets.values()), buckets


def test_a_jitter_wider_than_the_gap_is_narrowed_and_never_reaches_the_next_slot() -> None:
    gap = timedelta(minutes=1)
    slots = [GOLDEN_SLOT + n * gap for n in range(1000)]
    offsets = [fire_at("minutely", slot, HOUR, slot + gap) - slot for slot in slots]

    assert all(timedelta(0) <= offset < gap for offset in offsets)
    # Spread over the whole gap, not piled up at a cap.
    assert max(offsets) > timedelta(seconds=55)
    assert min(offsets) < timedelta(seconds=5)
    assert Counter(offsets).most_common(1)[0][1] == 1


def test_the_last_slot_of_a_schedule_gets_the_whole_jitter_window() -> None:
    offsets = [fire_at(f"once-{n}", GOLDEN_SLOT, HOUR, None) - GOLDEN_SLOT for n in range(200)]
    assert all(timedelta(0) <= offset < HOUR for offset in offsets)
    assert max(offsets) > timedelta(minutes=50)


@pytest.mark.parametrize(
    ("jitter", "next_slot"),
    [
        pytest.param(None, GOLDEN_SLOT + HOUR, id="none"),
        pytest.param(timedelta(0), GOLDEN_SLOT + HOUR, id="zero"),
        pytest.param(None, None, id="none-last-slot"),
        pytest.param(timedelta(0), None, id="zero-last-slot"),
        pytest.param(HOUR, GOLDEN_SLOT + timedelta(microseconds=1), id="next-slot-1us-later"),
        pytest.param(timedelta(microseconds=1), GOLDEN_SLOT + HOUR, id="jitter-1us"),
    ],
)
def test_no_jitter_or_no_room_for_one_returns_the_slot(
    jitter: timedelta | None, next_slot: datetime | None
) -> None:
    for name in ("s", "nightly-report", "other"):
        assert fire_at(name, GOLDEN_SLOT, jitter, next_slot) == GOLDEN_SLOT


# plan() on a jittered row ------------------------------------------------------------------------

#: Schedule ``s``'s 10:00 slot is due at 10:09:45.3 and its 11:00 slot at 11:04:18.8.
TEN_FIRE_AT = jittered(at("10:00"))
ELEVEN_FIRE_AT = jittered(at("11:00"))


def test_the_jittered_instants_used_below_are_well_inside_the_hour() -> None:
    assert TEN_FIRE_AT - at("10:00") > timedelta(minutes=5)
    assert ELEVEN_FIRE_AT - at("11:00") > timedelta(minutes=2)


def test_a_new_jittered_row_gets_its_first_slot_and_that_slots_fire_at_as_due_at() -> None:
    transition = plan(hourly(), at("09:10"), DEFAULTS)
    assert transition.error is None
    assert transition.fires == []
    assert (transition.next_run_at, transition.due_at) == (at("10:00"), TEN_FIRE_AT)


@pytest.mark.parametrize(
    "now",
    [
        pytest.param(at("10:00"), id="at-the-slot"),
        pytest.param(at("10:00") + (TEN_FIRE_AT - at("10:00")) / 2, id="half-way"),
        pytest.param(TEN_FIRE_AT - timedelta(microseconds=1), id="1us-before-fire-at"),
    ],
)
def test_a_jittered_slot_does_not_fire_before_its_fire_at(now: datetime) -> None:
    transition = plan(hourly(next_run_at=at("10:00")), now, DEFAULTS)
    assert transition.error is None
    assert transition.fires == []
    assert transition.runs_added == 0
    assert transition.last_slot is None
    assert (transition.next_run_at, transition.due_at) == (at("10:00"), TEN_FIRE_AT)


@pytest.mark.parametrize(
    "now",
    [
        pytest.param(TEN_FIRE_AT, id="at-fire-at"),
        pytest.param(TEN_FIRE_AT + timedelta(seconds=10), id="10s-after-fire-at"),
        pytest.param(TEN_FIRE_AT + EPS, id="eps-after-fire-at"),
    ],
)
def test_a_jittered_slot_fires_at_its_fire_at_keyed_by_the_slot(now: datetime) -> None:
    transition = plan(hourly(next_run_at=at("10:00")), now, DEFAULTS)
    assert transition.error is None
    assert transition.fires == [NewFire(at("10:00"), PENDING, fire_task_id("s", at("10:00")))]
    assert transition.last_slot == at("10:00")
    assert transition.runs_added == 1
    assert (transition.next_run_at, transition.due_at) == (at("11:00"), ELEVEN_FIRE_AT)


def test_the_task_id_of_a_jittered_fire_is_the_slots_not_the_fire_ats() -> None:
    transition = plan(hourly(next_run_at=at("10:00")), TEN_FIRE_AT, DEFAULTS)
    (fire,) = transition.fires
    assert fire.task_id == fire_task_id("s", at("10:00"))
    assert fire.task_id != fire_task_id("s", TEN_FIRE_AT)
    assert (
        fire.task_id == plan(row(next_run_at=at("10:00")), at("10:00"), DEFAULTS).fires[0].task_id
    )


def test_a_jitter_wider_than_the_interval_keeps_each_due_at_before_the_next_slot() -> None:
    minutely = hourly(jitter=3600.0, cron="* * * * *", next_run_at=at("10:00"))
    now = at("10:00")
    for _ in range(120):
        transition = plan(minutely, now, DEFAULTS)
        assert transition.next_run_at is not None
        assert transition.due_at is not None
        if transition.fires:
            assert [f.slot for f in transition.fires] == [minutely.next_run_at]
            assert transition.next_run_at == minutely.next_run_at + timedelta(minutes=1)
        assert (
            transition.next_run_at
            <= transition.due_at
            < transition.next_run_at + timedelta(minutes=1)
        )
        minutely = hourly(
            jitter=3600.0,
            cron="* * * * *",
            next_run_at=transition.next_run_at,
            last_slot=transition.last_slot or minutely.last_slot,
        )
        now = transition.due_at


@pytest.mark.parametrize("policy", ["skip", "latest", "earliest", "all"])
def test_misfire_lateness_is_measured_from_fire_at_so_a_jittered_fire_just_late_still_fires(
    policy: str,
) -> None:
    # 10 min past the slot, but eps - 1 s past its fire_at: late, not missed.
    now = TEN_FIRE_AT + EPS - timedelta(seconds=1)
    assert now - at("10:00") > EPS
    transition = plan(hourly(next_run_at=at("10:00"), misfire_policy=policy), now, DEFAULTS)
    assert transition.fires == [NewFire(at("10:00"), PENDING, fire_task_id("s", at("10:00")))]
    assert (transition.next_run_at, transition.due_at) == (at("11:00"), ELEVEN_FIRE_AT)


def test_a_jittered_fire_later_than_eps_after_its_fire_at_is_missed() -> None:
    now = TEN_FIRE_AT + EPS + timedelta(seconds=1)
    transition = plan(hourly(next_run_at=at("10:00"), misfire_policy="skip"), now, DEFAULTS)
    assert transition.fires == [NewFire(at("10:00"), SKIPPED, slot_count=1, first_slot=at("10:00"))]
    assert transition.runs_added == 0
    assert (transition.next_run_at, transition.due_at) == (at("11:00"), ELEVEN_FIRE_AT)


def test_a_jittered_once_row_fires_at_its_fire_at_and_finishes() -> None:
    due = fire_at("s", at("12:00"), TEN_MINUTES, None)
    assert due > at("12:00")
    once = hourly(kind="once", cron=None, run_at=at("12:00"), next_run_at=at("12:00"))

    before = plan(once, due - timedelta(microseconds=1), DEFAULTS)
    assert (before.fires, before.next_run_at, before.due_at) == ([], at("12:00"), due)

    after = plan(once, due, DEFAULTS)
    assert after.fires == [NewFire(at("12:00"), PENDING, fire_task_id("s", at("12:00")))]
    assert after.next_run_at is None
    assert after.finished
