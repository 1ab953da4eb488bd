"""``dbeat check --offline`` and ``celery_dbeat.testing.assert_beat_schedule_ready``: the app's
``beat_schedule`` checked as a starting beat would take it, for CI, touching no service. The app's
database URL points at a port nothing listens on: a check that connected would fail."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone

import pytest
from celery.schedules import crontab

from celery_dbeat import Cron, Once
from celery_dbeat.testing import assert_beat_schedule_ready
from tests.integration.cli.conftest import Cli, make_app

#: Where no database listens: the offline check must not try it.
NOWHERE = "postgresql+psycopg://nobody@127.0.0.1:1/nothing"
LATER = datetime(2099, 1, 1, tzinfo=timezone.utc)


def _cli(beat_schedule: Mapping[str, object], **conf: object) -> Cli:
    return Cli(make_app(NOWHERE, beat_schedule=beat_schedule, **conf))


GOOD = {
    "report": {"task": "proj.tasks.report", "schedule": crontab(minute="30", hour="7")},
    "poll": {"task": "proj.tasks.poll", "schedule": 60.0},
}


def test_a_ready_beat_schedule_passes_with_each_entrys_next_slots() -> None:
    out = _cli(GOOD).ok("check", "--offline", "--json")

    entries = {e["name"]: e for e in json.loads(out)}
    assert set(entries) == {"report", "poll"}
    assert all(e["ok"] and e["problems"] == [] for e in entries.values())
    assert entries["report"]["task"] == "proj.tasks.report"
    slots = _slots(entries["poll"])
    assert len(slots) == 3
    assert [b - a for a, b in itertools.pairwise(slots)] == [timedelta(seconds=60)] * 2
    assert all(s.minute == 30 and s.hour == 7 for s in _slots(entries["report"]))


def _slots(entry: dict[str, object]) -> list[datetime]:
    values = entry["next_slots"]
    assert isinstance(values, list)
    return [datetime.fromisoformat(str(s).replace("Z", "+00:00")) for s in values]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"task": "proj.taks.report", "schedule": 60.0}, "not registered"),
        (
            {
                "task": "proj.tasks.report",
                "schedule": Once(datetime(2001, 1, 1, tzinfo=timezone.utc)),
            },
            "no slot",
        ),
        (
            {
                "task": "proj.tasks.report",
                "schedule": 60.0,
                "end_at": datetime(2001, 1, 1, tzinfo=timezone.utc),
            },
            "no slot",
        ),
        ({"task": "proj.tasks.report", "schedule": "every day"}, "unsupported schedule type"),
        ({"task": "proj.tasks.report"}, "needs 'task' and 'schedule'"),
        ({"task": "proj.tasks.report", "schedule": 60.0, "colour": "red"}, "unknown key"),
        (
            {"task": "proj.tasks.report", "schedule": 60.0, "options": {"serializer": "pickle"}},
            "accept_content",
        ),
        ({"task": "proj.tasks.report", "schedule": Cron("61 * * * *")}, "minute"),
    ],
    ids=[
        "unknown-task",
        "once-past",
        "ended",
        "bad-spec",
        "no-spec",
        "bad-key",
        "serializer",
        "cron",
    ],
)
def test_each_problem_fails_the_check_naming_its_entry(
    entry: dict[str, object], problem: str
) -> None:
    cli = _cli({**GOOD, "broken": entry})

    result = cli.run("check", "--offline")

    assert result.exit_code == 1, result.output
    assert result.stderr.strip() == "Error: 1 of 3 beat_schedule entries have problems"
    lines = result.stdout.splitlines()
    broken = next(i for i, line in enumerate(lines) if line.startswith("error   broken"))
    assert problem in lines[broken + 1]
    assert sum(line.startswith("ok      ") for line in lines) == 2
    data = json.loads(cli.run("check", "--offline", "--json").stdout)
    assert [e["name"] for e in data if not e["ok"]] == ["broken"]
    with pytest.raises(AssertionError, match=f"broken: .*{problem}"):
        assert_beat_schedule_ready(cli.app)


def test_an_empty_beat_schedule_passes() -> None:
    assert _cli({}).ok("check", "--offline") == "beat_schedule is empty\n"


def test_without_offline_the_check_does_try_the_database() -> None:
    """The control for the tests above: the same app fails the online check on its database."""
    result = _cli(GOOD).run("check")

    assert result.exit_code != 0


def test_the_helper_takes_the_instant_a_beat_would_start_at() -> None:
    app = make_app(
        NOWHERE,
        beat_schedule={"new_year": {"task": "proj.tasks.report", "schedule": Once(LATER)}},
    )

    assert_beat_schedule_ready(app, now=LATER - timedelta(days=1))
    with pytest.raises(AssertionError, match="new_year: no slot after 2099-01-01"):
        assert_beat_schedule_ready(app, now=LATER)


def test_the_helper_passes_under_python_dash_o() -> None:
    """It raises rather than asserts: ``python -O`` strips asserts, not this failure."""
    code = (
        "from celery import Celery\n"
        "from celery_dbeat.testing import assert_beat_schedule_ready\n"
        "app = Celery('proj', set_as_current=False)\n"
        "app.conf.beat_schedule = {'typo': {'task': 'proj.taks.report', 'schedule': 60.0}}\n"
        "try:\n"
        "    assert_beat_schedule_ready(app)\n"
        "except AssertionError as exc:\n"
        "    print('refused:', exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-O", "-c", code], capture_output=True, text=True, check=True
    ).stdout

    assert out.startswith("refused: beat_schedule entries with problems:\ntypo: ")
