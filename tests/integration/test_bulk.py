"""``Schedules.add_many`` and ``update_many``: a bulk write stores each item as ``add`` or
``update`` would, or none of them."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest

from celery_dbeat import Cron, Every
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.errors import ScheduleExists, ScheduleNotFound, ValidationError
from celery_dbeat.store import Store
from tests.integration.conftest import at


def _every_minute(name: str, second: int = 0) -> Definition:
    return Definition.create(
        name=name, task="proj.tasks.tick", schedule=Cron(f"* * * * * {second}"), args=[name]
    )


def test_add_many_stores_each_definition_as_add_does(api: Schedules) -> None:
    definitions = [_every_minute(f"bulk-{i}", second=i % 60) for i in range(1500)]
    definitions.append(Definition.create(name="poll", task="proj.tasks.poll", schedule=Every(30)))

    assert api.add_many(definitions) == 1501

    assert len(api.list()) == 1501
    seventh = api.get("bulk-7")
    assert (seventh.args, seventh.next_run_at, seventh.enabled) == (
        ["bulk-7"],
        at("09:00:07"),
        True,
    )
    api.add("single", "proj.tasks.poll", Every(30))
    assert api.get("poll").next_run_at == api.get("single").next_run_at


def test_add_many_of_nothing_stores_nothing(api: Schedules) -> None:
    assert api.add_many([]) == 0
    assert api.list() == []


def test_add_many_refuses_a_taken_name_and_stores_none_of_the_batch(
    api: Schedules,
) -> None:
    api.add("bulk-3", "proj.tasks.tick", Every(60))

    with pytest.raises(ScheduleExists, match="bulk-3"):
        api.add_many([_every_minute(f"bulk-{i}") for i in range(5)])

    assert [s.name for s in api.list()] == ["bulk-3"]


def test_add_many_refuses_a_name_given_twice(api: Schedules) -> None:
    with pytest.raises(ValidationError, match="twice"):
        api.add_many([_every_minute("same"), _every_minute("other"), _every_minute("same")])

    assert api.list() == []


# update_many -----------------------------------------------------------------------------------


def _load(api: Schedules, count: int) -> list[str]:
    names = [f"bulk-{i}" for i in range(count)]
    api.add_many([_every_minute(name, second=i % 60) for i, name in enumerate(names)])
    return names


def test_update_many_stores_each_change_as_update_does(api: Schedules, clock: FixedClock) -> None:
    """Twin schedules ``a-i`` and ``b-i``: the a's edited in one batch, the b's one by one."""

    def twin(prefix: str, i: int) -> Definition:
        return Definition.create(
            name=f"{prefix}-{i}", task="proj.tasks.t", schedule=Cron(f"* * * * * {i % 60}")
        )

    count = 120
    api.add_many([twin(prefix, i) for prefix in "ab" for i in range(count)])
    clock.advance(90)  # the retimed ones restart from here
    changes: dict[int, dict[str, Any]] = {}
    for i in range(count):
        if i % 3 == 0:
            changes[i] = {"args": [i, "edited"], "kwargs": {"n": i}}
        elif i % 3 == 1:
            changes[i] = {"schedule": Every(45), "max_runs": 5}
        else:
            changes[i] = {"options": {"queue": "q"}, "schedule": Cron("*/5 * * * *")}

    assert api.update_many({f"a-{i}": fields for i, fields in changes.items()}) == count

    for i, fields in changes.items():
        api.update(f"b-{i}", **fields)
    infos = {info.name: vars(info) for info in api.list()}
    ignored = {"id", "uid", "name", "created_at", "updated_at"}
    for i in range(count):
        batch, single = infos[f"a-{i}"], infos[f"b-{i}"]
        assert {k: v for k, v in batch.items() if k not in ignored} == {
            k: v for k, v in single.items() if k not in ignored
        }, i
    assert (infos["a-0"]["args"], infos["a-0"]["next_run_at"]) == ([0, "edited"], at("09:01:00"))
    assert infos["a-1"]["next_run_at"] == at("09:01:30") + timedelta(seconds=45)
    assert infos["a-0"]["version"] == 2


def test_update_many_counts_only_what_changed(api: Schedules) -> None:
    names = _load(api, 3)
    same = {"args": list(api.get(names[0]).args)}
    assert api.update_many({names[0]: same, names[1]: {"args": ["new"]}}) == 1
    assert api.get(names[0]).version == 1
    assert api.update_many({}) == 0


def test_update_many_with_an_unknown_name_stores_nothing(api: Schedules) -> None:
    names = _load(api, 3)
    with pytest.raises(ScheduleNotFound, match="nope"):
        api.update_many({names[0]: {"args": ["new"]}, "nope": {"args": []}})
    assert api.get(names[0]).args == [names[0]]


def test_update_many_with_one_bad_value_names_field_and_schedule_and_stores_nothing(
    api: Schedules,
) -> None:
    names = _load(api, 3)
    with pytest.raises(ValidationError) as caught:
        api.update_many({names[0]: {"args": ["new"]}, names[2]: {"schedule": Cron("61 * * * *")}})
    assert caught.value.field == "cron"
    assert "'bulk-2'" in str(caught.value)
    assert api.get(names[0]).args == [names[0]]


@pytest.mark.parametrize(
    ("field", "value"), [("name", "renamed"), ("enabled", False), ("colour", "red")]
)
def test_update_many_refuses_a_field_it_does_not_edit(
    api: Schedules, field: str, value: Any
) -> None:
    names = _load(api, 2)
    with pytest.raises(ValidationError, match="not an editable field") as caught:
        api.update_many({names[0]: {"args": ["new"]}, names[1]: {field: value}})
    assert caught.value.field == field
    assert api.get(names[0]).args == [names[0]]


def test_update_many_from_two_writers_on_the_same_rows_loses_neither_edit(
    api: Schedules, open_store: Callable[[], Store]
) -> None:
    """Each writer stores whole definitions read in its transaction; the rows are locked when
    read, so the second writer reads what the first wrote instead of writing back stale
    fields (without the lock the ``args`` of one writer are lost on PostgreSQL and MariaDB)."""
    names = _load(api, 200)
    writers = [Schedules(open_store(), clock=api.clock) for _ in range(2)]
    edits: list[dict[str, dict[str, Any]]] = [
        {name: {"args": ["forward"]} for name in names},
        {name: {"kwargs": {"by": "backward"}} for name in reversed(names)},
    ]
    with ThreadPoolExecutor(2) as pool:
        done = [pool.submit(w.update_many, e) for w, e in zip(writers, edits, strict=True)]
        assert [future.result(timeout=60) for future in done] == [200, 200]
    stored = api.list()
    assert sorted(info.name for info in stored) == sorted(names)
    for info in stored:
        assert (info.args, info.kwargs, info.version) == (["forward"], {"by": "backward"}, 3)
    for writer in writers:
        writer.close()
