"""Beat logs the one warning about ``beat_schedule`` entries whose task the app does not
register, and syncs them all the same; so does the Python API of an app
(``Schedules.from_app``) for each write that sets such a task. :mod:`celery_dbeat.task_names`
imports the app's task modules first and gives up quietly (with a log line) when it cannot know
the names."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import celery
import pytest

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.beat.scheduler import Scheduler
from celery_dbeat.core.definitions import Definition
from celery_dbeat.store import Store
from celery_dbeat.task_names import registered_tasks, unknown_task_warning, unknown_tasks


def test_beat_logs_the_unknown_tasks_of_beat_schedule_and_syncs_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = f"sqlite:///{tmp_path / 'schedules.sqlite3'}"
    app = celery.Celery("beatproj", set_as_current=False)

    @app.task(name="beatproj.tasks.known", shared=False)
    def known() -> None: ...

    app.conf.update(
        broker_url="memory://",
        dbeat_database_url=database,
        beat_schedule={
            "known": {"task": "beatproj.tasks.known", "schedule": 60.0},
            "typo": {"task": "beatproj.taks.typo", "schedule": 60.0},
        },
    )

    with caplog.at_level(logging.WARNING, logger="celery_dbeat"):
        Scheduler(app).close()

    assert [r.getMessage() for r in caplog.records if "not registered" in r.message] == [
        "dbeat: beat_schedule: task 'beatproj.taks.typo' (did you mean beatproj.tasks.known?) "
        "is not registered in the Celery app 'beatproj': beat sends it all the same, but only a "
        "worker that registers this name can run it; check the name, and that your workers "
        "import the module that defines it (defined only in the workers' code is fine)"
    ]
    with Schedules(database) as api:
        assert sorted(info.name for info in api.list()) == ["known", "typo"]


def test_the_words_name_each_task_once_and_say_it_is_only_a_warning() -> None:
    assert unknown_task_warning(["b.t", "a.t", "b.t"], "proj") == (
        "tasks 'a.t', 'b.t' are not registered in the Celery app 'proj': beat sends them all the "
        "same, but only a worker that registers a name can run its task; check the names, and "
        "that your workers import the modules that define them (defined only in the workers' "
        "code is fine)"
    )
    assert unknown_task_warning(["a.t"]).startswith(
        "task 'a.t' is not registered in this Celery app: beat sends it all the same"
    )


def test_each_unknown_task_is_given_the_registered_name_it_most_likely_meant() -> None:
    known = ["celery.ping", "proj.tasks.report", "proj.tasks.cleanup"]

    assert unknown_task_warning(["proj.tasks.reprot"], "proj", known).startswith(
        "task 'proj.tasks.reprot' (did you mean proj.tasks.report?) is not registered in the "
        "Celery app 'proj': "
    )
    assert unknown_task_warning(["proj.tasks.cleanpu", "other.x"], "proj", known).startswith(
        "tasks 'other.x', 'proj.tasks.cleanpu' (did you mean proj.tasks.cleanup?) are not "
        "registered"
    )


@pytest.fixture
def broken_module(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "dbeat_broken_tasks.py").write_text("raise RuntimeError('cannot import me')\n")
    sys.path.insert(0, str(tmp_path))
    yield "dbeat_broken_tasks"
    sys.path.remove(str(tmp_path))
    sys.modules.pop("dbeat_broken_tasks", None)


def test_a_task_module_that_fails_to_import_leaves_the_names_unchecked_with_a_log_line(
    broken_module: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = celery.Celery("brokenproj", set_as_current=False)
    app.conf.imports = [broken_module]
    definition = Definition.create(name="s", task="brokenproj.tasks.s", schedule=Every(60))

    with caplog.at_level(logging.WARNING, logger="celery_dbeat"):
        assert unknown_tasks(app, [definition]) == {}
        assert unknown_tasks(app, [definition]) == {}  # not tried again

    tried = "could not import the task modules of the Celery app 'brokenproj'"
    assert [r.getMessage() for r in caplog.records].count(
        f"{tried}; task names are not checked"
    ) == 1


def test_an_app_not_finalized_leaves_the_names_unchecked() -> None:
    app = celery.Celery("lazyproj", set_as_current=False, autofinalize=False)

    assert registered_tasks(app) is None


# The Python API --------------------------------------------------------------------------------

ON_SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
KNOWN, TYPO = "apiproj.tasks.known", "apiproj.taks.typo"


def api_project(database_url: str) -> celery.Celery:
    app = celery.Celery("apiproj", set_as_current=False)

    @app.task(name=KNOWN, shared=False)
    def known() -> None: ...

    app.conf.update(dbeat_database_url=database_url)
    return app


def define(name: str, task: str) -> Definition:
    return Definition.create(name=name, task=task, schedule=Every(60))


def unknown_task_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "not registered" in r.getMessage()]


@ON_SQLITE
def test_each_api_write_that_sets_an_unknown_task_stores_it_and_logs_the_one_warning(
    store: Store, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    writes: dict[str, Callable[[Schedules], object]] = {
        "add": lambda api: api.add("added", TYPO, Every(60)),
        "create": lambda api: api.create(define("created", TYPO)),
        "add_many": lambda api: api.add_many([define("many", KNOWN), define("many-typo", TYPO)]),
        "update": lambda api: api.update("edited", task=TYPO),
        "update_many": lambda api: api.update_many({"batch": {"task": TYPO}}),
        "replace": lambda api: api.replace("replaced", define("replaced", TYPO)),
    }
    with Schedules.from_app(api_project(database_url)) as api:
        for name in ("edited", "batch", "replaced"):
            api.add(name, KNOWN, Every(60))
        for write, call in writes.items():
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="celery_dbeat"):
                call(api)
            assert unknown_task_logs(caplog) == [
                "dbeat: " + unknown_task_warning([TYPO], "apiproj", [KNOWN])
            ], write
            assert [r.name for r in caplog.records] == ["celery_dbeat.api"], write

        tasks = {info.name: info.task for info in api.list()}
    assert tasks == {
        "added": TYPO,
        "batch": TYPO,
        "created": TYPO,
        "edited": TYPO,
        "many": KNOWN,
        "many-typo": TYPO,
        "replaced": TYPO,
    }


@ON_SQLITE
def test_the_api_says_nothing_of_a_registered_task_an_untouched_one_or_without_the_app(
    store: Store, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="celery_dbeat"):
        with Schedules(database_url) as api:  # no app: its task names are unknown
            api.add("typo", TYPO, Every(60))
        with Schedules.from_app(api_project(database_url)) as api:
            api.add("known", KNOWN, Every(60))
            api.update("typo", args=[1])  # the task is not what changes
            api.update_many({"typo": {"kwargs": {"a": 1}}})
            api.pause("typo")
            with api.quiet_about_unknown_tasks():  # the caller tells its user itself
                api.add("told", TYPO, Every(60))

    assert unknown_task_logs(caplog) == []
