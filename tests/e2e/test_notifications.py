"""A write through the API wakes a real, sleeping beat (Redis pub/sub), instead of waiting for its
next poll."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from celery_dbeat import Once
from celery_dbeat.api import Schedules
from celery_dbeat.store.database import migrate
from tests.e2e.harness import Harness

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TASK_NAME = "e2e.record"  # the task of tests/e2e/app.py
#: Longer than the test may take: a beat that is not woken would still be asleep at the end.
POLL = 900


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_a_schedule_added_through_the_api_wakes_a_beat_asleep_for_its_poll_interval(
    harness: Harness,
) -> None:
    harness.configure({}, redis_locks=True, max_interval=POLL, lock_ttl=POLL + 60)
    harness.start_worker()
    harness.start_beat("beat-1")
    harness.wait_ready()
    harness.run_for(1)  # the beat has ticked and sleeps for POLL seconds (nothing is scheduled)

    with Schedules(
        harness.database_url,
        notify=harness.redis_url,
        redis_key_prefix=harness.settings["dbeat_redis_key_prefix"],
    ) as schedules:
        soon = schedules.clock.now() + timedelta(seconds=2)
        schedules.add("woken", TASK_NAME, Once(soon), args=["woken"])

    received = harness.wait_until(
        lambda: [r for r in harness.received() if r.schedule == "woken"],
        timeout=60,
        what="the API-added schedule to fire (the beat must have been woken)",
    )
    assert len(received) == 1
    assert received[0].received_at >= soon.timestamp() - 0.05, "not before its slot"


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_run_now_wakes_a_beat_asleep_for_its_poll_interval_and_reads_as_routine(
    harness: Harness,
) -> None:
    harness.configure({}, redis_locks=True, max_interval=POLL, lock_ttl=POLL + 60)
    with Schedules(harness.database_url) as schedules:
        migrate(schedules.store.engine)
        far = schedules.clock.now() + timedelta(days=30)
        schedules.add("on-demand", TASK_NAME, Once(far), args=["on-demand"])
    harness.start_worker()
    beat = harness.start_beat("beat-1")
    harness.wait_ready()
    harness.run_for(1)  # the beat has ticked (housekeeping included) and sleeps for POLL seconds

    with Schedules(
        harness.database_url,
        notify=harness.redis_url,
        redis_key_prefix=harness.settings["dbeat_redis_key_prefix"],
    ) as schedules:
        task_id = schedules.trigger("on-demand")
        triggered = time.time()

    received = harness.wait_until(
        lambda: [r for r in harness.received() if r.schedule == "on-demand"],
        timeout=60,
        what="the triggered fire to reach the worker (the beat must have been woken)",
    )
    print(f"trigger to worker: {received[0].received_at - triggered:.3f} s")
    harness.run_for(1)
    assert [r.task_id for r in harness.received() if r.schedule == "on-demand"] == [task_id]
    log = beat.log_path.read_text()
    assert f"sending run-now fire of on-demand (task id {task_id})" in log
    assert "did not publish in time" not in log
