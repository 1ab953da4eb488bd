"""A write through the API wakes a real, sleeping beat instead of waiting for its next poll:
through Redis pub/sub with ``dbeat_redis_url``, else through PostgreSQL's ``NOTIFY``/``LISTEN``."""

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
#: How writes reach the beat: Redis (its locks' server) or the schedule database itself.
THROUGH = pytest.mark.parametrize("through", ["redis", "postgresql"])


def writer(harness: Harness, through: str) -> Schedules:
    """The API as an application would open it: notifying through Redis when beats use it."""
    if through == "postgresql":
        return Schedules(harness.database_url)
    return Schedules(
        harness.database_url,
        notify=harness.redis_url,
        redis_key_prefix=harness.settings["dbeat_redis_key_prefix"],
    )


@THROUGH
@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_a_schedule_added_through_the_api_wakes_a_beat_asleep_for_its_poll_interval(
    harness: Harness, through: str
) -> None:
    harness.configure({}, redis_locks=through == "redis", max_interval=POLL, lock_ttl=POLL + 60)
    harness.start_worker()
    harness.start_beat("beat-1")
    harness.wait_ready()
    # The beat has ticked and sleeps for POLL seconds (nothing is scheduled), subscribed. A
    # beat subscribes after its first tick: a write before that would be read by the tick (and
    # prove nothing) or, once the tick is over, reach no subscriber (the beat sleeps on).
    harness.wait_listening(1)

    with writer(harness, through) as api:
        soon = api.clock.now() + timedelta(seconds=2)
        api.add("woken", TASK_NAME, Once(soon), args=["woken"])

    received = harness.wait_until(
        lambda: [r for r in harness.received() if r.schedule == "woken"],
        timeout=60,
        what="the API-added schedule to fire (the beat must have been woken)",
    )
    assert len(received) == 1
    assert received[0].received_at >= soon.timestamp() - 0.05, "not before its slot"


@THROUGH
@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_run_now_wakes_a_beat_asleep_for_its_poll_interval_and_reads_as_routine(
    harness: Harness, through: str
) -> None:
    harness.configure({}, redis_locks=through == "redis", max_interval=POLL, lock_ttl=POLL + 60)
    with Schedules(harness.database_url) as api:
        migrate(api.store.engine)
        far = api.clock.now() + timedelta(days=30)
        api.add("on-demand", TASK_NAME, Once(far), args=["on-demand"])
    harness.start_worker()
    beat = harness.start_beat("beat-1")
    harness.wait_ready()
    harness.wait_listening(1)  # it has ticked (housekeeping included) and sleeps for POLL seconds

    with writer(harness, through) as api:
        task_id = api.trigger("on-demand")
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
