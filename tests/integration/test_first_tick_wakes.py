"""A beat listens for changes before each tick reads the schedules, the first tick included.

Before, a beat subscribed (Redis) or ran ``LISTEN`` (PostgreSQL) only in the wait after its first
tick: a change committed while that tick ran was neither read by it nor delivered to the wait,
and took effect only at the next poll (``dbeat_max_interval`` later).
"""

from __future__ import annotations

import celery
import pytest

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.beat.scheduler import Scheduler


@pytest.mark.parametrize(
    ("database_url", "wake"),
    [("sqlite", "redis"), ("postgresql", "postgresql")],
    indirect=["database_url"],
)
def test_a_change_committed_during_the_first_tick_wakes_the_wait_after_it(
    database_url: str, wake: str, request: pytest.FixtureRequest
) -> None:
    app = celery.Celery("dbeat-first-tick", set_as_current=False)
    app.conf.update(broker_url="memory://", dbeat_database_url=database_url, dbeat_max_interval=5)
    if wake == "redis":
        app.conf.update(
            dbeat_redis_url=request.getfixturevalue("redis_url"),
            dbeat_redis_key_prefix=request.getfixturevalue("redis_prefix"),
        )
    scheduler = Scheduler(app)  # not lazy: opens the store, migrates
    try:
        ticker, listener = scheduler._ticker, scheduler._listener
        assert ticker is not None
        assert listener is not None, f"a beat on {wake} waits on notifications"
        real_tick, real_wait = ticker.tick, listener.wait
        waits: list[bool] = []

        def tick_then_edit() -> float:
            interval = real_tick()
            # Committed after the tick read the schedules: only a notification tells the beat.
            with Schedules.from_app(app) as api:
                api.add("added-during-the-first-tick", "tasks.t", Every(3600))
            assert interval > 0, "the beat would not wait"
            return interval

        def wait(timeout: float) -> bool:
            waits.append(real_wait(timeout))
            return waits[-1]

        ticker.tick = tick_then_edit  # type: ignore[method-assign]
        listener.wait = wait  # type: ignore[method-assign]
        scheduler.tick()
        assert waits == [True], "the change was not delivered to the wait after the first tick"
    finally:
        scheduler.close()
