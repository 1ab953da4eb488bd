"""Under load and backlog, with real beats (SEMANTICS "Load and backlog", and "A schedule's
identity is its row, not its name").

No worker consumes the queue in the load tests: every message a beat published stays on the
Redis broker, where the test reads the task id of each copy. Capacity comes from a publish delay
(``DBEAT_E2E_PUBLISH_DELAY``), so "more than the beats can publish" holds on any machine; what is
asserted is behaviour (each fire once, nothing churned, what the beats say), never a duration.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.store import migrate
from tests.e2e.harness import Harness, Proc, every

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.load]

PENDING = "SELECT count(*) FROM dbeat_fires WHERE status = 'pending'"
SENT = "SELECT count(*) FROM dbeat_fires WHERE status = 'sent'"
UNSENT = "SELECT count(*) FROM dbeat_fires WHERE status IN ('queued', 'pending')"


def _log(proc: Proc) -> str:
    return proc.log_path.read_text(errors="replace")


def _count(harness: Harness, sql: str) -> int:
    with harness.engine.connect() as conn:
        return int(conn.execute(sa.text(sql)).scalar_one())


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_a_schedule_that_takes_a_renamed_ones_name_fires_and_stops_nothing(
    harness: Harness,
) -> None:
    """The scenario of the issue: A and C fire; B (policy all) is paused on A's grid; A is
    renamed A-old, B renamed A and resumed with catch-up. Before identities, the new A planned
    task ids the old one had used, and the beat stopped firing anything, C included."""
    harness.configure({}, redis_locks=True)
    with Schedules(harness.database_url) as api:
        migrate(api.store.engine)
        start = api.clock.now()
        for name in ("A", "B", "C"):
            api.add(name, "e2e.record", Every(1), args=[name], start_at=start, misfire_policy="all")
        api.pause("B")
    harness.start_worker()
    first = harness.start_beat("beat-1")
    harness.wait_ready()
    harness.wait_until(
        lambda: Counter(r.schedule for r in harness.received())["C"] >= 5,
        timeout=60,
        what="five fires of C",
    )
    harness.stop(first)
    with Schedules(harness.database_url) as api:
        api.update("A", name="A-old")
        api.update("B", name="A")
        api.resume("A", catch_up=True)
    before = Counter(r.schedule for r in harness.received())

    second = harness.start_beat("beat-2")
    harness.wait_ready([second])
    harness.wait_until(
        lambda: Counter(r.schedule for r in harness.received())["C"] >= before["C"] + 5,
        timeout=60,
        what="C to go on firing after the renames",
    )
    harness.stop(second)
    harness.drain()

    received = harness.received()
    ids = Counter(r.task_id for r in received)
    assert not [i for i, n in ids.items() if n > 1]
    after = Counter(r.schedule for r in received)
    assert after["B"] > 0  # the schedule now named A, which was B: its catch-up and on time
    assert after["A"] > before["A"]  # A-old (its args still say A) goes on
    assert "unreachable" not in _log(second)
    with Schedules(harness.database_url) as api:
        assert api.counts()["error"] == 0


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_overloaded_beats_publish_at_capacity_say_so_churn_nothing_and_catch_up(
    harness: Harness,
) -> None:
    """300 schedules a second against two beats that each publish 100 a second, then 30 a
    second: every fire once, no lease running out and no fire taken over (the churn that
    collapsed throughput), at most one batch recorded and unsent per beat, one "behind"
    warning per beat and episode, then "caught up"."""
    names = [f"s{i:03}" for i in range(300)]
    batch = 100
    harness.configure({name: every(1) for name in names}, redis_locks=True, batch_size=batch)
    delay = {"DBEAT_E2E_PUBLISH_DELAY": "0.01"}
    beats = [harness.start_beat(f"beat-{n}", env=delay) for n in (1, 2)]
    harness.wait_ready(received=False)
    unsent: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.1):
            unsent.append(
                _count(harness, "SELECT count(*) FROM dbeat_fires WHERE status = 'pending'")
            )

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        harness.wait_until(
            lambda: all("behind by" in _log(b) for b in beats),
            timeout=60,
            what="each beat to say it is behind",
        )
        with Schedules(harness.database_url) as api:
            for name in names[30:]:
                api.pause(name)
        harness.wait_until(
            lambda: all("caught up after" in _log(b) for b in beats),
            timeout=120,
            what="each beat to say it caught up",
        )
    finally:
        stop.set()
        sampler.join()
    # What the beats said while both ran: the first to stop hands its unpublished fires to the
    # other, which then publishes them as fires "their beat did not publish in time".
    logs = [_log(beat) for beat in beats]
    for beat in beats:
        harness.stop(beat)

    published = harness.queued_task_ids()
    copies = Counter(published)
    status = {f.task_id: f.status for f in harness.fires()}
    sent = {task_id for task_id, s in status.items() if s == "sent"}
    print(f"published {len(published)}, unsent at most {max(unsent)}")
    print("published, not sent:", Counter(status.get(i) for i in set(copies) - sent))
    for beat in beats:
        print(beat.name, _log(beat)[-3000:])
    assert len(published) > 1000  # not a vacuous pass
    assert not [task_id for task_id, n in copies.items() if n > 1]
    assert set(copies) == sent
    assert max(unsent) <= 2 * batch
    for log in logs:
        assert len(re.findall("behind by", log)) == 1
        assert "ran out before publishing" not in log
        assert "did not publish in time" not in log


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_a_large_catch_up_drains_behind_the_on_time_fires(harness: Harness) -> None:
    """20 schedules every second of policy ``all`` come back 1,000 seconds behind (20,000
    fires to catch up) beside 40 on time: while the backlog drains, no on-time fire waits for
    it; every fire goes out once."""
    on_time = {f"on-time-{i:02}": every(1) for i in range(40)}
    backlog = {
        f"backlog-{i}": {"every": 1, "misfire_policy": "all", "catchup_limit": 1000}
        for i in range(20)
    }
    harness.configure({**on_time, **backlog}, redis_locks=True)
    first = harness.start_beat("beat-1")
    harness.wait_ready(received=False)
    harness.stop(first)  # the schedules exist; now every beat was "down" for 1,000 s
    with harness.engine.begin() as conn:
        for name in backlog:
            conn.execute(
                sa.text(
                    "UPDATE dbeat_schedules SET next_run_at = next_run_at - :back,"
                    " anchor_at = anchor_at - :back WHERE name = :name"
                ),
                {"back": timedelta(seconds=1000), "name": name},
            )
        conn.execute(sa.text("DELETE FROM dbeat_beats"))
    back = time.time()
    beats = [harness.start_beat(f"beat-{n}") for n in (2, 3)]
    harness.wait_ready(beats, received=False)
    harness.wait_until(
        lambda: (
            _count(harness, "SELECT count(*) FROM dbeat_fires WHERE status = 'sent'") > 20_000
            and _count(
                harness, "SELECT count(*) FROM dbeat_fires WHERE status IN ('queued', 'pending')"
            )
            == 0
        ),
        timeout=120,
        what="the catch-up to drain",
    )
    time.sleep(2)  # a few more on-time slots after the drain
    for beat in beats:
        harness.stop(beat)

    copies = Counter(harness.queued_task_ids())
    fires: list[Any] = harness.fires()
    sent = [f for f in fires if f.status == "sent"]
    assert not [task_id for task_id, n in copies.items() if n > 1]
    assert set(copies) == {f.task_id for f in sent}
    caught_up = [f for f in sent if f.schedule.startswith("backlog") and f.slot < back - 10]
    assert len(caught_up) >= 19_000
    drained = max(f.sent_at for f in caught_up)
    began = min(f.sent_at for f in caught_up)
    # On-time slots that came due while the backlog drained, well before its end: each went out
    # before the last of the backlog did (before the queue, the whole backlog went out first).
    during = [f for f in sent if f.schedule.startswith("on-time") and began < f.slot < drained - 3]
    assert during
    assert all(f.sent_at < drained for f in during)
    print(
        f"caught up {len(caught_up)} in {drained - began:.1f} s; on-time lag during it:"
        f" max {max(f.sent_at - f.slot for f in during):.2f} s"
    )
