"""The management API's view of runs, on every database: the lifecycle columns of the history,
the overlap fields of a schedule, and the health query ("last run failed or not succeeded
within two periods") that ``dbeat status`` and the admin show."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat.api import FireInfo, Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.errors import ValidationError
from celery_dbeat.core.fires import RunStatus
from celery_dbeat.core.specs import Cron, Every
from celery_dbeat.store.health import HEALTH_WINDOW
from celery_dbeat.store.runs import RunEvent, record_runs
from tests.integration.conftest import START, F, S, at

HOUR = timedelta(hours=1)


def hourly(api: Schedules, name: str, **fields: Any) -> int:
    """An hourly schedule created at START (09:00) that beat has fired up to ``last_slot``
    (12:00), so its next slot is 13:00 and its period one hour."""
    info = api.add(name, f"proj.tasks.{name}", Cron("0 * * * *"), **fields)
    with api.store.engine.begin() as conn:
        conn.execute(
            sa.update(S)
            .where(S.c.id == info.id)
            .values(last_slot=at("12:00"), next_run_at=at("13:00"))
        )
    return info.id


def fire(api: Schedules, schedule_id: int, slot: datetime, status: str = "sent", **run: Any) -> str:
    """Record a fire row as beat would (sent a second after its slot), with run columns."""
    task_id = str(uuid.uuid4())
    with api.store.engine.begin() as conn:
        conn.execute(
            sa.insert(F).values(
                schedule_id=schedule_id,
                slot=slot,
                manual=False,
                status=status,
                slot_count=1,
                task_id=task_id,
                beat="beat-1",
                recorded_at=slot,
                sent_at=slot + timedelta(seconds=1) if status == "sent" else None,
                attempts=0,
                **run,
            )
        )
    return task_id


def succeeded(slot: datetime, minutes: int = 5) -> dict[str, Any]:
    return {
        "run_status": "succeeded",
        "started_at": slot + timedelta(seconds=2),
        "finished_at": slot + timedelta(minutes=minutes),
        "runtime": minutes * 60.0 - 2,
        "worker": "celery@w1",
    }


def reasons(api: Schedules, now: datetime) -> dict[str, str]:
    return {h.name: h.reason for h in api.unhealthy(now=now)}


# The history's lifecycle columns -----------------------------------------------------------------


def test_history_carries_what_the_worker_hook_reported_about_each_run(api: Schedules) -> None:
    sid = hourly(api, "report")
    ok = fire(api, sid, at("10:00"))
    bad = fire(api, sid, at("11:00"))
    fire(api, sid, at("12:00"))
    record_runs(
        api.store.engine,
        [
            RunEvent(ok, RunStatus.STARTED, at("10:00:03"), worker="celery@w1"),
            RunEvent(ok, RunStatus.SUCCEEDED, at("10:01:33"), worker="celery@w1", runtime=90.0),
            RunEvent(bad, RunStatus.STARTED, at("11:00:02"), worker="celery@w2"),
            RunEvent(bad, RunStatus.FAILED, at("11:00:12"), runtime=10.0, error="KeyError: 'x'"),
        ],
    )

    newest, failed, done = api.history("report")

    assert (newest.outcome, newest.run_status, newest.run_duration) == ("sent", None, None)
    assert (failed.outcome, failed.worker, failed.run_error) == (
        "failed",
        "celery@w2",
        "KeyError: 'x'",
    )
    assert failed.status == "sent"  # beat's part went fine: the broker has it
    assert done == FireInfo(
        slot=at("10:00"),
        manual=False,
        status="sent",
        slot_count=1,
        first_slot=None,
        task_id=ok,
        beat="beat-1",
        recorded_at=at("10:00"),
        sent_at=at("10:00:01"),
        attempts=0,
        error=None,
        run_status="succeeded",
        started_at=at("10:00:03"),
        finished_at=at("10:01:33"),
        runtime=90.0,
        worker="celery@w1",
        run_error=None,
    )
    assert (done.outcome, done.lag, done.queue_wait, done.run_duration) == (
        "succeeded",
        timedelta(seconds=1),
        timedelta(seconds=2),
        timedelta(seconds=90),
    )


def test_run_duration_falls_back_to_start_and_finish_without_the_workers_measure() -> None:
    info = FireInfo(
        slot=START,
        manual=False,
        status="sent",
        slot_count=1,
        first_slot=None,
        task_id="t",
        beat="b",
        recorded_at=START,
        sent_at=None,
        attempts=1,
        error=None,
        run_status="revoked",
        started_at=START,
        finished_at=START + timedelta(seconds=7),
    )
    assert (info.run_duration, info.queue_wait, info.outcome) == (
        timedelta(seconds=7),
        None,
        "revoked",
    )


# Overlap fields through the API ------------------------------------------------------------------


def test_add_and_update_store_the_overlap_policy_and_max_run_time(api: Schedules) -> None:
    info = api.add("sync", "proj.tasks.sync", Every(60), overlap_policy="skip", max_run_time="10m")
    assert (info.overlap_policy, info.max_run_time) == ("skip", 600.0)

    moved = api.update("sync", args=[1])
    assert (moved.overlap_policy, moved.max_run_time, moved.args) == ("skip", 600.0, [1])
    assert moved.next_run_at == info.next_run_at  # a payload edit

    changed = api.update("sync", overlap_policy="buffer_one", max_run_time=None)
    assert (changed.overlap_policy, changed.max_run_time) == ("buffer_one", None)
    assert changed.next_run_at == info.next_run_at


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        pytest.param("overlap_policy", "sometimes", "one of allow, skip, buffer_one", id="policy"),
        pytest.param("max_run_time", "soon", "max_run_time='soon'", id="run-time-text"),
        pytest.param("max_run_time", -5, "positive", id="run-time-negative"),
    ],
)
def test_a_bad_overlap_field_is_refused_naming_it(
    api: Schedules, field: str, value: Any, message: str
) -> None:
    api.add("sync", "proj.tasks.sync", Every(60))
    with pytest.raises(ValidationError) as caught:
        api.update("sync", **{field: value})
    assert caught.value.field == field
    assert message in str(caught.value)
    assert api.get("sync").overlap_policy is None


# The health query ---------------------------------------------------------------------------------


def test_a_schedule_whose_last_run_failed_is_unhealthy_until_a_run_succeeds(
    api: Schedules,
) -> None:
    sid = hourly(api, "report")
    fire(api, sid, at("10:00"), **succeeded(at("10:00")))
    failed_id = fire(
        api,
        sid,
        at("11:00"),
        run_status="failed",
        started_at=at("11:00:02"),
        finished_at=at("11:00:30"),
        run_error="ZeroDivisionError: division by zero",
    )
    fire(api, sid, at("12:00"), run_status="started", started_at=at("12:00:02"))

    [health] = api.unhealthy(now=at("12:30"))

    assert (health.name, health.task, health.state, health.reason) == (
        "report",
        "proj.tasks.report",
        "active",
        "failed",
    )
    assert (health.last_slot, health.last_finished_at, health.task_id) == (
        at("11:00"),
        at("11:00:30"),
        failed_id,
    )
    assert health.error == "ZeroDivisionError: division by zero"
    assert (health.last_success_at, health.period) == (at("10:05"), HOUR)

    # The 12:00 run succeeds: the schedule is healthy again.
    with api.store.engine.begin() as conn:
        conn.execute(
            sa.update(F).where(F.c.slot == at("12:00")).values(**succeeded(at("12:00"), 40))
        )
    assert api.unhealthy(now=at("12:45")) == []


def test_revoked_runs_and_fires_never_published_are_reported_with_their_reason(
    api: Schedules,
) -> None:
    revoked = hourly(api, "revoked")
    fire(api, revoked, at("12:00"), run_status="revoked", finished_at=at("12:00:05"))
    unsent = hourly(api, "unsent")
    fire(api, unsent, at("11:00"), **succeeded(at("11:00")))
    fire(api, unsent, at("12:00"), status="failed", error="broker refused: connection reset")

    found = {h.name: h for h in api.unhealthy(now=at("12:10"))}

    assert {name: h.reason for name, h in found.items()} == {
        "revoked": "revoked",
        "unsent": "not published",
    }
    assert found["unsent"].error == "broker refused: connection reset"
    assert found["unsent"].last_finished_at is None


def test_a_schedule_without_a_success_for_two_periods_is_overdue(api: Schedules) -> None:
    sid = hourly(api, "report")
    fire(api, sid, at("10:00"), **succeeded(at("10:00")))
    # 11:00 and 12:00 were sent; the worker never reported them (it died).
    fire(api, sid, at("11:00"))
    fire(api, sid, at("12:00"))

    assert reasons(api, at("12:05")) == {}  # 10:05 is less than two hours ago
    [health] = api.unhealthy(now=at("12:06"))
    assert (health.reason, health.last_success_at, health.period, health.error) == (
        "overdue",
        at("10:05"),
        HOUR,
        None,
    )


def stuck(api: Schedules) -> None:
    """A schedule whose first run, at 10:00, never ends: the next slots are skipped."""
    sid = hourly(api, "stuck", overlap_policy="skip")
    fire(api, sid, at("10:00"), run_status="started", started_at=at("10:00:02"))
    fire(api, sid, at("11:00"), status="overlap")
    fire(api, sid, at("12:00"), status="overlap")


def test_runs_that_never_succeeded_are_overdue_two_periods_after_the_first_report(
    api: Schedules,
) -> None:
    stuck(api)
    healthy = hourly(api, "healthy")
    fire(api, healthy, at("12:00"), **succeeded(at("12:00")))

    assert reasons(api, at("11:59")) == {}
    assert reasons(api, at("12:01")) == {"stuck": "overdue"}


def test_nothing_is_overdue_before_the_worker_hook_reported_a_finished_run(
    api: Schedules,
) -> None:
    stuck(api)

    assert api.unhealthy(now=at("18:00")) == []


def test_a_schedule_without_run_reports_is_never_overdue(api: Schedules) -> None:
    sid = hourly(api, "untracked")
    for hour in range(0, 13):
        fire(api, sid, START.replace(hour=hour))
    # Runs of another schedule are tracked (its worker has the hook), and it is overdue.
    tracked = hourly(api, "tracked")
    fire(api, tracked, at("08:00"), **succeeded(at("08:00")))

    assert reasons(api, at("23:00")) == {"tracked": "overdue"}


def test_paused_schedules_are_not_overdue_but_still_show_a_failed_last_run(
    api: Schedules,
) -> None:
    idle = hourly(api, "idle")
    fire(api, idle, at("08:00"), **succeeded(at("08:00")))
    broken = hourly(api, "broken")
    fire(api, broken, at("12:00"), run_status="failed", finished_at=at("12:00:09"))
    api.pause("idle")
    api.pause("broken")

    found = api.unhealthy(now=at("18:00"))

    assert [(h.name, h.state, h.reason) for h in found] == [("broken", "paused", "failed")]


def test_a_failure_older_than_the_newest_fires_is_forgotten(api: Schedules) -> None:
    sid = hourly(api, "report")
    fire(api, sid, START - timedelta(days=1), run_status="failed", finished_at=START)
    # Newer fires without any report (skipped by the misfire policy, say): only the newest
    # HEALTH_WINDOW fires are looked at.
    for n in range(HEALTH_WINDOW):
        fire(api, sid, START + n * timedelta(minutes=1), status="skipped")

    assert api.unhealthy(now=at("12:30")) == []
    with api.store.engine.begin() as conn:
        conn.execute(sa.delete(F).where(F.c.slot == START))  # 19 newer fires now
    assert reasons(api, at("12:30")) == {"report": "failed"}


def test_manual_fires_count_as_runs(api: Schedules, clock: FixedClock) -> None:
    sid = hourly(api, "report")
    fire(api, sid, at("12:00"), run_status="failed", finished_at=at("12:00:09"))
    clock.set(at("12:20"))
    task_id = api.trigger("report")
    record_runs(
        api.store.engine,
        [
            RunEvent(task_id, RunStatus.STARTED, at("12:20:05")),
            RunEvent(task_id, RunStatus.SUCCEEDED, at("12:21"), runtime=55.0),
        ],
    )

    assert api.unhealthy(now=at("12:30")) == []
    assert api.history("report")[0].outcome == "succeeded"
