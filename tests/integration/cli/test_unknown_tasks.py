"""A schedule whose task the app does not register is stored all the same, with one warning in
the same words on every surface (:mod:`celery_dbeat.task_names`): a task may be defined only in
the workers' code. The CLI's app registers every ``proj.tasks.*`` name (``ProjectTasks``), so
``proj.taks.report`` is a typo."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from celery.schedules import schedule
from redbeat import RedBeatSchedulerEntry

from celery_dbeat.task_names import unknown_task_warning
from tests.integration.cli.conftest import Cli, shown

TYPO = "proj.taks.report"
ONE = (
    "warning: task 'proj.taks.report' is not registered in the Celery app 'proj': beat sends it "
    "all the same, but only a worker that registers this name can run it; check the name, and "
    "that your workers import the module that defines it (defined only in the workers' code is "
    "fine)"
)


def test_add_stores_an_unknown_task_and_warns_on_stderr(cli: Cli) -> None:
    result = cli.run("add", "report", TYPO, "--every", "1m")

    assert result.exit_code == 0
    assert result.stdout.startswith("added 'report': every 1m; active")
    assert result.stderr.splitlines() == [ONE]
    assert shown(cli, "report")["task"] == TYPO


def test_the_cli_warns_once_its_api_logs_nothing_more(
    cli: Cli, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The CLI's API knows the app (``Schedules.from_app``), which logs the warning for code
    that calls it; each command says it itself, so the API is quiet under the CLI."""
    with caplog.at_level(logging.WARNING, logger="celery_dbeat"):
        added = cli.run("add", "report", TYPO, "--every", "1m")
        updated = cli.run("update", "report", "--task", TYPO)
        imported = cli.ok("import", str(_write(tmp_path / "in.json", TYPO)))

    assert [added.stderr, updated.stderr] == [ONE + "\n", ONE + "\n"]
    assert imported.count("is not registered") == 1
    assert [r.getMessage() for r in caplog.records if "not registered" in r.getMessage()] == []


def test_add_of_a_registered_task_says_nothing_more(cli: Cli) -> None:
    cli.ok("add", "report", "proj.tasks.report", "--every", "1m")


def test_update_warns_about_a_new_task_only(cli: Cli) -> None:
    cli.run("add", "report", TYPO, "--every", "1m")

    assert cli.ok("update", "report", "--args", "[1]").startswith("updated")
    result = cli.run("update", "report", "--task", "proj.taks.other")
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [ONE.replace("proj.taks.report", "proj.taks.other")]


@pytest.fixture
def task_module(tmp_path: Path) -> Iterator[str]:
    """A module ``dbeat_test_tasks`` defining the task ``elsewhere.tasks.defined``."""
    (tmp_path / "dbeat_test_tasks.py").write_text(
        "from celery import shared_task\n\n\n"
        "@shared_task(name='elsewhere.tasks.defined')\n"
        "def defined() -> None: ...\n"
    )
    sys.path.insert(0, str(tmp_path))
    yield "dbeat_test_tasks"
    sys.path.remove(str(tmp_path))
    sys.modules.pop("dbeat_test_tasks", None)


def test_the_app_s_task_modules_are_imported_before_its_names_are_checked(
    cli: Cli, task_module: str
) -> None:
    cli.app.conf.imports = [task_module]

    cli.ok("add", "defined", "elsewhere.tasks.defined", "--every", "1m")


def test_the_warning_gives_the_registered_name_a_typo_most_likely_meant(
    cli: Cli, task_module: str
) -> None:
    cli.app.conf.imports = [task_module]

    result = cli.run("add", "defined", "elsewhere.tasks.defnied", "--every", "1m")

    assert result.exit_code == 0
    assert result.stderr.startswith(
        "warning: task 'elsewhere.tasks.defnied' (did you mean elsewhere.tasks.defined?) is not "
        "registered in the Celery app 'proj': "
    )


def _write(path: Path, *tasks: str) -> Path:
    forms = [
        {"name": f"s{index}", "task": task, "kind": "interval", "every": 60}
        for index, task in enumerate(tasks)
    ]
    path.write_text(json.dumps({"version": 1, "schedules": forms}))
    return path


def test_import_lists_the_unknown_tasks_in_its_report(cli: Cli, tmp_path: Path) -> None:
    path = _write(tmp_path / "in.json", "proj.tasks.ok", TYPO, "other.tasks.x", TYPO)

    out = cli.ok("import", str(path))

    assert out.splitlines() == [
        f"imported 4 schedules from {path}: created 4, updated 0, unchanged 0",
        "warning: " + unknown_task_warning(["other.tasks.x", TYPO], "proj"),
    ]
    assert "tasks 'other.tasks.x', 'proj.taks.report' are not registered in the Celery app " in out
    report = json.loads(cli.ok("import", str(path), "--json", "--dry-run"))
    assert report["unknown_tasks"] == {"s1": TYPO, "s2": "other.tasks.x", "s3": TYPO}


def test_import_from_redbeat_lists_the_unknown_tasks_in_its_report(
    cli: Cli, redis_url: str, redis_prefix: str
) -> None:
    cli.app.conf.update(redbeat_redis_url=redis_url, redbeat_key_prefix=f"{redis_prefix}rb:")
    every = schedule(timedelta(minutes=5))
    for name, task in (("known", "proj.tasks.known"), ("typo", TYPO)):
        RedBeatSchedulerEntry(name, task, every, app=cli.app).save()

    report = json.loads(cli.ok("import", "--from", "redbeat", "--dry-run", "--json"))
    out = cli.ok("import", "--from", "redbeat")

    assert report["unknown_tasks"] == {"typo": TYPO}
    assert report["warnings"] == [ONE.removeprefix("warning: ")]
    assert ONE in out.splitlines()


def test_sync_warns_about_beat_schedule_s_unknown_tasks(cli: Cli) -> None:
    cli.app.conf.beat_schedule = {
        "fine": {"task": "proj.tasks.fine", "schedule": 60},
        "report": {"task": TYPO, "schedule": 60},
    }

    report = json.loads(cli.ok("sync", "--dry-run", "--json"))
    result = cli.run("sync")

    assert report["unknown_tasks"] == {"report": TYPO}
    assert result.exit_code == 0
    assert result.stdout.startswith("synced 2 beat_schedule entries: created 2")
    assert result.stderr.splitlines() == [ONE]
