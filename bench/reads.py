"""Two reads a beat makes for many schedules at once, timed on a scratch PostgreSQL database
(``python -m bench.reads``; ``BENCH_PG_ADMIN_URL`` names the server, default the local one).

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

import os
import sys
import time
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.core.audit import Actor
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import ScheduleRow
from celery_dbeat.store import Store, migrate
from celery_dbeat.store.models import S
from celery_dbeat.store.reading import PLAN_COLUMNS, read_rows
from celery_dbeat.store.runs import run_states

ADMIN_URL = os.environ.get(
    "BENCH_PG_ADMIN_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
DATABASE = "dbeat_bench_reads"

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


def _store(schedules: list[Definition], history: int) -> Schedules:
    url = sa.make_url(ADMIN_URL).set(database=DATABASE)
    api = Schedules(url.render_as_string(hide_password=False))
    migrate(api.store.engine)
    for first in range(0, len(schedules), 2000):
        api.add_many(schedules[first : first + 2000])
    if history:
        with api.store.engine.begin() as conn:
            conn.execute(sa.text(_HISTORY), {"last": history - 1})
            conn.execute(sa.text("ANALYZE"))
    return api


def missed(watched: int, n: int, history: int, api_of: list[Schedules]) -> None:
    api = _store(
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
    api_of.append(api)
    store, now = api.store, datetime.now(UTC)
    for _ in range(3):
        started = time.perf_counter()
        raised = store.open_missed(now, Actor("bench", "beat"))
        took = time.perf_counter() - started
        print(f"missed W={watched} N={n} H={history}: {took * 1000:.1f} ms, {len(raised)} raised")


def states(n: int, history: int, api_of: list[Schedules]) -> None:
    api = _store(
        [
            Definition.create(name=f"s{i:06d}", task="t", schedule=Every(60), overlap_policy="skip")
            for i in range(n)
        ],
        history,
    )
    api_of.append(api)
    store: Store = api.store
    with store.engine.connect() as conn:
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
    admin = sa.create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"))
        conn.execute(sa.text(f"CREATE DATABASE {DATABASE}"))
    opened: list[Schedules] = []
    try:
        if argv[:1] == ["missed"] and len(argv) == 4:
            missed(int(argv[1]), int(argv[2]), int(argv[3]), opened)
        elif argv[:1] == ["states"] and len(argv) == 3:
            states(int(argv[1]), int(argv[2]), opened)
        else:
            sys.exit(__doc__)
    finally:
        for api in opened:
            api.close()
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"))
        admin.dispose()


if __name__ == "__main__":
    main(sys.argv[1:])
