"""An edit that races another writer's is refused with :class:`ScheduleChanged`, which says "try
again", rather than overwriting the other edit; it is not a :class:`ValidationError` (the input
was fine), so callers can tell a retry from a fix."""

from __future__ import annotations

import pytest

import celery_dbeat
from celery_dbeat import Cron
from celery_dbeat.api import Schedules
from celery_dbeat.core import errors
from celery_dbeat.core.definitions import Definition
from celery_dbeat.store import schedules as store_schedules
from tests.integration.conftest import START, lose_every_race

#: The API's own tests: one private SQLite file is enough.
ON_SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@ON_SQLITE
def test_an_update_of_a_row_changed_since_it_was_read_raises_schedule_changed(
    api: Schedules, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    lose_every_race(monkeypatch)

    with pytest.raises(errors.ScheduleChanged) as caught:
        api.update("report", args=[1])

    assert not isinstance(caught.value, errors.ValidationError)
    assert caught.value.name == "report"
    assert str(caught.value) == (
        "schedule 'report' was changed by someone else at the same time; nothing was stored: "
        "try again"
    )
    monkeypatch.undo()
    assert api.get("report").args == []


@ON_SQLITE
def test_a_pause_that_loses_the_race_raises_schedule_changed_too(
    api: Schedules, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    lose_every_race(monkeypatch)

    with pytest.raises(errors.ScheduleChanged):
        api.pause("report")


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql", "mysql"], indirect=True)
def test_the_store_refuses_a_write_from_a_stale_read_on_every_backend(api: Schedules) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    with api.store.engine.connect() as conn:
        stale = store_schedules.load_schedule(conn, "report")
    api.update("report", args=[2])  # another writer, after the read
    edited = Definition.create(
        name="report", task="proj.tasks.report", schedule=Cron("0 * * * *"), args=[3]
    )

    with pytest.raises(errors.ScheduleChanged), api.store.engine.begin() as conn:
        store_schedules.update_schedule(conn, edited, START, stale)

    assert api.get("report").args == [2]


def test_every_exception_of_the_tree_is_exported_from_the_package() -> None:
    for name in errors.__all__:
        assert getattr(celery_dbeat, name) is getattr(errors, name)
        assert name in celery_dbeat.__all__
        assert name in (errors.__doc__ or ""), f"{name} is drawn in the tree"
