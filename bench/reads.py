"""Two reads a beat makes for many schedules at once, timed on a scratch PostgreSQL database
(``python -m bench.reads``; the database is a :class:`bench.services.Run`'s, on ``BENCH_POSTGRES``).

``missed W N H``
    ``Store.open_missed`` (a beat's look for missed deadlines, every ``dbeat_max_interval``)
    over ``N`` schedules of which ``W`` have an ``alert_deadline``, each with ``H`` minutes of
    history (runs that succeeded, the newest still going).
``states N H``
    ``store.runs.run_states`` (read for every batch of schedules with an overlap policy) of a
    batch of 500 ``skip`` schedules out of ``N``, each with ``H`` minutes of history.

Three passes each; prints the wall time (and for ``states`` the CPU time) of each. The scratch
database is dropped at the end.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from bench.run import WORKDIR
from bench.services import Run
from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.core.audit import Actor
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import ScheduleRow
from celery_dbeat.store import migrate
from celery_dbeat.store.models import S
from celery_dbeat.store.reading import PLAN_COLUMNS, read_rows
from celery_dbeat.store.runs import run_states

#: ``H`` minutes of fires for every schedule: succeeded but the newest, whose run is going.
_HISTORY = """
INSERT INTO dbeat_fires (schedule_id, slot, manual, status, slot_count, task_id, beat,
    recorded_at, attempts, run_status, finished_at)
SELECT s.id, date_trunc('minute', now()) - g * interval '1 minute', false, 'sent', 1,
    md5(s.id || '-' || g), 'bench', now(), 0,
    CASE WHEN g = 0 THEN NULL ELSE 'succeeded' END,
    CASE WHEN g = 0 THEN NULL
        ELSE date_trunc('minute', now()) - g * interval '1 minute' + interval '2 seconds' END
FROM dbeat_schedules s, generate_series(0, :last) g
"""


def _load(api: Schedules, schedules: list[Definition], history: int) -> None:
    migrate(api.store.engine)
    for first in range(0, len(schedules), 2000):
        api.add_many(schedules[first : first + 2000])
    if history:
        with api.store.engine.begin() as conn:
            conn.execute(sa.text(_HISTORY), {"last": history - 1})
            conn.execute(sa.text("ANALYZE"))


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


def main(argv: list[str]) -> None:
    arguments = {"missed": 3, "states": 2}
    if not argv or len(argv) - 1 != arguments.get(argv[0]):
        sys.exit(__doc__)
    numbers = [int(arg) for arg in argv[1:]]
    run = Run(WORKDIR, f"reads-{argv[0]}")
    try:
        with Schedules(run.database_url) as api:
            (missed if argv[0] == "missed" else states)(api, *numbers)
    finally:
        run.close()


if __name__ == "__main__":
    main(sys.argv[1:])
