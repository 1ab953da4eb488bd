"""Several real beats against one database: every due fire reaches the worker exactly once.

Each test runs a worker and two or three ``celery beat -S celery_dbeat.Scheduler`` processes for
20 to 45 seconds of schedules firing every two or three seconds, kills or pauses beats at chosen
moments, then judges what the worker received against slots computed by arithmetic (see
:mod:`tests.e2e.harness`). Lag is printed, never asserted.
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
# (pause at S + offset, let the other beat go on resume + delay), in seconds; see the test.
PAUSE_MOMENTS = [
    (0.002, 0.003),
    (0.004, 0.002),
    (0.004, 0.005),
    (0.006, 0.003),
    (0.006, 0.006),
    (0.008, 0.004),
    (0.010, 0.003),
    (0.012, 0.003),
]
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
def test_killed_and_restarted_beats_lose_and_repeat_no_slot(harness: Harness) -> None:
    harness.configure(SCHEDULES, redis_locks=True)
    harness.start_worker()
    for n in (1, 2, 3):
        harness.start_beat(f"beat-{n}")
    ready = harness.wait_ready()
    harness.run_for(3)

    # SIGKILL a beat a few milliseconds into an even second, while it claims, records or
    # publishes that second's fires; the others are held still for the half second before, so
    # that the victim is the one doing that work. Then start a new beat in its place.
    for victim, offset in (("beat-1", 0.004), ("beat-2", 0.008)):
        target = next(p for p in harness.beats() if p.name == victim)
        harness.sleep_until_phase(1.5)
        with harness.held(p for p in harness.beats() if p is not target):
            harness.sleep_until_phase(offset)
            harness.kill(target)
        harness.run_for(4)
        harness.wait_ready([harness.restart(target, f"{victim}-restarted")])
        harness.run_for(2)

    verdict = harness.finish(ready + SETTLE, excuse_kills=True)
    assert verdict.expected >= 20  # not a vacuous pass
    assert not verdict.problems(), verdict.summary()


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_a_beat_paused_longer_than_its_lock_ttl_loses_and_doubles_no_slot(harness: Harness) -> None:
    harness.configure(SCHEDULES, redis_locks=True, lock_ttl=3, max_interval=1)
    harness.start_worker()
    paused, other = harness.start_beat("beat-1"), harness.start_beat("beat-2")
    ready = harness.wait_ready()
    harness.run_for(2)

    # Pause beat-1 a few milliseconds into an even second S, while it claims, records or
    # publishes the fires of S, until S + 3.6 s: past the lock TTL and the lease. Beat-2 is held
    # still for the half second before S, so that beat-1 is the one doing that work, and for the
    # 1.1 s before beat-1 resumes; it is let go a few milliseconds after beat-1, so that its
    # first tick (which takes over fires whose lease ran out) runs while beat-1 finishes what it
    # was doing. The moments are swept, since where beat-1 stops varies by a few milliseconds.
    for offset, delay in PAUSE_MOMENTS:
        harness.sleep_until_phase(1.5)
        with harness.held([other]):
            harness.sleep_until_phase(offset)
            harness.pause(paused)
        harness.run_for(2.5 - offset)
        with harness.held([other]):
            harness.run_for(1.1)
            harness.resume(paused)
            harness.run_for(delay)
        harness.run_for(0.5)

    # A second copy of the same task id is the documented pause window (README, "Limits"):
    # counted and shown in the summary, but no slot may be lost or sent under two ids.
    verdict = harness.finish(ready + SETTLE, excuse_pauses_over=3)
    assert verdict.expected >= 20  # not a vacuous pass
    assert not verdict.problems(), verdict.summary()
