"""A ``beat_schedule`` of 70,000 entries syncs on every backend.

Before every IN list was chunked, the sync sent one statement with a parameter per entry: more
than psycopg's and MySQL's 65,535, so beat logged "database unreachable" and retried the whole
sync on every tick without ever firing. And with psycopg's server-side prepared statements, a
re-sync of 100,000 unchanged entries took minutes (see ``store.create_engine``).
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest

from celery_dbeat import Every
from celery_dbeat.core.definitions import Definition
from tests.integration.conftest import START, Tables

pytestmark = pytest.mark.slow

#: More than the 65,535 parameters one statement may carry on PostgreSQL (psycopg) and MySQL.
ENTRIES = 70_000


def test_seventy_thousand_entries_sync_resync_and_half_of_them_go(
    tables: Tables,
) -> None:
    definitions = [
        Definition.create(name=f"entry-{i:06d}", task="t.bulk", schedule=Every(60 + i % 7))
        for i in range(ENTRIES)
    ]
    report = tables.sync(definitions, START)
    assert len(report.created) == ENTRIES

    again = tables.sync(definitions, START + timedelta(minutes=1))
    assert (len(again.unchanged), again.created, again.updated) == (ENTRIES, [], [])

    kept = definitions[: ENTRIES // 2]
    halved = tables.sync(kept, START + timedelta(minutes=2))
    assert len(halved.unchanged) == len(kept)
    assert halved.disabled == [d.name for d in definitions[ENTRIES // 2 :]]
    enabled = [row.name for row in tables.rows() if row.enabled]
    assert enabled == [d.name for d in kept]


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
    from tests.services import private_database

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
