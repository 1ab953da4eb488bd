"""Pausing holds queued work, with real beats (docs/how-to/pause.md): a backfill that two
beats are draining stops at the pause (the only fires sent after it are those a beat had
already claimed, at most a chunk per beat), nothing of it goes out while the schedule stays
paused, and after the resume every slot reaches the broker once, with its task id."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from celery_dbeat import Cron, Every
from celery_dbeat.api import Schedules
from celery_dbeat.store import migrate
from tests.e2e.harness import Harness

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SLOTS = 300
#: ``dbeat_catchup_rate``: a beat claims at most this many queued fires at once (a second's worth).
RATE = 10


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_a_backfill_two_beats_drain_stops_at_the_pause_and_goes_out_once_after_the_resume(
    harness: Harness,
) -> None:
    harness.configure({}, redis_locks=True, catchup_rate=RATE)
    with Schedules(harness.database_url) as api:
        migrate(api.store.engine)
        now = api.clock.now().replace(second=0, microsecond=0)
        first, last = now - timedelta(minutes=SLOTS), now - timedelta(minutes=1)
        api.add("report", "e2e.record", Cron("* * * * *"), args=["report"], start_at=first)
        api.add("open", "e2e.record", Every(1), args=["open"])
        assert len(api.backfill("report", first, last).queued) == SLOTS

    def backfilled(*statuses: str) -> set[float]:
        """The backfilled slots of 'report' recorded one by one with one of ``statuses``."""
        return {
            f.slot
            for f in harness.fires()
            if f.schedule == "report" and f.slot <= last.timestamp() and f.status in statuses
        }

    def opened() -> int:
        return Counter(r.schedule for r in harness.received())["open"]

    harness.start_worker()
    beats = [harness.start_beat(f"beat-{n}") for n in (1, 2)]
    harness.wait_ready(beats)
    harness.wait_until(
        lambda: len(backfilled("sent")) >= 2 * RATE,
        timeout=60,
        what="the backfill to be draining",
    )

    with Schedules(harness.database_url) as api:
        api.pause("report", note="e2e: held mid-drain")
    claimed = backfilled("pending", "sent")
    assert len(claimed) < SLOTS

    # On-time fires go on; of the backfill, only what a beat had claimed goes out, then nothing.
    at = opened()
    harness.wait_until(lambda: opened() >= at + 3, timeout=60, what="three fires of 'open'")
    settled = backfilled("pending", "sent")
    harness.wait_until(lambda: opened() >= at + 8, timeout=60, what="five more of 'open'")
    held = backfilled("pending", "sent")

    assert held == settled, "backfilled fires were claimed while the schedule was paused"
    assert len(settled - claimed) <= 2 * RATE  # a chunk per beat, claimed as the pause committed

    with Schedules(harness.database_url) as api:
        api.resume("report")  # without catch-up: the queued slots are not the pause's own
    harness.wait_until(
        lambda: len(backfilled("sent")) == SLOTS,
        timeout=120,
        what=f"all {SLOTS} backfilled slots sent after the resume",
    )
    harness.stop_all(beats)
    harness.drain()

    fires = [f for f in harness.fires() if f.schedule == "report" and f.slot <= last.timestamp()]
    received = Counter(r.task_id for r in harness.received())
    assert not [task_id for task_id, n in received.items() if n > 1]
    assert sorted(f.status for f in fires) == ["sent"] * SLOTS
    assert all(f.task_id is not None and received[f.task_id] == 1 for f in fires)
