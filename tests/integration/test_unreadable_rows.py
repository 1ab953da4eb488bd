"""One row holding a value the driver cannot read never stops the fleet (SEMANTICS: "One bad row
... never stops other schedules: it is marked with its error and skipped").

PostgreSQL keeps ``'-infinity'`` and ``'infinity'`` in a timestamp column, which psycopg refuses
to load; SQLite keeps any text, which SQLAlchemy refuses to parse. Before rows were read one by
one on failure, such a row made every tick fail (logged as "database unreachable") and
``list`` raise.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from tests.integration.conftest import START, MakeTicker, RecordingPublisher, Tables

CORRUPT = [
    pytest.param("postgresql", "next_run_at", "'-infinity'", id="postgresql-next-run-minus-inf"),
    pytest.param("postgresql", "start_at", "'infinity'", id="postgresql-start-at-inf"),
    pytest.param("sqlite", "next_run_at", "'2024-01-99 25:61:00'", id="sqlite-next-run-garbage"),
    pytest.param("sqlite", "last_slot", "'garbage'", id="sqlite-last-slot-garbage"),
]
MINUTE = timedelta(minutes=1)


def _definitions(*names: str) -> list[Definition]:
    return [Definition.create(name=n, task=f"t.{n}", schedule=Every(60)) for n in names]


@pytest.mark.parametrize(("database_url", "column", "value"), CORRUPT, indirect=["database_url"])
def test_a_row_that_cannot_be_read_is_set_aside_and_every_other_schedule_fires(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    caplog: pytest.LogCaptureFixture,
    column: str,
    value: str,
) -> None:
    tables.sync(_definitions("good", "bad"), START)
    tables.execute(f"UPDATE dbeat_schedules SET {column} = {value} WHERE name = 'bad'")
    ticker = make_ticker()
    caplog.set_level(logging.INFO, logger="celery_dbeat")

    for minutes in (1, 2):
        clock.set(START + minutes * MINUTE)
        assert ticker.tick() > 0
    assert publisher.fires == [("good", START + MINUTE), ("good", START + 2 * MINUTE)]
    assert not [r for r in caplog.records if "unreachable" in r.getMessage()]

    listed = {info.name: info for info in api.list()}
    assert listed["good"].last_error is None
    bad = api.get("bad")
    assert bad.last_error is not None
    assert [r.getMessage() for r in caplog.records if "set aside" in r.getMessage()] == [
        f"dbeat: schedule 'bad' set aside: {bad.last_error}"
    ]
    assert column in bad.last_error
    assert "cannot be read" in bad.last_error
    assert bad.next_run_at is None
    assert [info.name for info in api.failing()] == ["bad"]

    # Corrected by hand: next_run_at NULL without an error asks for a recompute.
    tables.execute(
        f"UPDATE dbeat_schedules SET {column} = NULL, last_error = NULL WHERE name = 'bad'"
    )
    clock.set(START + 2 * MINUTE + timedelta(seconds=1))
    ticker.tick()
    clock.set(START + 3 * MINUTE)
    ticker.tick()
    assert sorted(publisher.fires[2:]) == [
        ("bad", START + 3 * MINUTE),
        ("good", START + 3 * MINUTE),
    ]


@pytest.mark.parametrize(
    ("database_url", "value"),
    [
        pytest.param("postgresql", "'infinity'", id="postgresql-infinity"),
        pytest.param("sqlite", "'garbage'", id="sqlite-garbage"),
    ],
    indirect=["database_url"],
)
def test_an_unreadable_earliest_instant_does_not_stop_the_tick(
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    caplog: pytest.LogCaptureFixture,
    value: str,
) -> None:
    """The only enabled row is never due but its instant is what the tick's peek reads."""
    tables.sync(_definitions("bad"), START)
    tables.execute(f"UPDATE dbeat_schedules SET next_run_at = {value} WHERE name = 'bad'")
    ticker = make_ticker()
    caplog.set_level(logging.INFO, logger="celery_dbeat")
    clock.set(START + MINUTE)
    assert ticker.tick() == ticker.settings.max_interval.total_seconds()
    assert "next_run_at" in (tables.row("bad").last_error or "")
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [f"dbeat: schedule 'bad' set aside: {tables.row('bad').last_error}"]


@pytest.mark.parametrize(("database_url", "column", "value"), CORRUPT, indirect=["database_url"])
def test_giving_the_same_timing_again_replaces_a_value_that_cannot_be_read(
    api: Schedules, tables: Tables, clock: FixedClock, column: str, value: str
) -> None:
    """What the error message says to do works as said, even when nothing is given that
    differs from what was read: the row is written again whole, the unreadable value as NULL."""
    api.add("bad", "t.bad", Every(60))
    tables.execute(f"UPDATE dbeat_schedules SET {column} = {value} WHERE name = 'bad'")
    assert "cannot be read" in (api.get("bad").last_error or "")
    clock.set(START + 30 * MINUTE)

    repaired = api.update("bad", schedule=Every(60))

    assert repaired.last_error is None
    assert repaired.state == "active"
    assert repaired.next_run_at == START + 31 * MINUTE  # on its grid, from the edit on
    assert getattr(tables.row("bad"), column) == getattr(repaired, column)  # readable again
    assert api.get("bad") == repaired
