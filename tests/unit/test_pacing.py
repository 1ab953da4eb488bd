"""The allowance of queued fires (``dbeat_catchup_rate``, :class:`Allowance`): a token bucket of
one second's worth, on the clock the beat is given."""

from __future__ import annotations

from datetime import timedelta

import pytest

from celery_dbeat.beat.pacing import Allowance
from celery_dbeat.clock import FixedClock
from tests.unit.conftest import utc

RATES = [1, 3, 7, 20, 33.3, 50, 1000]


@pytest.mark.parametrize("rate", RATES, ids=[f"rate-{r}" for r in RATES])
@pytest.mark.parametrize(
    "between",
    [
        pytest.param(0.0, id="nothing-between"),
        pytest.param(0.001, id="a-millisecond-publish"),
        pytest.param(0.0137, id="an-uneven-publish"),
    ],
)
def test_after_the_wait_it_names_one_more_queued_fire_may_go(rate: float, between: float) -> None:
    """On a clock that moves in microseconds (``timedelta``: the test clock), 1/3 s is
    333,333 µs, a millionth of a token short. Counted short, nothing was granted there, and the
    next wait named a sleep under a microsecond, which that clock never reaches: a beat with
    ``dbeat_catchup_rate`` set asked for no sleep for ever."""
    clock = FixedClock(utc("2024-05-06T09:00Z"))
    allowance = Allowance(rate, clock.monotonic)
    assert allowance.take(10**6) == int(rate)  # a full second's worth at first

    for _ in range(300):
        clock.advance(timedelta(seconds=allowance.wait()))
        assert allowance.take(1) == 1
        clock.advance(between)


@pytest.mark.parametrize("rate", [2, 20, 250], ids=lambda r: f"rate-{r}")
def test_it_grants_at_most_a_second_s_worth_plus_the_rate_over_any_stretch(rate: int) -> None:
    clock = FixedClock(utc("2024-05-06T09:00Z"))
    allowance = Allowance(rate, clock.monotonic)
    granted = allowance.take(10**6)
    for _ in range(1000):  # a greedy drain that publishes for a few ms each time
        clock.advance(0.004)
        granted += allowance.take(10**6)
        assert granted <= rate * (1 + clock.monotonic())
    assert granted >= rate * clock.monotonic()  # and it is all used


def test_what_a_claim_did_not_use_is_given_back() -> None:
    clock = FixedClock(utc("2024-05-06T09:00Z"))
    allowance = Allowance(10, clock.monotonic)
    assert allowance.take(8) == 8
    allowance.give_back(5)  # only 3 queued slots were there
    assert allowance.take(100) == 7
    assert allowance.wait() == pytest.approx(0.25)  # a quarter of a second's worth: 2.5


@pytest.mark.parametrize("rate", [1.0, 2.0, 10.0, 200.0, 5000.0])
def test_a_drained_allowance_waits_for_a_quarter_second_of_fires_not_for_each(rate: float) -> None:
    """Before, it named the time to one more fire: at 200 a second, a tick every 5 ms."""
    clock = FixedClock(utc("2024-05-06T09:00Z"))
    allowance = Allowance(rate, clock.monotonic)
    allowance.take(10**6)
    wait = allowance.wait()
    assert wait == pytest.approx(max(1.0, rate / 4) / rate)
    clock.advance(wait)
    assert allowance.take(10**6) >= max(1, int(rate / 4))


def test_without_a_rate_everything_is_granted_at_once() -> None:
    clock = FixedClock(utc("2024-05-06T09:00Z"))
    allowance = Allowance(None, clock.monotonic)
    assert allowance.take(10**6) == 10**6
    assert allowance.wait() == 0.0
