"""A ``beat_schedule`` of any size syncs on every backend: no statement the sync sends grows with
the number of entries, and 70,000 of them sync, re-sync and half go on PostgreSQL.

Before every IN list was chunked, the sync sent one statement with a parameter per entry: more
than psycopg's and MySQL's 65,535, so beat logged "database unreachable" and retried the whole
sync on every tick without ever firing. And with psycopg's server-side prepared statements, a
re-sync of 100,000 unchanged entries took minutes (see ``store.create_engine``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.core.definitions import Definition
from celery_dbeat.store import Store
from tests.integration.conftest import START, Tables
from tests.services import install_schema, private_database

pytestmark = pytest.mark.slow

#: More than the 65,535 parameters one statement may carry on PostgreSQL (psycopg) and MySQL.
ENTRIES = 70_000


def entries(count: int) -> list[Definition]:
    return [
        Definition.create(name=f"entry-{i:06d}", task="t.bulk", schedule=Every(60 + i % 7))
        for i in range(count)
    ]


def sync_resync_and_halve(tables: Tables, definitions: list[Definition]) -> None:
    """Sync ``definitions``, sync them again unchanged, then sync half of them."""
    count = len(definitions)
    report = tables.sync(definitions, START)
    assert len(report.created) == count

    again = tables.sync(definitions, START + timedelta(minutes=1))
    assert (len(again.unchanged), again.created, again.updated) == (count, [], [])

    kept = definitions[: count // 2]
    halved = tables.sync(kept, START + timedelta(minutes=2))
    assert len(halved.unchanged) == len(kept)
    assert halved.disabled == [d.name for d in definitions[count // 2 :]]
    enabled = [row.name for row in tables.rows() if row.enabled]
    assert enabled == [d.name for d in kept]


@contextmanager
def largest_statement(store: Store) -> Iterator[list[int]]:
    """Yields a list that holds, once the block is done, the most parameters one statement sent
    to the database carried (a statement sent once per row counts one row's)."""
    counts = [0]

    def count(_conn: Any, _cursor: Any, _sql: str, params: Any, _ctx: Any, many: bool) -> None:
        rows = params if many else [params]
        counts[0] = max(counts[0], *(len(row or ()) for row in rows))

    sa.event.listen(store.engine, "before_cursor_execute", count)
    try:
        yield counts
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", count)


def test_no_statement_of_a_sync_grows_with_the_number_of_entries(
    store: Store, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Both sizes past every chunk the sync and SQLAlchemy cut lists in (500 definitions a
    # transaction, IN lists of 1,000, 1,000 rows an INSERT), half of them removed included.
    with largest_statement(store) as smaller:
        sync_resync_and_halve(Tables(store), entries(2_500))
    with private_database(store.engine.url.get_backend_name(), tmp_path_factory) as url:
        install_schema(url)
        twice = Store(url, server_clock=False)
        try:
            with largest_statement(twice) as larger:
                sync_resync_and_halve(Tables(twice), entries(5_000))
        finally:
            twice.close()
    assert larger == smaller
    assert smaller[0] < 32_766  # SQLite's limit, the lowest of the three


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_seventy_thousand_entries_sync_resync_and_half_of_them_go(tables: Tables) -> None:
    sync_resync_and_halve(tables, entries(ENTRIES))


def test_a_sync_slower_than_the_idle_in_transaction_limit_still_completes(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host slow enough that computing the whole sync takes longer than PostgreSQL lets a
    transaction sit idle (beats set it to dbeat_lock_ttl): each transaction of the sync must
    stay inside it. Before the sync was split, the server ended its one transaction and beat
    started the whole sync over, for ever."""
    from celery_dbeat.store import Store, migrate
    from celery_dbeat.store.schedules import new_row
    from celery_dbeat.store.sync import CHUNK, sync_config

    def slow_row(*args: Any) -> Any:
        time.sleep(0.001)  # the work of one entry on a slow host
        return new_row(*args)

    monkeypatch.setattr("celery_dbeat.store.reconcile.new_row", slow_row)
    entries = 4 * CHUNK  # 2 s of work in all; half a second per transaction
    definitions = [
        Definition.create(name=f"entry-{i:05d}", task="t.bulk", schedule=Every(60))
        for i in range(entries)
    ]
    with private_database("postgresql", tmp_path_factory) as url:
        store = Store(url, idle_in_transaction=timedelta(seconds=1.5), server_clock=False)
        try:
            migrate(store.engine)
            report = sync_config(store, definitions, START)
        finally:
            store.close()
    assert len(report.created) == entries
