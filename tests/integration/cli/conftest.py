"""CLI fixtures: a Celery app on a real database, and ``cli(...)`` to run ``celery dbeat ...``
in-process the way Celery does (the ``dbeat`` group with Celery's ``CLIContext`` as ``ctx.obj``).

``cli`` runs on ``sqlite_url``, a private SQLite file (most tests); ``cli_any`` on
``database_url``, which runs a test on SQLite, PostgreSQL and MariaDB (both tests/conftest.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from celery import Celery
from celery.app.registry import TaskRegistry
from celery.bin.base import CLIContext
from click.testing import CliRunner, Result

from celery_dbeat.api import Schedules
from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.cli import dbeat
from celery_dbeat.clock import FixedClock
from celery_dbeat.config import Settings
from celery_dbeat.core.specs import Every
from celery_dbeat.locks import DatabaseLock
from celery_dbeat.store import Store, migrate
from tests.services import install_schema

UTC = timezone.utc


class ProjectTasks(TaskRegistry):
    """The task registry of a project whose task modules define every ``proj.tasks.*`` name the
    tests schedule: those count as registered, any other name is unknown (``proj.taks.typo``)."""

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name) or str(name).startswith("proj.tasks.")


class ProjectApp(Celery):
    registry_cls = f"{__name__}:ProjectTasks"


def make_app(url: str, **conf: Any) -> Celery:
    app = ProjectApp("proj", set_as_current=False)
    app.conf.update(dbeat_database_url=url, **conf)
    return app


@dataclass
class Cli:
    """Runs ``celery -A app dbeat ARGS`` in-process; ``app`` may be changed between calls."""

    app: Celery

    def __call__(self, *args: str, input: str | None = None) -> Result:
        context = CLIContext(app=self.app, no_color=True, workdir=None)
        return CliRunner().invoke(dbeat, list(args), obj=context, input=input)

    def run(self, *args: str, input: str | None = None) -> Result:
        """Run; assert no traceback (a refusal exits non-zero, its report on stdout)."""
        result = self(*args, input=input)
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
        return result

    def ok(self, *args: str, input: str | None = None) -> str:
        """Run; assert success and nothing on stderr; return stdout."""
        result = self.run(*args, input=input)
        assert (result.exit_code, result.stderr) == (0, ""), result.output
        return result.stdout

    def fails(self, *args: str, code: int, fragment: str = "", input: str | None = None) -> str:
        """Run; assert exit ``code`` with exactly one ``Error: ...`` line on stderr holding
        ``fragment``, no traceback and nothing on stdout; return that line."""
        result = self(*args, input=input)
        assert isinstance(result.exception, SystemExit), result.exc_info
        assert result.exit_code == code, result.output
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("Error: "), lines[0]
        assert fragment in lines[0]
        assert result.stdout == ""
        return lines[0]


def migrated(url: str) -> str:
    store = Store(url)
    migrate(store.engine)
    store.close()
    return url


@pytest.fixture
def cli(sqlite_url: str) -> Cli:
    """The CLI on a migrated SQLite database."""
    install_schema(sqlite_url)
    return Cli(make_app(sqlite_url))


@pytest.fixture
def cli_any(database_url: str) -> Cli:
    """The CLI on a migrated database of each backend."""
    return Cli(make_app(migrated(database_url)))


def shown(cli: Cli, name: str) -> dict[str, Any]:
    """``dbeat show NAME --json``, read."""
    data: dict[str, Any] = json.loads(cli.ok("show", name, "--json"))
    return data


def instant(text: str | None) -> datetime | None:
    """An instant as the CLI's JSON writes it (ISO 8601, ``Z`` for UTC), or ``None``."""
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00"))


def utc_now() -> datetime:
    """The real time: the CLI reads the system clock, so due/upcoming are relative to it."""
    return datetime.now(UTC).replace(microsecond=0)


def heartbeat(url: str, name: str, seen: timedelta) -> None:
    """Write beat ``name``'s heartbeat as if it last ticked ``seen`` ago."""
    store = Store(url)
    now = utc_now()
    beat = {"name": name, "hostname": "host", "pid": 42, "version": "0.1", "started_at": now}
    store.heartbeat(beat, now - seen)
    store.close()


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)


def tick_fires(cli: Cli, created: datetime, now: datetime, misfire_policy: str) -> list[str]:
    """Add the minutely schedule ``tick`` at ``created`` and let one beat tick at ``now`` fire
    what is due; returns the task ids it published, oldest first."""
    url = cli.app.conf.dbeat_database_url
    with Schedules(url, clock=FixedClock(created)) as api:
        api.add("tick", "proj.tasks.tick", Every(60), misfire_policy=misfire_policy)
    store = Store(url)
    sent: list[str] = []
    ticker = Ticker(
        store,
        DatabaseLock(),
        lambda request, *_: sent.append(request.task_id),
        Settings.from_mapping({"instance_name": "beat-a"}),
        FixedClock(now),
    )
    ticker.tick()
    store.close()
    return sent
