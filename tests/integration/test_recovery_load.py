"""Taking over a dead beat's fires never makes more fires expire (SEMANTICS "Load and backlog":
"No unit of work ... outlives its lease ... however large the backlog or slow the host").

A beat died holding thousands of recorded, unpublished fires whose lease has run out. Another
beat takes them over in chunks of about a second of its publishing (``_RECOVER_CHUNK``,
``claim_stale_pending``) through a slow broker; a third beat looks for expired fires in the
middle of that. No fire the taker holds may see its lease run out (or the third beat, or the
taker itself on its next tick, would claim it again): each fire is claimed once, published once,
and all of them are sent.

Time is the test's :class:`FixedClock`, which the brokers move forward per message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import FireStatus, PublishRequest, fire_task_id
from celery_dbeat.locks import DatabaseLock
from celery_dbeat.store import Store
from tests.integration.conftest import START, F, MakeTicker, Tables, settings, uid_of
from tests.integration.test_backlog import SlowBroker

MINUTE = timedelta(minutes=1)
SECOND = timedelta(seconds=1)
#: The dead beat's fires: this many schedules with this many recorded slots each.
SCHEDULES, SLOTS = 20, 100
DEAD = SCHEDULES * SLOTS
#: The taker's broker: 20 messages a second. Its first chunk (it assumes 200 a second until it
#: has measured itself) takes 10 s to publish, a whole lease: only extending the lease while
#: it publishes keeps that chunk.
PER_MESSAGE = 0.05
LEASE = 10


def _leave_dead_beat_fires(api: Schedules, tables: Tables) -> None:
    """What a beat that died right after recording leaves: PENDING fires, leased to it until a
    minute ago. The schedules themselves are not due during the test."""
    names = [f"s{i:02}" for i in range(SCHEDULES)]
    api.add_many([Definition.create(name=n, task="t", schedule=Every(3600)) for n in names])
    rows = []
    for name in names:
        schedule_id, uid = tables.row(name).id, uid_of(name, tables.store)
        for n in range(1, SLOTS + 1):
            slot = START - n * MINUTE
            rows.append(
                {
                    "schedule_id": schedule_id,
                    "slot": slot,
                    "manual": False,
                    "status": FireStatus.PENDING.value,
                    "slot_count": 1,
                    "task_id": fire_task_id(uid, slot),
                    "beat": "beat-dead",
                    "recorded_at": START - 2 * MINUTE,
                    "lease_until": START - MINUTE,
                    "attempts": 0,
                }
            )
    with tables.store.engine.begin() as conn:
        conn.execute(sa.insert(F), rows)


def _record_claims(store: Store, monkeypatch: pytest.MonkeyPatch, claims: list[list[str]]) -> None:
    """Keep the task ids of each ``claim_stale_pending`` of ``store``, one list a claim."""
    claim = store.claim_stale_pending

    def recording(now: datetime, lease_until: datetime, limit: int) -> list[PublishRequest]:
        requests = claim(now, lease_until, limit)
        if requests:
            claims.append([r.task_id for r in requests])
        return requests

    monkeypatch.setattr(store, "claim_stale_pending", recording)


def _expired_while_held(store: Store, now: datetime) -> int:
    """Fires a live beat holds (leased after the dead beat's lease) whose lease is over."""
    with store.engine.connect() as conn:
        return int(
            conn.execute(
                sa.select(sa.func.count())
                .select_from(F)
                .where(
                    F.c.status == FireStatus.PENDING.value,
                    F.c.lease_until > START,
                    F.c.lease_until <= now,
                )
            ).scalar_one()
        )


def test_a_slow_beat_takes_over_thousands_of_expired_fires_without_letting_one_expire(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    open_store: Callable[[], Store],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _leave_dead_beat_fires(api, tables)
    taker_claims: list[list[str]] = []
    other_claims: list[list[str]] = []
    _record_claims(tables.store, monkeypatch, taker_claims)
    other_store = open_store()
    _record_claims(other_store, monkeypatch, other_claims)
    other_broker = SlowBroker(clock, 0.0)
    # A third beat, running meanwhile: it takes over what it finds expired, 10 at a time.
    other = Ticker(
        other_store,
        DatabaseLock(),
        other_broker,
        settings("beat-3", lock_ttl=LEASE, batch_size=10),
        clock,
    )
    broker = SlowBroker(clock, PER_MESSAGE)
    expired: list[tuple[datetime, int]] = []

    def check(request: PublishRequest) -> None:
        count = _expired_while_held(tables.store, clock.now())
        if count:
            expired.append((clock.now(), count))
        if len(broker.sent) % 50 == 25:
            other.recover_pending()

    broker.before = check
    taker = make_ticker(publish=broker, instance_name="beat-2", lock_ttl=LEASE, batch_size=500)
    caplog.set_level(logging.INFO, logger="celery_dbeat")

    ticks = 0
    while len(broker.sent) + len(other_broker.sent) < DEAD:
        ticks += 1
        assert ticks < 2000, "the dead beat's fires are not all taken over"
        clock.advance(timedelta(seconds=taker.tick()))  # a tick, then the sleep it asks for

    assert not expired, f"leases ran out while held: {expired[:5]}"
    claimed = [task_id for claim in taker_claims + other_claims for task_id in claim]
    assert len(claimed) == len(set(claimed)) == DEAD  # each claimed once
    published = [r.task_id for r, _ in broker.sent + other_broker.sent]
    assert len(published) == len(set(published)) == DEAD  # each published once
    assert {r.status for r in tables.fires()} == {FireStatus.SENT.value}
    # Taken in chunks, none larger than the batch size, and once the taker has measured
    # itself, of about a second of its publishing (20 fires).
    assert len(taker_claims) > 10
    assert max(len(c) for c in taker_claims) <= 500
    assert max(len(c) for c in taker_claims[len(taker_claims) // 2 :]) <= 2 / PER_MESSAGE
    assert other_claims  # the third beat did look, and took some of the dead beat's fires
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "ran out" in m]
    assert not [m for m in messages if "taken over by another beat" in m]


def test_a_dead_beat_s_fires_are_taken_over_at_the_capacity_of_the_beat_taking_them(
    api: Schedules, tables: Tables, make_ticker: MakeTicker, clock: FixedClock
) -> None:
    """They are late already: the taker publishes them one chunk after another, as it does a
    catch-up, not one chunk per ``max_interval`` (SEMANTICS: "When more is due than the beats
    can publish, they publish at capacity")."""
    _leave_dead_beat_fires(api, tables)
    broker = SlowBroker(clock, PER_MESSAGE)
    taker = make_ticker(publish=broker, instance_name="beat-2", lock_ttl=LEASE)
    began = clock.now()

    while len(broker.sent) < DEAD and clock.now() - began < timedelta(hours=1):
        clock.advance(timedelta(seconds=taker.tick()))

    assert len(broker.sent) == DEAD
    publishing = DEAD * PER_MESSAGE * SECOND  # 100 s at 20 a second
    max_interval = taker.settings.max_interval
    # Measured: 455 s, 100 s of publishing and a sleep of max_interval (5 s) after each chunk.
    assert clock.now() - began <= 1.25 * publishing + max_interval
