"""``Schedules.add_many``: a bulk load stores every definition as ``add`` would, or none."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from celery_dbeat import Cron, Every
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.definitions import Definition
from celery_dbeat.errors import ScheduleExists, ValidationError
from celery_dbeat.store.queries import Store
from tests.integration.conftest import START, at


@pytest.fixture
def schedules(store: Store) -> Iterator[Schedules]:
    with Schedules(store, clock=FixedClock(START)) as api:
        yield api


def _every_minute(name: str, second: int = 0) -> Definition:
    return Definition.create(
        name=name, task="proj.tasks.tick", schedule=Cron(f"* * * * * {second}"), args=[name]
    )


def test_add_many_stores_each_definition_as_add_does(schedules: Schedules) -> None:
    definitions = [_every_minute(f"bulk-{i}", second=i % 60) for i in range(1500)]
    definitions.append(Definition.create(name="poll", task="proj.tasks.poll", schedule=Every(30)))

    assert schedules.add_many(definitions) == 1501

    assert len(schedules.list()) == 1501
    seventh = schedules.get("bulk-7")
    assert (seventh.args, seventh.next_run_at, seventh.enabled) == (
        ["bulk-7"],
        at("09:00:07"),
        True,
    )
    schedules.add("single", "proj.tasks.poll", Every(30))
    assert schedules.get("poll").next_run_at == schedules.get("single").next_run_at


def test_add_many_of_nothing_stores_nothing(schedules: Schedules) -> None:
    assert schedules.add_many([]) == 0
    assert schedules.list() == []


def test_add_many_refuses_a_taken_name_and_stores_none_of_the_batch(
    schedules: Schedules,
) -> None:
    schedules.add("bulk-3", "proj.tasks.tick", Every(60))

    with pytest.raises(ScheduleExists, match="bulk-3"):
        schedules.add_many([_every_minute(f"bulk-{i}") for i in range(5)])

    assert [s.name for s in schedules.list()] == ["bulk-3"]


def test_add_many_refuses_a_name_given_twice(schedules: Schedules) -> None:
    with pytest.raises(ValidationError, match="twice"):
        schedules.add_many([_every_minute("same"), _every_minute("other"), _every_minute("same")])

    assert schedules.list() == []
