"""``Schedules.add_many`` and ``update_many``: a bulk write stores each item as ``add`` or
``update`` would, or none of them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest

from celery_dbeat import Cron, Every
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.definitions import Definition
from celery_dbeat.errors import ScheduleExists, ScheduleNotFound, ValidationError
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


# update_many -----------------------------------------------------------------------------------


def _load(schedules: Schedules, count: int) -> list[str]:
    names = [f"bulk-{i}" for i in range(count)]
    schedules.add_many([_every_minute(name, second=i % 60) for i, name in enumerate(names)])
    return names


def test_update_many_stores_each_change_as_update_does(schedules: Schedules) -> None:
    """Twin schedules ``a-i`` and ``b-i``: the a's edited in one batch, the b's one by one."""

    def twin(prefix: str, i: int) -> Definition:
        return Definition.create(
            name=f"{prefix}-{i}", task="proj.tasks.t", schedule=Cron(f"* * * * * {i % 60}")
        )

    count = 120
    schedules.add_many([twin(prefix, i) for prefix in "ab" for i in range(count)])
    assert isinstance(schedules.clock, FixedClock)
    schedules.clock.advance(90)  # the retimed ones restart from here
    changes: dict[int, dict[str, Any]] = {}
    for i in range(count):
        if i % 3 == 0:
            changes[i] = {"args": [i, "edited"], "kwargs": {"n": i}}
        elif i % 3 == 1:
            changes[i] = {"schedule": Every(45), "max_runs": 5}
        else:
            changes[i] = {"options": {"queue": "q"}, "schedule": Cron("*/5 * * * *")}

    assert schedules.update_many({f"a-{i}": fields for i, fields in changes.items()}) == count

    for i, fields in changes.items():
        schedules.update(f"b-{i}", **fields)
    infos = {info.name: vars(info) for info in schedules.list()}
    ignored = {"id", "name", "created_at", "updated_at"}
    for i in range(count):
        batch, single = infos[f"a-{i}"], infos[f"b-{i}"]
        assert {k: v for k, v in batch.items() if k not in ignored} == {
            k: v for k, v in single.items() if k not in ignored
        }, i
    assert (infos["a-0"]["args"], infos["a-0"]["next_run_at"]) == ([0, "edited"], at("09:01:00"))
    assert infos["a-1"]["next_run_at"] == at("09:01:30") + timedelta(seconds=45)
    assert infos["a-0"]["version"] == 2


def test_update_many_counts_only_what_changed(schedules: Schedules) -> None:
    names = _load(schedules, 3)
    same = {"args": list(schedules.get(names[0]).args)}
    assert schedules.update_many({names[0]: same, names[1]: {"args": ["new"]}}) == 1
    assert schedules.get(names[0]).version == 1
    assert schedules.update_many({}) == 0


def test_update_many_with_an_unknown_name_stores_nothing(schedules: Schedules) -> None:
    names = _load(schedules, 3)
    with pytest.raises(ScheduleNotFound, match="nope"):
        schedules.update_many({names[0]: {"args": ["new"]}, "nope": {"args": []}})
    assert schedules.get(names[0]).args == [names[0]]


def test_update_many_with_one_bad_value_names_field_and_schedule_and_stores_nothing(
    schedules: Schedules,
) -> None:
    names = _load(schedules, 3)
    with pytest.raises(ValidationError) as caught:
        schedules.update_many(
            {names[0]: {"args": ["new"]}, names[2]: {"schedule": Cron("61 * * * *")}}
        )
    assert caught.value.field == "cron"
    assert "'bulk-2'" in str(caught.value)
    assert schedules.get(names[0]).args == [names[0]]


@pytest.mark.parametrize(
    ("field", "value"), [("name", "renamed"), ("enabled", False), ("colour", "red")]
)
def test_update_many_refuses_a_field_it_does_not_edit(
    schedules: Schedules, field: str, value: Any
) -> None:
    names = _load(schedules, 2)
    with pytest.raises(ValidationError, match="not an editable field") as caught:
        schedules.update_many({names[0]: {"args": ["new"]}, names[1]: {field: value}})
    assert caught.value.field == field
    assert schedules.get(names[0]).args == [names[0]]


def test_update_many_from_two_writers_on_the_same_rows_loses_neither_edit(
    schedules: Schedules, open_store: Callable[[], Store]
) -> None:
    """Each writer stores whole definitions read in its transaction; the rows are locked when
    read, so the second writer reads what the first wrote instead of writing back stale
    fields (without the lock the ``args`` of one writer are lost on PostgreSQL and MariaDB)."""
    names = _load(schedules, 200)
    writers = [Schedules(open_store(), clock=schedules.clock) for _ in range(2)]
    edits = [
        {name: {"args": ["forward"]} for name in names},
        {name: {"kwargs": {"by": "backward"}} for name in reversed(names)},
    ]
    with ThreadPoolExecutor(2) as pool:
        done = [pool.submit(w.update_many, e) for w, e in zip(writers, edits, strict=True)]
        assert [future.result(timeout=60) for future in done] == [200, 200]
    for info in schedules.list():
        assert (info.args, info.kwargs, info.version) == (["forward"], {"by": "backward"}, 3)
    for writer in writers:
        writer.close()
