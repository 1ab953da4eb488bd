"""Beats whose wall clocks are wrong, or are stepped, fire nothing early and lose or repeat nothing.

Each faulty beat runs under libfaketime (Debian's ``libfaketime``): its wall clock is shifted
while its monotonic clock runs true, as on a host whose clock is wrong or is stepped by NTP. The
worker and the database server keep the true time. The judge (:mod:`tests.e2e.harness`) compares
the worker's receipt time of every message with its slot and flags any that ran before it, and
counts every slot of the window: none may be lost or received twice.

Before "due" was decided on the database server's clock, a beat 90 s ahead published every fire
90 s early, and one whose clock stepped an hour ahead published an hour of slots at once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.harness import Harness, cron, every
from tests.services import FakeTime

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCHEDULES = {
    "even": cron("* * * * * */2"),
    "odd": cron("* * * * * 1-59/2"),
    "every-3s": every(3),
}
SETTLE = 2


@pytest.fixture
def faketime(tmp_path: Path) -> Callable[[str, str], FakeTime]:
    """``faketime(name, offset)``: a wall clock ``offset`` off for the processes given its env."""
    return lambda name, offset: FakeTime(tmp_path / f"{name}.faketime", offset)


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_beats_ninety_seconds_ahead_and_behind_fire_nothing_early_and_lose_nothing(
    harness: Harness, faketime: Callable[[str, str], FakeTime]
) -> None:
    harness.configure(SCHEDULES, redis_locks=True)
    harness.start_worker()
    ahead = faketime("ahead", "+90s").env
    behind = faketime("behind", "-90s").env
    # The beat ahead starts first, so it is the one that stores the schedules.
    harness.wait_ready([harness.start_beat("ahead", env=ahead)])
    harness.start_beat("behind", env=behind)
    ready = harness.wait_ready()

    # Each skewed beat is restarted once: a start must not skip the slots of the skew either.
    harness.run_for(10)
    for name in ("ahead", "behind"):
        proc = next(p for p in harness.beats() if p.name == name)
        harness.wait_ready([harness.restart(proc, f"{name}-restarted")])
        harness.run_for(8)

    verdict = harness.finish(ready + SETTLE, excuse_kills=True)
    assert verdict.expected >= 30  # not a vacuous pass
    assert not verdict.problems(), verdict.summary()


@pytest.mark.parametrize("e2e_database_url", ["mysql"], indirect=True)
def test_a_beat_whose_clock_steps_an_hour_ahead_fires_nothing_early(
    harness: Harness, faketime: Callable[[str, str], FakeTime]
) -> None:
    harness.configure(SCHEDULES, redis_locks=True)
    harness.start_worker()
    stepped = faketime("stepped", "+0")
    harness.start_beat("stepped", env=stepped.env)
    harness.start_beat("steady")
    ready = harness.wait_ready()
    harness.run_for(4)

    stepped.set("+1h")  # an NTP step on the stepped beat's host, undone 30 s later
    stepped_from = ready + 4
    harness.run_for(30)
    stepped.set("+0")
    stepped_until = stepped_from + 30
    harness.run_for(8)

    verdict = harness.finish(ready + SETTLE, excuse_kills=True)
    assert verdict.expected >= 30  # not a vacuous pass
    assert not verdict.problems(), verdict.summary()
    # The stepped beat took its share of the work while its clock was an hour ahead.
    during_step = [
        fire
        for fire in harness.fires()
        if fire.beat == "stepped" and stepped_from + 2 <= fire.slot <= stepped_until
    ]
    assert during_step, "the stepped beat published nothing while stepped"
