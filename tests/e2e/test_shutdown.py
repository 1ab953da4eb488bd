"""A clean stop: beat exits promptly on SIGTERM and removes its heartbeat.

Found by the chaos suite: with Redis change notifications, SIGTERM arrived while beat waited on
its pub/sub socket, redis-py's clean-up of the closed socket replaced Celery's SystemExit, and
beat went on ticking (and firing) until SIGKILLed.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.e2e.harness import Harness, every

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.mark.parametrize("redis_locks", [True, False], ids=["redis", "database-locks"])
@pytest.mark.parametrize("e2e_database_url", ["sqlite"], indirect=True)
def test_beat_exits_on_sigterm_and_forgets_its_heartbeat(
    harness: Harness, redis_locks: bool
) -> None:
    harness.configure({"hourly": every(3600)}, redis_locks=redis_locks)
    beats = [harness.start_beat(f"beat-{n}") for n in range(3)]
    harness.wait_until(
        lambda: {b.pid for b in beats} <= {e["pid"] for e in harness.ready()},
        timeout=60,
        what="beats to start",
    )
    harness.run_for(2)  # each is now waiting between ticks (on Redis pub/sub with locks)

    killed = harness.stop_all(beats, timeout=5)

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
    harness.wait_until(
        lambda: {b.pid for b in beats} <= {e["pid"] for e in harness.ready()},
        timeout=60,
        what="beats to start",
    )
    harness.run_for(2)

    killed = harness.stop_all(beats, timeout=5)

    assert killed == [], [p.tail() for p in killed]
    with harness.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM dbeat_beats")).scalar() == 0
