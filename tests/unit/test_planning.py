"""Fire planning: from a schedule row and ``now``, the transition beat records."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from celery_dbeat.core.fires import (
    QUEUED_RUN_SLOTS,
    TASK_ID_NAMESPACE,
    FireStatus,
    NewFire,
    ScheduleRow,
    decode_slots,
    encode_slots,
    fire_task_id,
    queued_fires,
)
from celery_dbeat.core.misfire import MisfirePolicy, MisfireRules
from celery_dbeat.core.planning import plan
from tests.unit.conftest import at

UTC = timezone.utc
PENDING, SKIPPED, DROPPED = FireStatus.PENDING, FireStatus.SKIPPED, FireStatus.DROPPED
DEFAULTS = MisfireRules()


def row(**fields: Any) -> ScheduleRow:
    """An hourly cron schedule named ``s``, created at midnight, with ``fields`` overridden; its
    ``uid`` is its name unless given (so ``fire_task_id(name, slot)`` is its task id)."""
    values: dict[str, Any] = {
        "id": 1,
        "uid": fields.get("name", "s"),
        "name": "s",
        "task": "tasks.report",
        "args": "[]",
        "kwargs": "{}",
        "options": "{}",
        "kind": "cron",
        "cron": "0 * * * *",
        "timezone": "UTC",
        "every": None,
        "run_at": None,
        "anchor_at": None,
        "dst_gap": None,
        "dst_fold": None,
        "cron_days": None,
        "jitter": None,
        "start_at": None,
        "end_at": None,
        "max_runs": None,
        "run_count": 0,
        "misfire_policy": None,
        "misfire_grace": None,
        "catchup_limit": None,
        "next_run_at": None,
        "last_slot": None,
        "version": 1,
        "created_at": at("00:00"),
    }
    values.update(fields)
    return ScheduleRow(**values)


def pending(name: str, *slots: str) -> list[NewFire]:
    return [NewFire(at(s), PENDING, fire_task_id(name, at(s))) for s in slots]


def queued(name: str, *slots: str) -> list[NewFire]:
    """Catch-up fires of policy ``all``, sent with the capacity on-time fires leave: one queued
    run standing for all of them (a single slot is a queued fire of its own)."""
    instants = tuple(at(s) for s in slots)
    if len(instants) == 1:
        return [NewFire(instants[0], FireStatus.QUEUED, fire_task_id(name, instants[0]))]
    return [
        NewFire(
            instants[-1],
            FireStatus.QUEUED,
            slot_count=len(instants),
            first_slot=instants[0],
            slots=instants,
        )
    ]


def group(status: FireStatus, first: str, last: str, count: int) -> NewFire:
    return NewFire(at(last), status, slot_count=count, first_slot=at(first))


# Queued runs -----------------------------------------------------------------------------------


def test_a_catch_up_longer_than_a_queued_run_holds_is_several_runs_the_last_slot_alone_a_fire() -> (
    None
):
    slots = [at("10:00") + n * timedelta(seconds=1) for n in range(2 * QUEUED_RUN_SLOTS + 1)]

    fires = queued_fires("s", slots)

    assert [f.slot_count for f in fires] == [QUEUED_RUN_SLOTS, QUEUED_RUN_SLOTS, 1]
    assert [s for f in fires for s in (f.slots or (f.slot,))] == slots
    assert all(f.slot == f.slots[-1] and f.first_slot == f.slots[0] for f in fires[:2])
    assert [f.task_id for f in fires] == [None, None, fire_task_id("s", slots[-1])]
    assert {f.status for f in fires} == {FireStatus.QUEUED}


def test_a_queued_runs_slots_are_stored_as_iso_instants_and_read_back_aware_in_utc() -> None:
    new_york = ZoneInfo("America/New_York")
    slots = [datetime(2024, 11, 3, 1, 30, fold=fold, tzinfo=new_york) for fold in (0, 1)]
    slots.append(datetime(2024, 11, 3, 7, 0, 0, 123456, tzinfo=timezone.utc))

    text = encode_slots(slots)

    assert text.startswith('["2024-11-03T05:30:00+00:00", "2024-11-03T06:30:00+00:00"')
    # (Aware instants of a repeated hour never equal another zone's: compare in UTC.)
    assert decode_slots(text) == [slot.astimezone(timezone.utc) for slot in slots]
    assert {s.tzinfo for s in decode_slots(text)} == {timezone.utc}


# Task ids --------------------------------------------------------------------------------------


def test_fire_task_id_is_a_pinned_uuid_so_every_beat_and_version_agrees() -> None:
    slot = at("10:00")
    assert fire_task_id("nightly-report", slot) == "3ebb01af-3e44-5dbd-94ea-d57dc73edb6a"
    assert uuid.UUID(fire_task_id("nightly-report", slot)).version == 5


@pytest.mark.parametrize(
    ("one", "other", "same"),
    [
        pytest.param(("s", at("10:00"), False), ("s", at("10:00"), False), True, id="same-fire"),
        pytest.param(
            ("s", at("10:00"), False),
            ("s", at("10:00").astimezone(ZoneInfo("Asia/Tokyo")), False),
            True,
            id="same-instant-in-another-zone",
        ),
        pytest.param(
            ("s", at("10:00"), False),
            ("s", at("10:00:00.000001"), False),
            False,
            id="slots-a-microsecond-apart",
        ),
        pytest.param(
            ("s", at("10:00"), False), ("s", at("10:00", day=2), False), False, id="next-day"
        ),
        pytest.param(("s", at("10:00"), False), ("t", at("10:00"), False), False, id="other-name"),
        pytest.param(
            ("a\x00slot", at("10:00"), False),
            ("a", at("10:00"), False),
            False,
            id="name-containing-the-separator",
        ),
        pytest.param(("s", at("10:00"), False), ("s", at("10:00"), True), False, id="manual-run"),
    ],
)
def test_fire_task_id_is_the_same_exactly_for_the_same_fire(
    one: tuple[str, datetime, bool], other: tuple[str, datetime, bool], same: bool
) -> None:
    first = fire_task_id(one[0], one[1], manual=one[2])
    second = fire_task_id(other[0], other[1], manual=other[2])
    assert (first == second) is same


@settings(max_examples=500, deadline=None)
@given(
    uid=st.text(),
    slot=st.datetimes(
        min_value=datetime(1900, 1, 2), max_value=datetime(8999, 12, 30), timezones=st.timezones()
    ),
    manual=st.booleans(),
)
def test_fire_task_id_is_uuid5_of_the_schedule_and_the_slot_in_utc(
    uid: str, slot: datetime, manual: bool
) -> None:
    # The formula its docstring gives, computed by the standard library.
    instant = slot.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    name = f"{uid}\x00{'manual' if manual else 'slot'}\x00{instant}"
    assert fire_task_id(uid, slot, manual=manual) == str(uuid.uuid5(TASK_ID_NAMESPACE, name))


# Due rows --------------------------------------------------------------------------------------


def test_a_due_row_records_one_pending_fire_and_moves_to_the_next_slot() -> None:
    transition = plan(row(next_run_at=at("10:00")), at("10:00:10"), DEFAULTS)
    assert transition.error is None
    assert transition.fires == pending("s", "10:00")
    assert transition.next_run_at == at("11:00")
    assert transition.last_slot == at("10:00")
    assert transition.runs_added == 1
    assert not transition.finished


def test_a_row_not_yet_due_records_nothing_and_keeps_next_run_at() -> None:
    transition = plan(row(next_run_at=at("11:00")), at("10:59:59"), DEFAULTS)
    assert transition.fires == []
    assert transition.next_run_at == at("11:00")
    assert transition.last_slot is None
    assert transition.runs_added == 0


@pytest.mark.parametrize(
    ("fields", "rules", "fires"),
    [
        pytest.param(
            {"misfire_policy": "skip"}, DEFAULTS, [group(SKIPPED, "10:00", "13:00", 4)], id="skip"
        ),
        pytest.param(
            {},
            DEFAULTS,
            [*pending("s", "13:00"), group(SKIPPED, "10:00", "12:00", 3)],
            id="latest-by-default",
        ),
        pytest.param(
            {"misfire_policy": "earliest"},
            DEFAULTS,
            [*pending("s", "10:00"), group(SKIPPED, "11:00", "13:00", 3)],
            id="earliest",
        ),
        pytest.param(
            {"misfire_policy": "all"},
            DEFAULTS,
            queued("s", "10:00", "11:00", "12:00", "13:00"),
            id="all",
        ),
        pytest.param(
            {"misfire_policy": "skip", "misfire_grace": 5400},
            DEFAULTS,
            [group(SKIPPED, "12:00", "13:00", 2), group(DROPPED, "10:00", "11:00", 2)],
            id="skip-w90",
        ),
        pytest.param(
            {"misfire_grace": 5400},
            DEFAULTS,
            [
                *pending("s", "13:00"),
                group(SKIPPED, "12:00", "12:00", 1),
                group(DROPPED, "10:00", "11:00", 2),
            ],
            id="latest-w90",
        ),
        pytest.param(
            {"misfire_policy": "earliest", "misfire_grace": 5400},
            DEFAULTS,
            [
                *pending("s", "12:00"),
                group(SKIPPED, "13:00", "13:00", 1),
                group(DROPPED, "10:00", "11:00", 2),
            ],
            id="earliest-w90",
        ),
        pytest.param(
            {"misfire_policy": "all", "misfire_grace": 5400},
            DEFAULTS,
            [*queued("s", "12:00", "13:00"), group(DROPPED, "10:00", "11:00", 2)],
            id="all-w90",
        ),
        pytest.param(
            {},
            MisfireRules(MisfirePolicy.ALL, grace=timedelta(minutes=90)),
            [*queued("s", "12:00", "13:00"), group(DROPPED, "10:00", "11:00", 2)],
            id="beat-defaults-apply-when-the-row-sets-none",
        ),
        pytest.param(
            {"misfire_policy": "earliest", "misfire_grace": 5400},
            MisfireRules(MisfirePolicy.ALL),
            [
                *pending("s", "12:00"),
                group(SKIPPED, "13:00", "13:00", 1),
                group(DROPPED, "10:00", "11:00", 2),
            ],
            id="row-settings-override-beat-defaults",
        ),
        pytest.param(
            {"misfire_policy": "all", "catchup_limit": 2},
            DEFAULTS,
            [*queued("s", "12:00", "13:00"), group(SKIPPED, "10:00", "11:00", 2)],
            id="row-catchup-limit",
        ),
    ],
)
def test_missed_slots_become_pending_or_queued_fires_and_counted_group_rows(
    fields: dict[str, Any], rules: MisfireRules, fires: list[NewFire]
) -> None:
    # SEMANTICS.md canonical check: hourly, every beat down from 09:59:30 to 13:10:00.
    transition = plan(row(next_run_at=at("10:00"), **fields), at("13:10"), rules)
    assert transition.error is None
    assert transition.fires == fires
    assert transition.next_run_at == at("14:00")
    assert transition.last_slot == at("13:00")
    assert transition.runs_added == sum(
        f.slot_count for f in fires if f.status in (PENDING, FireStatus.QUEUED)
    )
    assert not transition.finished


def test_an_interval_does_not_drift_when_a_tick_is_late() -> None:
    interval = row(
        kind="interval", cron=None, every=60.0, anchor_at=at("00:00"), next_run_at=at("00:01")
    )
    transition = plan(interval, at("00:01:00.734"), DEFAULTS)
    assert transition.fires == pending("s", "00:01")
    assert transition.next_run_at == at("00:02")


def test_a_once_row_fires_and_finishes() -> None:
    once = row(kind="once", cron=None, run_at=at("12:00"), next_run_at=at("12:00"))
    transition = plan(once, at("12:00:01"), DEFAULTS)
    assert transition.fires == pending("s", "12:00")
    assert transition.next_run_at is None
    assert transition.finished


def test_a_row_past_end_at_finishes_after_its_last_slot() -> None:
    bounded = row(next_run_at=at("10:00"), end_at=at("10:30"))
    transition = plan(bounded, at("10:00:05"), DEFAULTS)
    assert transition.fires == pending("s", "10:00")
    assert transition.next_run_at is None
    assert transition.finished


# max_runs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "now", "fires", "next_run_at", "finished"),
    [
        pytest.param(
            {"max_runs": 3, "run_count": 0},
            "10:00:05",
            pending("s", "10:00"),
            "11:00",
            False,
            id="runs-left-after-this-fire",
        ),
        pytest.param(
            {"max_runs": 3, "run_count": 2},
            "10:00:05",
            pending("s", "10:00"),
            None,
            True,
            id="last-run-finishes",
        ),
        pytest.param(
            {"max_runs": 3, "run_count": 1, "misfire_policy": "all"},
            "13:10",
            queued("s", "10:00", "11:00"),
            None,
            True,
            id="catch-up-trimmed-to-the-runs-left",
        ),
        pytest.param(
            {"max_runs": 3, "run_count": 3},
            "10:00:05",
            [],
            None,
            True,
            id="already-used-up",
        ),
        pytest.param(
            {"max_runs": 3, "run_count": 5},
            "10:00:05",
            [],
            None,
            True,
            id="run-count-above-max-runs",
        ),
    ],
)
def test_max_runs_trims_the_fires_and_finishes_the_schedule(
    fields: dict[str, Any],
    now: str,
    fires: list[NewFire],
    next_run_at: str | None,
    finished: bool,
) -> None:
    transition = plan(row(next_run_at=at("10:00"), **fields), at(now), DEFAULTS)
    assert transition.error is None
    assert transition.fires == fires
    assert transition.runs_added == sum(f.slot_count for f in fires)
    assert transition.next_run_at == (at(next_run_at) if next_run_at else None)
    assert transition.finished is finished


# next_run_at NULL: compute from now ------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "now", "next_run_at"),
    [
        pytest.param({}, "13:10", "14:00", id="cron-first-slot-after-now"),
        pytest.param({}, "14:00", "15:00", id="a-slot-equal-to-now-is-not-fired"),
        pytest.param(
            {"last_slot": at("12:00")}, "13:10", "14:00", id="older-last-slot-changes-nothing"
        ),
        pytest.param(
            {"last_slot": at("14:00")},
            "13:10",
            "15:00",
            id="a-recorded-future-slot-is-never-fired-again",
        ),
        pytest.param(
            {"last_slot": at("14:00")},
            "13:59:59",
            "15:00",
            id="recorded-slot-a-second-ahead",
        ),
        pytest.param(
            {"kind": "interval", "cron": None, "every": 600.0, "anchor_at": at("00:05")},
            "13:10",
            "13:15",
            id="interval-keeps-its-anchor",
        ),
        pytest.param(
            {"kind": "interval", "cron": None, "every": 600.0},
            "13:12",
            "13:20",
            id="interval-anchored-at-creation",
        ),
        pytest.param(
            {"start_at": at("18:00")}, "13:10", "18:00", id="start-at-in-the-future-is-a-slot"
        ),
    ],
)
def test_a_null_next_run_at_is_computed_from_now_without_firing(
    fields: dict[str, Any], now: str, next_run_at: str
) -> None:
    transition = plan(row(**fields), at(now), DEFAULTS)
    assert transition.error is None
    assert transition.fires == []
    assert transition.runs_added == 0
    assert transition.next_run_at == at(next_run_at)
    assert not transition.finished


def test_a_null_next_run_at_with_no_slot_left_finishes() -> None:
    once = row(kind="once", cron=None, run_at=at("12:00"))
    transition = plan(once, at("13:10"), DEFAULTS)
    assert transition.fires == []
    assert transition.next_run_at is None
    assert transition.finished


# Bad stored data -------------------------------------------------------------------------------


_RAISES_INSTEAD = "BUG: plan() raises {exc} for {what} instead of returning Transition.error"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        pytest.param({"args": "[1, 2"}, "args", id="args-not-json"),
        pytest.param({"args": '{"a": 1}'}, "args", id="args-not-an-array"),
        pytest.param({"kwargs": "[]"}, "kwargs", id="kwargs-not-an-object"),
        pytest.param({"kwargs": "{"}, "kwargs", id="kwargs-not-json"),
        pytest.param({"options": '{"task_id": "x"}'}, "options", id="options-task-id"),
        pytest.param({"options": '{"eta": 1}'}, "options", id="options-eta"),
        pytest.param({"options": '{"priority": 300}'}, "options.priority", id="bad-priority"),
        pytest.param({"cron": "61 * * * *"}, "cron", id="bad-cron"),
        pytest.param({"cron": None}, "cron", id="cron-missing"),
        pytest.param({"timezone": "Mars/Olympus"}, "timezone", id="unknown-zone"),
        pytest.param({"dst_gap": "later"}, "dst_gap", id="bad-dst-gap"),
        pytest.param({"kind": "weekly"}, "kind", id="unknown-kind"),
        pytest.param({"misfire_policy": "never"}, "misfire_policy", id="bad-misfire-policy"),
        pytest.param({"misfire_grace": 0.0}, "misfire_grace", id="zero-grace"),
        pytest.param({"misfire_grace": -5.0}, "misfire_grace", id="negative-grace"),
        pytest.param({"catchup_limit": -1}, "catchup_limit", id="negative-catchup-limit"),
        pytest.param({"max_runs": 0}, "max_runs", id="zero-max-runs"),
        pytest.param(
            {"start_at": at("12:00"), "end_at": at("11:00")}, "end_at", id="end-before-start"
        ),
        pytest.param(
            {"kind": "interval", "cron": None, "every": 0.5}, "every", id="interval-too-short"
        ),
        pytest.param(
            {"kind": "interval", "cron": None, "every": float("nan")},
            "every",
            id="interval-nan",
        ),
        pytest.param(
            {"kind": "interval", "cron": None, "every": 1e300},
            "every",
            id="interval-huge",
        ),
        pytest.param(
            {"misfire_grace": float("nan")},
            "misfire_grace",
            id="grace-nan",
        ),
    ],
)
def test_bad_stored_data_becomes_a_transition_error_naming_the_field(
    fields: dict[str, Any], field: str
) -> None:
    for next_run_at in (at("10:00"), None):
        transition = plan(row(next_run_at=next_run_at, **fields), at("10:00:05"), DEFAULTS)
        assert transition.error is not None
        assert transition.error.startswith(f"{field}=")
        assert transition.fires == []
        assert transition.runs_added == 0
