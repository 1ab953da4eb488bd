"""The tests' own private databases (tests/services.py): a server database a test is done with
is handed to the next test of the process empty, with its ids starting at 1, or dropped when the
test changed more than its rows; a session the test left open does not keep it."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from celery_dbeat.store import Store
from celery_dbeat.store.models import S
from tests.integration.conftest import Tables
from tests.services import _admin_url, _spares, install_schema, private_database

SERVERS = ["postgresql", "mysql"]


def exists(kind: str, name: str) -> bool:
    query = (
        "SELECT 1 FROM pg_database WHERE datname = :name"
        if kind == "postgresql"
        else "SELECT 1 FROM information_schema.schemata WHERE schema_name = :name"
    )
    engine = sa.create_engine(_admin_url(kind), poolclass=sa.NullPool)
    with engine.connect() as conn:
        return conn.execute(sa.text(query), {"name": name}).first() is not None


@pytest.mark.parametrize("kind", SERVERS)
def test_a_database_a_test_filled_comes_back_empty_with_ids_from_one(
    kind: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with private_database(kind, tmp_path_factory) as url:
        install_schema(url)
        name = str(sa.make_url(url).database)
        store = Store(url, server_clock=False)
        assert [Tables(store).insert(f"s{i}") for i in range(3)] == [1, 2, 3]
        left_open = store.engine.connect()  # a session the test never closed, holding locks
        left_open.execute(sa.select(S.c.id).with_for_update()).all()
    left_open.invalidate()  # its server session is gone: the database was not waiting for it
    assert _spares(kind).head[-1] == name  # kept, not dropped: the next test's spare
    with private_database(kind, tmp_path_factory) as url:
        install_schema(url)
        again = Store(url, server_clock=False)
        try:
            assert Tables(again).rows() == []
            assert Tables(again).insert("again") == 1
        finally:
            again.close()
    store.close()


@pytest.mark.parametrize("kind", SERVERS)
def test_a_database_whose_schema_a_test_changed_is_dropped(
    kind: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with private_database(kind, tmp_path_factory) as url:
        install_schema(url)
        with sa.create_engine(url, poolclass=sa.NullPool).begin() as conn:
            conn.exec_driver_sql("ALTER TABLE dbeat_schedules ADD COLUMN extra INTEGER")
        name = str(sa.make_url(url).database)
    assert not exists(kind, name)
    assert name not in _spares(kind).head + _spares(kind).empty
