"""A ``beat_schedule`` of 100,000 entries syncs on every backend.

Before every IN list was chunked, the sync sent one statement with a parameter per entry: more
than psycopg's and MySQL's 65,535, so beat logged "database unreachable" and retried the whole
sync on every tick without ever firing. And with psycopg's server-side prepared statements, a
re-sync of 100,000 unchanged entries took minutes (see ``store.create_engine``).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from celery_dbeat import Every
from celery_dbeat.definitions import Definition
from tests.integration.conftest import START, Tables

pytestmark = pytest.mark.slow

ENTRIES = 100_000


def test_a_hundred_thousand_entries_sync_resync_and_half_of_them_go(
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
