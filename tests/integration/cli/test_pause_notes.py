"""``dbeat pause NAME --note TEXT``: the note is shown by list, show, status and their --json
until ``resume`` clears it; a bad note is refused in one line; the per-schedule
``--pause-after-failures`` and ``--history-limit`` options are set like the others."""

from __future__ import annotations

import json
import re

import sqlalchemy as sa

from celery_dbeat.core.definitions import failure_note
from celery_dbeat.store import create_engine
from celery_dbeat.store.models import S
from tests.integration.cli.conftest import Cli, shown


def test_a_paused_schedule_shows_its_note_everywhere_until_resumed(cli_any: Cli) -> None:
    cli = cli_any
    cli.ok("add", "report", "proj.tasks.report", "--cron", "0 * * * *")

    out = cli.ok("pause", "report", "--note", "alice: mail server down (INC-42)")

    assert out.startswith("paused 'report': ")
    assert "paused (alice: mail server down (INC-42))" in out
    assert listed_state(cli, "report") == ("paused", "alice: mail server down (INC-42)")
    data = shown(cli, "report")
    assert (data["state"], data["pause_note"], data["pause_source"]) == (
        "paused",
        "alice: mail server down (INC-42)",
        "person",
    )
    assert data["paused_at"] is not None
    assert "alice: mail server down (INC-42)" in cli.ok("show", "report")
    listed = json.loads(cli.ok("list", "--json"))
    assert listed[0]["pause_note"] == "alice: mail server down (INC-42)"
    status = json.loads(cli.ok("status", "--json"))
    assert status["paused_by"]["person"] == 1

    cli.ok("resume", "report")
    data = shown(cli, "report")
    assert (data["state"], data["pause_note"], data["paused_at"]) == ("active", None, None)


def listed_state(cli: Cli, name: str) -> tuple[str, str]:
    """The STATE and NOTE columns of ``name``'s row in ``dbeat list``."""
    header, *rows = cli.ok("list").splitlines()
    columns = re.split(r"\s{2,}", header)
    (row,) = (re.split(r"\s{2,}", line) for line in rows if line.startswith(f"{name} "))
    cells = dict(zip(columns, row, strict=True))
    return cells["STATE"], cells["NOTE"]


def test_the_state_column_holds_the_state_word_and_the_note_has_a_column_of_its_own(
    cli: Cli,
) -> None:
    cli.ok("add", "report", "proj.tasks.report", "--cron", "0 * * * *")
    cli.ok("pause", "report", "--note", failure_note(3, None))

    assert listed_state(cli, "report") == ("paused", "paused after 3 consecutive failed runs")
    assert "paused after 3 consecutive failed runs" in cli.ok("show", "report")


def test_a_bad_note_is_refused_in_one_line_and_the_schedule_is_not_paused(cli: Cli) -> None:
    cli.ok("add", "report", "proj.tasks.report", "--cron", "0 * * * *")

    error = cli.fails("pause", "report", "--note", "x" * 501, code=1, fragment="note")

    assert "longer than 500 characters" in error
    assert len(error.strip().splitlines()) == 1
    assert shown(cli, "report")["state"] == "active"


def test_pause_after_failures_and_history_limit_are_set_and_cleared_like_other_options(
    cli: Cli,
) -> None:
    cli.ok(
        "add",
        "report",
        "proj.tasks.report",
        "--cron",
        "0 * * * *",
        "--pause-after-failures",
        "3",
        "--history-limit",
        "50",
    )
    assert (
        shown(cli, "report")["pause_after_failures"],
        shown(cli, "report")["history_limit"],
    ) == (
        3,
        50,
    )
    cli.ok("update", "report", "--pause-after-failures", "", "--history-limit", "10")
    data = shown(cli, "report")
    assert (data["pause_after_failures"], data["history_limit"]) == (None, 10)
    error = cli.fails("update", "report", "--history-limit", "0", code=1, fragment="history_limit")
    assert "from 1 to 100000" in error


def test_an_active_schedules_failed_runs_in_a_row_are_shown_by_list_and_show(cli: Cli) -> None:
    cli.ok("add", "report", "proj.tasks.report", "--cron", "0 * * * *")
    engine = create_engine(cli.app.conf.dbeat_database_url)
    with engine.begin() as conn:  # as the worker hook counts them
        conn.execute(sa.update(S).values(consecutive_failures=2))
    engine.dispose()

    assert listed_state(cli, "report") == ("active", "2 failed runs in a row")
    assert shown(cli, "report")["consecutive_failures"] == 2
