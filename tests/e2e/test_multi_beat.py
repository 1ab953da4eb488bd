"""Several real beats against one database: every due fire reaches the worker exactly once.

Each test runs a worker and a few ``celery beat -S celery_dbeat.Scheduler`` processes for about
20 seconds of every-second-or-two schedules, then judges what the worker received against slots
computed by arithmetic (see :mod:`tests.e2e.harness`). Lag is printed, never asserted.
"""

from __future__ import annotations

import pytest

from tests.e2e.harness import Harness, cron, every

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Seconds are the sixth field (croniter's convention): "*/2 * * * * *" would be every second of
# even minutes.
EVEN_SECONDS = "* * * * * */2"
ODD_SECONDS = "* * * * * 1-59/2"
SCHEDULES = {
    "even-a": cron(EVEN_SECONDS),
    "even-b": cron(EVEN_SECONDS),
    "odd": cron(ODD_SECONDS),
    "every-3s": every(3),
}
# Slots this close to start-up or to the end are not judged for loss (still for duplicates).
SETTLE = 2


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_two_beats_fire_each_slot_once(harness: Harness) -> None:
    harness.configure(SCHEDULES, redis_locks=True)
    harness.start_worker()
    harness.start_beat("beat-1")
    harness.start_beat("beat-2")
    ready = harness.wait_ready()

    harness.run_for(18)

    verdict = harness.finish(ready + SETTLE)
    assert verdict.expected >= 20  # not a vacuous pass
    assert not verdict.problems(), verdict.summary()


@pytest.mark.parametrize("e2e_database_url", ["sqlite"], indirect=True)
def test_three_beats_with_database_locks_fire_each_slot_once(harness: Harness) -> None:
    harness.configure(SCHEDULES, redis_locks=False)
    harness.start_worker()
    for n in (1, 2, 3):
        harness.start_beat(f"beat-{n}")
    ready = harness.wait_ready()

    harness.run_for(18)

    verdict = harness.finish(ready + SETTLE)
    assert verdict.expected >= 20  # not a vacuous pass
    assert not verdict.problems(), verdict.summary()


@pytest.mark.parametrize("e2e_database_url", ["mysql"], indirect=True)
def test_a_killed_and_restarted_beat_loses_and_repeats_no_slot(harness: Harness) -> None:
    harness.configure(SCHEDULES, redis_locks=True)
    harness.start_worker()
    beats = [harness.start_beat(f"beat-{n}") for n in (1, 2, 3)]
    ready = harness.wait_ready()
    harness.run_for(5)

    # Just after an even second, while the beats are claiming, recording and publishing.
    harness.sleep_until_second(0.01)
    harness.kill(beats[0])
    harness.run_for(5)
    restarted = harness.restart(beats[0], "beat-1-restarted")
    harness.wait_ready([restarted])
    harness.run_for(8)

    verdict = harness.finish(ready + SETTLE, excuses=harness.events)
    assert verdict.expected >= 20  # not a vacuous pass
    assert not verdict.problems(), verdict.summary()


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_a_beat_paused_longer_than_its_lock_ttl_fires_nothing_twice(harness: Harness) -> None:
    harness.configure(SCHEDULES, redis_locks=True, lock_ttl=3, max_interval=1)
    harness.start_worker()
    paused, _other = harness.start_beat("beat-1"), harness.start_beat("beat-2")
    ready = harness.wait_ready()
    harness.run_for(3)

    # Twice, at two points of the fire cycle, for twice the lock TTL and lease.
    for offset in (0.005, 0.05):
        harness.sleep_until_second(offset)
        harness.pause(paused)
        harness.run_for(6)
        harness.resume(paused)
        harness.run_for(3)

    verdict = harness.finish(ready + SETTLE)
    assert verdict.expected >= 20  # not a vacuous pass
    assert not verdict.problems(), verdict.summary()
