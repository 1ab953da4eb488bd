"""A clean stop: beat exits promptly on SIGTERM and removes its heartbeat.

Found by the chaos suite: with Redis change notifications, SIGTERM arrived while beat waited on
its pub/sub socket, redis-py's clean-up of the closed socket replaced Celery's SystemExit, and
beat went on ticking (and firing) until SIGKILLed.
"""

from __future__ import annotations

from collections import Counter

import pytest
import sqlalchemy as sa

from celery_dbeat.api import Schedules
from tests.e2e.harness import Harness, every

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: Seconds a beat may take from SIGTERM to its exit. A clean stop takes a second or two beside
#: two busy loops, nearly all of it the interpreter's own exit (three beats at once, each
#: collecting its garbage on a crowded CPU); CI once took over 5 s for three. What these tests
#: guard against is a beat that never exits, or waits out the minutes it was asked to sleep or
#: SQLite's 30 s lock timeout: well above the one, below the others.
EXITS_WITHIN = 20


@pytest.mark.parametrize("redis_locks", [True, False], ids=["redis", "database-locks"])
@pytest.mark.parametrize("e2e_database_url", ["sqlite"], indirect=True)
def test_beat_exits_on_sigterm_and_forgets_its_heartbeat(
    harness: Harness, redis_locks: bool
) -> None:
    harness.configure({"hourly": every(3600)}, redis_locks=redis_locks)
    beats = [harness.start_beat(f"beat-{n}") for n in range(3)]
    harness.wait_ticking(beats)
    if redis_locks:
        harness.wait_listening(len(beats))  # each is now waiting on Redis pub/sub

    killed = harness.stop_all(beats, timeout=EXITS_WITHIN)

    assert killed == [], [p.tail() for p in killed]
    with harness.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM dbeat_beats")).scalar() == 0


@pytest.mark.parametrize("redis_locks", [True, False], ids=["redis", "postgresql-listen"])
@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_beat_waiting_for_notifications_for_minutes_exits_on_sigterm_at_once(
    harness: Harness, redis_locks: bool
) -> None:
    # Without Redis, beat waits on LISTEN of its own PostgreSQL connection (psycopg's
    # notifies): a SIGTERM must end that wait, not the two minutes asked for.
    harness.configure(
        {"hourly": every(3600)}, redis_locks=redis_locks, max_interval=120, lock_ttl=180
    )
    beats = [harness.start_beat(f"beat-{n}") for n in range(2)]
    harness.wait_listening(len(beats))  # each has ticked and waits for two minutes

    killed = harness.stop_all(beats, timeout=EXITS_WITHIN)

    assert killed == [], [p.tail() for p in killed]
    with harness.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM dbeat_beats")).scalar() == 0


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_a_beat_stopped_in_the_middle_of_a_batch_marks_what_it_sent_and_hands_back_the_rest(
    harness: Harness,
) -> None:
    """SIGTERM while a batch is being published (in the publishing thread): every message on
    the broker is marked sent before the beat exits, and the fires it had recorded and not
    published are handed back, so the next beat publishes each once. Found by the overload test
    in CI: the thread died with the process, its fires stayed pending though published, and a
    beat taking them over would have published them twice."""
    names = [f"s{i:03}" for i in range(100)]
    harness.configure({name: every(1) for name in names}, redis_locks=True, batch_size=50)
    first = harness.start_beat("beat-1", env={"DBEAT_E2E_PUBLISH_DELAY": "0.05"})
    harness.wait_until(
        lambda: len(harness.queued_task_ids()) >= 10, timeout=60, what="the first publishes"
    )

    assert harness.stop_all([first], timeout=EXITS_WITHIN) == []

    published = set(harness.queued_task_ids())
    with harness.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT task_id, status FROM dbeat_fires")).all()
    status: dict[str, str] = dict(rows)
    assert {task_id: status.get(task_id) for task_id in published} == dict.fromkeys(
        published, "sent"
    )
    assert "handed to the other beats" in first.log_path.read_text(errors="replace")
    with Schedules(harness.database_url) as api:
        for name in names:
            api.pause(name)
    second = harness.start_beat("beat-2")
    harness.wait_until(
        lambda: _count(harness, "SELECT count(*) FROM dbeat_fires WHERE status = 'pending'") == 0,
        timeout=60,
        what="the handed-back fires to be published",
    )
    harness.stop(second)

    copies = Counter(harness.queued_task_ids())
    assert not [task_id for task_id, n in copies.items() if n > 1]
    with harness.engine.connect() as conn:
        sent = set(
            conn.execute(sa.text("SELECT task_id FROM dbeat_fires WHERE status = 'sent'")).scalars()
        )
    assert set(copies) == sent


def _count(harness: Harness, sql: str) -> int:
    with harness.engine.connect() as conn:
        return int(conn.execute(sa.text(sql)).scalar_one())
