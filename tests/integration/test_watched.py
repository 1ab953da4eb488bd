"""Missed means "came due while no beat was running", whatever the tolerance.

The on-time tolerance is small (5 s): after an outage, ``skip`` sends nothing and ``latest``
exactly one. Before, with a 60 s tolerance, beats down three minutes over every-minute crons
still sent one fire per schedule under ``skip`` (the newest missed slot counted as merely late).
A fleet that is running but behind (a herd, a beat that died holding a claim) is late, not
missing fires: slots that came due while some beat was running fire however late, up to
``LATE_WHILE_WATCHED``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from celery_dbeat import Cron
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.misfire import watched_since
from celery_dbeat.store import Store
from tests.integration.conftest import START, MakeTicker, RecordingPublisher, Tables, at, run

MINUTELY = [f"m{i}" for i in range(3)]


def _minutely(policy: str) -> list[Definition]:
    return [
        Definition.create(name=n, task="t.m", schedule=Cron("* * * * *"), misfire_policy=policy)
        for n in MINUTELY
    ]


@pytest.mark.parametrize(
    ("policy", "per_schedule"),
    [
        pytest.param("skip", [], id="skip-sends-nothing"),
        pytest.param("latest", [at("09:05")], id="latest-sends-exactly-one"),
        pytest.param("earliest", [at("09:03")], id="earliest-sends-exactly-one"),
    ],
)
def test_after_three_minutes_down_every_minute_crons_follow_the_policy_exactly(
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    policy: str,
    per_schedule: list[datetime],
) -> None:
    tables.sync(_minutely(policy), at("09:00"))
    clock.set(at("09:02:01"))
    make_ticker(instance_name="before").tick()  # fires 09:01 and 09:02, then goes down
    publisher.clear()

    clock.set(at("09:05:40"))  # 09:03, 09:04 and 09:05 came due with no beat running
    make_ticker(instance_name="after").tick()

    assert sorted(publisher.fires) == sorted((n, t) for n in MINUTELY for t in per_schedule)
    assert [(row.name, row.next_run_at) for row in tables.rows()] == [
        (n, at("09:06")) for n in MINUTELY
    ]


def test_a_running_beat_that_falls_behind_fires_late_slots_even_under_skip(
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
) -> None:
    tables.sync(_minutely("skip"), at("09:00"))
    ticker = make_ticker(max_interval=15, lock_ttl=30)
    clock.set(at("09:00:58"))
    ticker.tick()
    clock.set(at("09:01:20"))  # a long tick: 09:01 is 20 s late, but this beat was running
    ticker.tick()
    assert sorted(publisher.fires) == [(n, at("09:01")) for n in MINUTELY]


def test_a_lone_beat_stalled_past_its_sleep_treats_the_stall_as_an_outage(
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
) -> None:
    tables.sync(_minutely("skip"), at("09:00"))
    ticker = make_ticker(instance_name="lone", max_interval=5, lock_ttl=30)
    clock.set(at("09:00:58"))
    ticker.tick()
    clock.set(at("09:03:30"))  # SIGSTOPped for 2.5 minutes: nothing ran meanwhile
    ticker.tick()
    assert publisher.fires == []
    clock.set(at("09:04:01"))
    ticker.tick()
    assert sorted(publisher.fires) == [(n, at("09:04")) for n in MINUTELY]


def test_a_pause_resumed_with_catch_up_goes_through_the_policy_though_beats_ran(
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
) -> None:
    api.add("hourly", "t.h", Cron("0 * * * *"), misfire_policy="latest")
    ticker = make_ticker(max_interval=60, lock_ttl=90)
    clock.set(at("09:30"))
    api.pause("hourly")
    run(ticker, clock, at("12:20"))  # the beat runs throughout the pause
    api.resume("hourly", catch_up=True)
    clock.advance(1)
    ticker.tick()
    # 10:00, 11:00 and 12:00 fell in the pause: latest sends 12:00 only, though a beat ran.
    assert publisher.fires == [("hourly", at("12:00"))]


T = START


@pytest.mark.parametrize(
    ("own", "lifetimes", "since"),
    [
        pytest.param(T, [], T, id="own-stretch-only"),
        pytest.param(None, [], T + timedelta(hours=1), id="nothing-running-is-now"),
        pytest.param(
            T,
            [(T - timedelta(hours=2), T - timedelta(seconds=10))],
            T - timedelta(hours=2),
            id="a-beat-seen-within-slack-extends",
        ),
        pytest.param(
            T,
            [(T - timedelta(hours=2), T - timedelta(seconds=40))],
            T,
            id="a-beat-seen-before-slack-does-not",
        ),
        pytest.param(
            T,
            [
                (T - timedelta(hours=1), T - timedelta(seconds=5)),
                (T - timedelta(hours=3), T - timedelta(minutes=59, seconds=50)),
            ],
            T - timedelta(hours=3),
            id="overlapping-spans-chain",
        ),
        pytest.param(
            T,
            [(T - timedelta(hours=1), T + timedelta(hours=1))],
            T - timedelta(hours=1),
            id="a-live-beat-started-earlier",
        ),
    ],
)
def test_watched_since_chains_heartbeats_back_from_now(
    own: datetime | None, lifetimes: list[tuple[datetime, datetime]], since: datetime
) -> None:
    now = T + timedelta(hours=1) if own is None else T + timedelta(minutes=1)
    assert watched_since(now, own, lifetimes, timedelta(seconds=30)) == since


def test_slots_due_while_watched_are_late_for_ten_minutes_at_most(
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    store: Store,
) -> None:
    """A beat far behind (here: next_run_at moved back by raw SQL) catches up through the policy
    for what is older than ten minutes, instead of sending the whole backlog."""
    tables.sync(_minutely("skip")[:1], at("09:00"))
    heart: dict[str, Any] = {"name": "up", "hostname": "h", "pid": 1, "version": "0"}
    store.heartbeat({**heart, "started_at": at("08:00")}, at("09:59:50"))
    tables.update("m0", next_run_at=at("09:30"))
    clock.set(at("10:00:10"))
    make_ticker().tick()
    assert publisher.fires == [("m0", at(f"09:{m}")) for m in range(51, 60)] + [("m0", at("10:00"))]
