"""Overlap policies (Temporal's ALLOW_ALL, SKIP, BUFFER_ONE) in the pure planner."""

from __future__ import annotations

import pytest

from celery_dbeat.core.fires import FireStatus, NewFire, fire_task_id
from celery_dbeat.core.misfire import MisfirePolicy, MisfireRules
from celery_dbeat.core.overlap import OverlapPolicy, RunState, split_for_overlap
from celery_dbeat.core.planning import plan
from tests.unit.conftest import at
from tests.unit.test_planning import row

IDLE = RunState()
RUNNING = RunState(running=True)
BUFFERED = RunState(running=True, buffered=True)
ALLOW, SKIP, BUFFER_ONE = OverlapPolicy.ALLOW, OverlapPolicy.SKIP, OverlapPolicy.BUFFER_ONE


@pytest.mark.parametrize(
    ("count", "policy", "state", "expected"),
    [
        (1, ALLOW, RUNNING, (1, 0, 0)),
        (3, ALLOW, BUFFERED, (3, 0, 0)),
        (1, SKIP, IDLE, (1, 0, 0)),
        (1, SKIP, RUNNING, (0, 0, 1)),
        (3, SKIP, IDLE, (1, 0, 2)),  # fires due together would overlap each other
        (1, BUFFER_ONE, IDLE, (1, 0, 0)),
        (1, BUFFER_ONE, RUNNING, (0, 1, 0)),
        (2, BUFFER_ONE, RUNNING, (0, 1, 1)),
        (1, BUFFER_ONE, BUFFERED, (0, 0, 1)),
        (1, BUFFER_ONE, RunState(buffered=True), (0, 0, 1)),
        (3, BUFFER_ONE, IDLE, (1, 1, 1)),
        (0, BUFFER_ONE, RUNNING, (0, 0, 0)),
    ],
)
def test_split_for_overlap(
    count: int, policy: OverlapPolicy, state: RunState, expected: tuple[int, int, int]
) -> None:
    assert split_for_overlap(count, policy, state) == expected


def test_skip_records_the_slot_as_overlap_and_moves_on_while_the_previous_run_goes_on() -> None:
    t = plan(
        row(next_run_at=at("11:00"), overlap_policy="skip"), at("11:00"), MisfireRules(), RUNNING
    )

    assert t.fires == [NewFire(at("11:00"), FireStatus.OVERLAP, first_slot=at("11:00"))]
    assert t.next_run_at == at("12:00")
    assert t.runs_added == 0


def test_buffer_one_records_the_slot_as_buffered_with_its_task_id() -> None:
    t = plan(
        row(next_run_at=at("11:00"), overlap_policy="buffer_one"),
        at("11:00"),
        MisfireRules(),
        RUNNING,
    )

    assert t.fires == [NewFire(at("11:00"), FireStatus.BUFFERED, fire_task_id("s", at("11:00")))]
    assert t.next_run_at == at("12:00")
    assert t.runs_added == 1


def test_catch_up_under_skip_sends_the_oldest_and_records_the_rest_as_one_overlap_group() -> None:
    rules = MisfireRules(policy=MisfirePolicy.ALL)
    t = plan(row(next_run_at=at("10:00"), overlap_policy="skip"), at("13:10"), rules, IDLE)

    assert t.fires == [
        NewFire(at("10:00"), FireStatus.PENDING, fire_task_id("s", at("10:00"))),
        NewFire(at("13:00"), FireStatus.OVERLAP, slot_count=3, first_slot=at("11:00")),
    ]


def test_max_runs_counts_buffered_fires_and_ignores_overlapped_ones() -> None:
    rules = MisfireRules(policy=MisfirePolicy.ALL)
    # One run left: the first slot is sent, the schedule finishes, nothing after it is recorded.
    t = plan(
        row(next_run_at=at("10:00"), overlap_policy="buffer_one", max_runs=3, run_count=2),
        at("13:10"),
        rules,
        IDLE,
    )
    assert [(f.slot, f.status) for f in t.fires] == [(at("10:00"), FireStatus.PENDING)]
    assert t.finished

    # A skipped slot does not use up a run.
    t = plan(
        row(next_run_at=at("11:00"), overlap_policy="skip", max_runs=3, run_count=2),
        at("11:00"),
        MisfireRules(),
        RUNNING,
    )
    assert not t.finished
    assert t.runs_added == 0


def test_an_unknown_overlap_policy_marks_the_row_broken() -> None:
    t = plan(row(next_run_at=at("11:00"), overlap_policy="sometimes"), at("11:00"), MisfireRules())

    assert t.error is not None
    assert "overlap_policy" in t.error
    assert t.fires == []
