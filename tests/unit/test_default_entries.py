"""Celery's beat adds ``celery.backend_cleanup`` by itself when results must be deleted by a task
(``Scheduler.install_default_entries``); celery-dbeat's beat_schedule sync carries it the same
way, decided on the result backend's class (beat never connects to the result backend)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from celery import Celery
from celery.schedules import crontab

from celery_dbeat import Cron
from celery_dbeat.beat_schedule import CLEANUP_TASK, default_entries, definitions_from_app


def _app(backend: str | None, **conf: Any) -> Celery:
    app = Celery("defaults", broker="memory://", backend=backend, set_as_current=False)
    app.conf.update(conf)
    return app


@pytest.mark.parametrize(
    ("backend", "added"),
    [
        pytest.param("db+sqlite:///results.sqlite3", True, id="database"),
        pytest.param("mongodb://127.0.0.1:1/results", True, id="mongodb"),
        pytest.param("file:///nowhere/results", True, id="file-system-not-even-there"),
        pytest.param("redis://127.0.0.1:1/0", False, id="redis-expires-its-own"),
        pytest.param("rpc://", False, id="rpc-expires-its-own"),
        pytest.param(None, False, id="no-result-backend"),
    ],
)
def test_the_cleanup_is_added_when_the_result_backend_does_not_expire_results(
    backend: str | None, added: bool
) -> None:
    assert (CLEANUP_TASK in default_entries(_app(backend))) is added


def test_the_cleanup_is_celerys_daily_0400_entry_in_the_apps_zone() -> None:
    app = _app("db+sqlite:///results.sqlite3", timezone="Europe/Paris")
    (definition,) = definitions_from_app(app)
    assert definition.name == CLEANUP_TASK
    assert definition.task == CLEANUP_TASK
    assert definition.options == {"expires": 12 * 3600}
    assert definition.args == []
    assert definition.kwargs == {}
    expected = Cron("0 4 * * *", "Europe/Paris", days="all")
    assert definition.spec == expected.fields()


def test_no_cleanup_when_results_do_not_expire() -> None:
    assert default_entries(_app("db+sqlite:///results.sqlite3", result_expires=None)) == {}


def test_an_entry_of_that_name_in_beat_schedule_is_the_apps_own() -> None:
    mine = {"task": CLEANUP_TASK, "schedule": crontab(minute=30, hour=2)}
    app = _app("db+sqlite:///results.sqlite3", beat_schedule={CLEANUP_TASK: mine})
    assert default_entries(app) == {}
    (definition,) = definitions_from_app(app)
    assert definition.spec["cron"] == "30 2 * * *"
    assert definition.options == {}


def test_a_result_backend_that_cannot_be_loaded_adds_nothing_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Its own level: an in-process Celery worker earlier in this process (celery.contrib.pytest)
    # leaves the root logger at ERROR.
    caplog.set_level(logging.WARNING, logger="celery_dbeat")
    app = _app("nosuchbackend://x")
    assert default_entries(app) == {}
    assert f"{CLEANUP_TASK} not scheduled: the result backend cannot be loaded" in caplog.text
