"""Reads and writes a beat makes for many schedules at once, timed on a scratch database
(``python -m bench.reads KIND ... [postgresql|mysql|sqlite]``; the database is a
:class:`bench.services.Run`'s, by default on ``BENCH_POSTGRES``).

``missed W N H``
    ``Store.open_missed`` (a beat's look for missed deadlines, every ``dbeat_max_interval``)
    over ``N`` schedules of which ``W`` have an ``alert_deadline``, each with ``H`` minutes of
    history (runs that succeeded, the newest still going).
``states N H``
    ``store.runs.run_states`` (read for every batch of schedules with an overlap policy) of a
    batch of 500 ``skip`` schedules out of ``N``, each with ``H`` minutes of history.
``takeover N``
    ``Store.claim_stale_pending`` (a beat taking over a dead beat's fires) of 500 of ``N``
    fires whose lease is over, one a schedule.

Three passes each; prints the wall time (and for ``states`` and ``takeover`` the CPU time) of
each. The scratch database is dropped at the end.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from bench.run import WORKDIR
from bench.services import SERVERS, Run
from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.core.audit import Actor
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import ScheduleRow
from celery_dbeat.store import migrate
from celery_dbeat.store.models import F, S
from celery_dbeat.store.reading import PLAN_COLUMNS, read_rows
from celery_dbeat.store.runs import run_states


def _history(engine: sa.Engine, history: int) -> None:
    """``history`` minutes of fires for every schedule: succeeded but the newest, whose run is
    going."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    with engine.begin() as conn:
        ids = list(conn.execute(sa.select(S.c.id)).scalars())
        rows = [
            {
                "schedule_id": i,
                "slot": now - timedelta(minutes=g),
                "manual": False,
                "status": "sent",
                "slot_count": 1,
                "task_id": f"bench-{i}-{g}",
                "beat": "bench",
                "recorded_at": now,
                "attempts": 0,
                "run_status": "succeeded" if g else None,
                "finished_at": now - timedelta(minutes=g, seconds=-2) if g else None,
            }
            for i in ids
            for g in range(history)
        ]
        for first in range(0, len(rows), 5000):
            conn.execute(sa.insert(F), rows[first : first + 5000])
    analyze = {"postgresql": "ANALYZE", "mysql": "ANALYZE TABLE dbeat_fires", "sqlite": "ANALYZE"}
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql(analyze[engine.dialect.name])


def _load(api: Schedules, schedules: list[Definition], history: int) -> None:
    migrate(api.store.engine)
    for first in range(0, len(schedules), 2000):
        api.add_many(schedules[first : first + 2000])
    if history:
        _history(api.store.engine, history)


def missed(api: Schedules, watched: int, n: int, history: int) -> None:
    _load(
        api,
        [
            Definition.create(
                name=f"s{i:06d}",
                task="t",
                schedule=Every(60),
                alert_deadline=600 if i < watched else None,
            )
            for i in range(n)
        ],
        history,
    )
    now = datetime.now(UTC)
    for _ in range(3):
        started = time.perf_counter()
        raised = api.store.open_missed(now, Actor("bench", "beat"))
        took = time.perf_counter() - started
        print(f"missed W={watched} N={n} H={history}: {took * 1000:.1f} ms, {len(raised)} raised")


def takeover(api: Schedules, n: int) -> None:
    _load(
        api,
        [Definition.create(name=f"s{i:06d}", task="t", schedule=Every(60)) for i in range(n)],
        0,
    )
    now = datetime.now(UTC)
    with api.store.engine.begin() as conn:
        ids = list(conn.execute(sa.select(S.c.id)).scalars())
        conn.execute(
            sa.insert(F),
            [
                {
                    "schedule_id": i,
                    "slot": now - timedelta(minutes=1),
                    "manual": False,
                    "status": "pending",
                    "slot_count": 1,
                    "task_id": f"bench-{i}",
                    "beat": "dead",
                    "recorded_at": now,
                    "lease_until": now - timedelta(seconds=30),
                    "attempts": 0,
                }
                for i in ids
            ],
        )
    for _ in range(3):
        started, cpu = time.perf_counter(), time.process_time()
        taken = api.store.claim_stale_pending(now, now + timedelta(minutes=5), 500)
        took, cpu = time.perf_counter() - started, time.process_time() - cpu
        print(f"takeover of {len(taken)} (N={n}): {took * 1000:.1f} ms, {cpu * 1000:.1f} ms CPU")


def states(api: Schedules, n: int, history: int) -> None:
    _load(
        api,
        [
            Definition.create(name=f"s{i:06d}", task="t", schedule=Every(60), overlap_policy="skip")
            for i in range(n)
        ],
        history,
    )
    with api.store.engine.connect() as conn:
        read, _ = read_rows(conn, sa.select(*PLAN_COLUMNS).order_by(S.c.id).limit(500))
        rows = [ScheduleRow.from_row(row) for row in read]
        for _ in range(3):
            started, cpu = time.perf_counter(), time.process_time()
            found = run_states(conn, rows, datetime.now(UTC), timedelta(hours=1))
            took, cpu = time.perf_counter() - started, time.process_time() - cpu
            running = sum(state.running for state in found.values())
            print(
                f"states of {len(rows)} (N={n} H={history}): {took * 1000:.1f} ms,"
                f" {cpu * 1000:.1f} ms CPU, {running} running"
            )


#: Each kind's function and how many numbers it takes.
KINDS: dict[str, tuple[Callable[..., None], int]] = {
    "missed": (missed, 3),
    "states": (states, 2),
    "takeover": (takeover, 1),
}


def main(argv: list[str]) -> None:
    kind, *rest = argv or [""]
    if kind not in KINDS:
        sys.exit(__doc__)
    read, count = KINDS[kind]
    if len(rest) not in (count, count + 1):
        sys.exit(__doc__)
    numbers = [int(arg) for arg in rest[:count]]
    database = rest[count] if len(rest) > count else "postgresql"
    if database not in SERVERS:
        sys.exit(__doc__)
    run = Run(WORKDIR, f"reads-{kind}", server=SERVERS[database])
    try:
        with Schedules(run.database_url) as api:
            read(api, *numbers)
    finally:
        run.close()


if __name__ == "__main__":
    main(sys.argv[1:])
