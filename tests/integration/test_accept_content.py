"""A schedule may only choose a ``serializer`` its workers accept (the app's ``accept_content``;
where no app is known, Celery's default, ``["json"]``): on every write of the API and in the
``beat_schedule`` sync. Anything else would be published and then refused by every worker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from celery import Celery

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.beat_schedule import definitions_from_app
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.errors import ConfigurationError, ValidationError
from celery_dbeat.store import Store

#: The API's own checks do not depend on the database: one private SQLite file is enough.
ON_SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

PICKLED = {"serializer": "pickle"}


def pickled(name: str = "p") -> Definition:
    return Definition.create(name=name, task="proj.tasks.p", schedule=Every(60), options=PICKLED)


@ON_SQLITE
def test_without_an_app_a_pickle_serializer_is_refused_on_every_write(api: Schedules) -> None:
    api.add("plain", "proj.tasks.plain", Every(60))
    writes: dict[str, Callable[[], object]] = {
        "add": lambda: api.add("p", "proj.tasks.p", Every(60), options=PICKLED),
        "create": lambda: api.create(pickled()),
        "add_many": lambda: api.add_many([pickled()]),
        "update": lambda: api.update("plain", options=PICKLED),
        "update_many": lambda: api.update_many({"plain": {"options": PICKLED}}),
        "replace": lambda: api.replace("plain", pickled("plain")),
    }
    for write, call in writes.items():
        with pytest.raises(ValidationError) as caught:
            call()
        assert caught.value.field == "options.serializer", write
        assert "Celery's default accept_content ['json']" in str(caught.value), write
        assert "Schedules.from_app(app)" in str(caught.value), write
    assert [(i.name, i.options) for i in api.list()] == [("plain", {})]


@ON_SQLITE
def test_a_batch_names_the_schedule_whose_serializer_is_refused(api: Schedules) -> None:
    api.add("plain", "proj.tasks.plain", Every(60))

    with pytest.raises(ValidationError, match=r"\(schedule 'p'\)$"):
        api.add_many([Definition.create(name="ok", task="t", schedule=Every(60)), pickled()])
    with pytest.raises(ValidationError, match=r"\(schedule 'plain'\)$"):
        api.update_many({"plain": {"options": PICKLED}})

    assert [i.name for i in api.list()] == ["plain"]


@ON_SQLITE
def test_the_api_of_an_app_that_accepts_pickle_stores_it(store: Store, database_url: str) -> None:
    with Schedules(store, accept_content=["json", "pickle"]) as api:
        assert api.add("p", "proj.tasks.p", Every(60), options=PICKLED).options == PICKLED
    app = Celery("proj", set_as_current=False)
    app.conf.update(dbeat_database_url=database_url, accept_content=["json", "pickle"])
    with Schedules.from_app(app) as api:
        assert api.update("p", options={"serializer": "pickle", "queue": "io"}).options["queue"]
        with pytest.raises(ValidationError, match="not in the app's accept_content"):
            api.update("p", options={"serializer": "yaml"})


@ON_SQLITE
def test_schedules_from_an_app_use_its_accept_content(database_url: str) -> None:
    app = Celery("proj", set_as_current=False)
    app.conf.update(dbeat_database_url=database_url, accept_content=["application/json"])

    with Schedules.from_app(app) as api:
        assert api.accept_content == ("application/json",)


def celery_app(accept_content: list[str] | None = None, **entry: Any) -> Celery:
    app = Celery("proj", set_as_current=False)
    if accept_content is not None:
        app.conf.accept_content = accept_content
    app.conf.beat_schedule = {
        "pickled": {"task": "proj.tasks.p", "schedule": 60, "options": PICKLED, **entry}
    }
    return app


def test_a_beat_schedule_entry_the_workers_would_refuse_stops_beat_naming_it() -> None:
    with pytest.raises(ConfigurationError) as raised:
        definitions_from_app(celery_app())

    assert raised.value.key == "beat_schedule['pickled']"
    assert "options.serializer='pickle': is not in the app's accept_content ['json']" in str(
        raised.value
    )


def test_a_beat_schedule_entry_the_workers_accept_is_synced() -> None:
    (definition,) = definitions_from_app(celery_app(["json", "pickle"]))

    assert definition.options == PICKLED
