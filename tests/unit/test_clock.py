"""The shared clock: the database server's reading carried on the host's monotonic clock."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest

from celery_dbeat.clock import MONOTONIC_DRIFT, FixedClock, Outage, SharedClock

UTC = timezone.utc
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SERVER = datetime(2026, 12, 1, 12, 1, 30, tzinfo=UTC)  # the host is 90 s behind


@dataclass
class HostClock:
    """A host whose wall clock can be stepped independently of its monotonic clock."""

    wall: datetime = T0
    mono: float = 100.0

    def now(self) -> datetime:
        return self.wall

    def monotonic(self) -> float:
        return self.mono

    def elapse(self, seconds: float) -> None:
        self.wall += timedelta(seconds=seconds)
        self.mono += seconds


def test_before_any_reading_it_is_the_host_clock() -> None:
    host = HostClock()
    clock = SharedClock(host)
    assert not clock.synced
    assert clock.now() == T0


def test_after_a_reading_it_follows_the_server_from_the_middle_of_the_round_trip() -> None:
    host = HostClock()
    clock = SharedClock(host)
    clock.observe(SERVER, sent=100.0, received=100.2)
    assert clock.synced
    # The reading was taken around monotonic 100.1; 0.1 s later than that, at 100.2:
    host.elapse(0.2)
    assert clock.now() == SERVER + timedelta(seconds=0.1)
    assert clock.offset() == SERVER + timedelta(seconds=0.1) - host.wall


@pytest.mark.parametrize("step", [3600.0, -3600.0, 90.0], ids=["+1h", "-1h", "+90s"])
def test_a_step_of_the_host_wall_clock_does_not_move_it(step: float) -> None:
    host = HostClock()
    clock = SharedClock(host)
    clock.observe(SERVER, sent=100.0, received=100.0)
    host.wall += timedelta(seconds=step)  # NTP steps the wall clock; monotonic runs on
    host.elapse(5)
    assert clock.now() == SERVER + timedelta(seconds=5)


def test_a_less_precise_reading_does_not_replace_a_fresh_precise_one() -> None:
    host = HostClock()
    clock = SharedClock(host)
    clock.observe(SERVER, sent=100.0, received=100.002)  # +-1 ms
    host.elapse(1)
    # A slow round trip (+-0.5 s) whose midpoint guess is 0.4 s off is ignored...
    clock.observe(SERVER + timedelta(seconds=1.4), sent=100.5, received=101.5)
    assert clock.now() == SERVER + timedelta(seconds=0.999)


def test_an_aged_reading_is_replaced_by_a_less_precise_new_one() -> None:
    host = HostClock()
    clock = SharedClock(host)
    clock.observe(SERVER, sent=100.0, received=100.0)
    # ...but once the old reading has aged by more than the new one's uncertainty, the new one
    # is taken: a server clock that was stepped is followed.
    later = 0.01 / MONOTONIC_DRIFT + 1
    host.elapse(later)
    stepped = SERVER + timedelta(hours=1)
    clock.observe(stepped, sent=host.mono - 0.01, received=host.mono + 0.01)
    assert clock.now() == stepped


def test_an_outage_backs_off_doubling_to_its_longest_and_resets_when_recovered() -> None:
    clock = FixedClock(datetime(2025, 1, 1, tzinfo=timezone.utc))
    outage = Outage(first=1.0, longest=4.0, monotonic=clock.monotonic)

    assert (outage.down, outage.may_try(), outage.wait()) == (False, True, 0.0)
    began = outage.failed()
    waits = [outage.wait()]
    again = [outage.failed() for _ in range(3)]
    waits.append(outage.wait())
    early = outage.may_try()
    clock.advance(timedelta(seconds=4))
    due = outage.may_try()
    clock.advance(timedelta(seconds=6))
    took = outage.recovered()

    assert (began, again) == (True, [False, False, False])
    assert waits == [1.0, 4.0]  # 1, 2, 4, then capped at 4
    assert (early, due) == (False, True)
    assert took == 10.0
    assert (outage.down, outage.backoff, outage.recovered()) == (False, 1.0, None)


def test_a_long_outage_is_worth_a_reminder_once_per_interval_and_never_while_up() -> None:
    clock = FixedClock(datetime(2025, 1, 1, tzinfo=timezone.utc))
    outage = Outage(first=1.0, longest=4.0, monotonic=clock.monotonic)
    up = outage.remind(60)
    outage.failed()
    reminders = []
    for _ in range(13):  # 130 s of an outage, asked every 10 s
        clock.advance(timedelta(seconds=10))
        reminders.append(outage.remind(60))
    outage.recovered()

    assert up is None
    assert reminders == [None] * 5 + [60.0] + [None] * 5 + [120.0, None]
    assert outage.remind(60) is None
