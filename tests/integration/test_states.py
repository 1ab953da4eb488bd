"""A schedule's state is one rule: the Python form and the SQL form agree on every combination."""

from __future__ import annotations

import itertools
from datetime import datetime, timezone

import pytest
import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.core.states import STATES, schedule_state
from celery_dbeat.store import migrate
from celery_dbeat.store.models import S
from celery_dbeat.store.schedules import state_expression

COMBINATIONS = list(itertools.product([True, False], [None, "x"], [None, "boom"]))


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql", "mysql"], indirect=True)
def test_sql_and_python_name_the_same_state_for_every_combination(database_url: str) -> None:
    finished = datetime(2025, 1, 1, tzinfo=timezone.utc)
    with Schedules(database_url) as api:
        migrate(api.store.engine)
        for n, (enabled, done, error) in enumerate(COMBINATIONS):
            api.add(f"s{n}", "t", Every(60))
            with api.store.engine.begin() as conn:
                conn.execute(
                    sa.update(S)
                    .where(S.c.name == f"s{n}")
                    .values(
                        enabled=enabled, finished_at=finished if done else None, last_error=error
                    )
                )
        with api.store.engine.connect() as conn:
            in_sql: dict[str, str] = dict(
                conn.execute(sa.select(S.c.name, state_expression())).all()
            )
        in_python = {info.name: info.state for info in api.list()}
        counts = api.counts()

    assert in_sql == in_python
    assert set(in_python.values()) == set(STATES)
    assert sum(counts.values()) == len(COMBINATIONS)
    assert counts == {s: list(in_python.values()).count(s) for s in STATES}


def test_the_rule_takes_the_first_state_that_holds() -> None:
    class Row:
        def __init__(self, enabled: bool, finished_at: object, last_error: object) -> None:
            self.enabled, self.finished_at, self.last_error = enabled, finished_at, last_error

    assert schedule_state(Row(True, "done", "boom")) == "finished"
    assert schedule_state(Row(True, None, "boom")) == "error"
    assert schedule_state(Row(True, None, None)) == "active"
    assert schedule_state(Row(False, None, None)) == "paused"
